package controllers_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	clusterv1alpha1 "github.com/panorama-io/panorama/apis/cluster/v1alpha1"
	"github.com/panorama-io/panorama/storage"
	"github.com/panorama-io/panorama/storage/storagetest"
	"github.com/panorama-io/panorama/test/testenv"
)

// TestSecretSync checks that member Secrets are synced only when named, and
// then without their contents unless the Cluster keeps them.
func TestSecretSync(t *testing.T) {
	host := testenv.Start(t)
	m := startMember(t)
	store := storagetest.Backends()[0].Open(t)
	hc := hostClient(t, host)
	ctx := context.Background()
	secretsGVR := schema.GroupVersionResource{Version: "v1", Resource: "secrets"}
	const password = "hunter2-the-password"
	if _, err := m.kube.CoreV1().Secrets("default").Create(ctx, &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: "db", Annotations: map[string]string{
			storage.LastAppliedAnnotation: `{"stringData":{"password":"` + password + `"}}`,
		}},
		StringData: map[string]string{"password": password},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	mustCreate(t, hc, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: controllerNamespace}})
	mustCreate(t, hc, &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: controllerNamespace, Name: "member", Annotations: map[string]string{clusterv1alpha1.AnnotationCredentialClusters: "wildcard,named,keep"}},
		Data:       map[string][]byte{"kubeconfig": kubeconfigVia(t, m)},
	})
	for name, spec := range map[string]clusterv1alpha1.ClusterSpec{
		"wildcard": {SyncResources: []clusterv1alpha1.GroupResources{{Group: "", Resources: []string{"*"}}}},
		"named":    {SyncResources: []clusterv1alpha1.GroupResources{{Group: "", Resources: []string{"secrets"}}}},
		"keep": {
			SyncResources: []clusterv1alpha1.GroupResources{{Group: "", Resources: []string{"secrets"}}},
			SecretData:    clusterv1alpha1.SecretDataKeep,
		},
	} {
		spec.KubeconfigSecretRef = &clusterv1alpha1.SecretKeyRef{Namespace: controllerNamespace, Name: "member"}
		mustCreate(t, hc, &clusterv1alpha1.Cluster{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: spec})
	}
	startManager(t, host, store)

	synced := func(c *clusterv1alpha1.Cluster) error {
		if !meta.IsStatusConditionTrue(c.Status.Conditions, clusterv1alpha1.ConditionSynced) {
			return fmt.Errorf("conditions %+v", c.Status.Conditions)
		}
		return nil
	}
	c := waitCluster(t, hc, "wildcard", synced)
	if slices.ContainsFunc(c.Status.SyncResources, func(r clusterv1alpha1.ResourceSyncStatus) bool { return r.Resource == "secrets" }) ||
		!slices.ContainsFunc(c.Status.SyncResources, func(r clusterv1alpha1.ResourceSyncStatus) bool { return r.Resource == "configmaps" }) {
		t.Fatalf("a core wildcard syncs %+v, want configmaps but not secrets", c.Status.SyncResources)
	}
	if v, err := store.MemberVersions(ctx, "wildcard", secretsGVR); err != nil || len(v) != 0 {
		t.Fatalf("wildcard stored %d secrets (%v)", len(v), err)
	}

	stored := func(cluster string) string {
		waitCluster(t, hc, cluster, synced)
		o, err := store.Get(ctx, storage.Key{Cluster: cluster, GVR: secretsGVR, Namespace: "default", Name: "db"})
		if err != nil {
			t.Fatal(err)
		}
		return string(o.Data)
	}
	if data := stored("named"); strings.Contains(data, `"data"`) || strings.Contains(data, password) || !strings.Contains(data, `"name":"db"`) {
		t.Fatalf("named secret stored with its contents: %s", data)
	}
	if data := stored("keep"); !strings.Contains(data, `"data":{"password":"aHVudGVyMi10aGUtcGFzc3dvcmQ="}`) {
		t.Fatalf("kept secret stored without its data: %s", data)
	}
}
