package controllers_test

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	clusterv1alpha1 "github.com/panorama-io/panorama/apis/cluster/v1alpha1"
	"github.com/panorama-io/panorama/storage"
	"github.com/panorama-io/panorama/storage/storagetest"
	"github.com/panorama-io/panorama/test/testenv"
)

// TestCRDsOfSelectedCustomResources: a Cluster naming one custom resource
// in syncResources stores its member's CRDs too (the API server serves
// them and takes their printer columns); one syncing only built-in
// resources stores none.
func TestCRDsOfSelectedCustomResources(t *testing.T) {
	host := testenv.Start(t)
	east, west := startMember(t), startMember(t)
	store := storagetest.Backends()[0].Open(t)
	hc := hostClient(t, host)
	createCRD(t, east, "example.com", "v1", "widgets", "Widget")
	createCRD(t, east, "example.com", "v1", "gadgets", "Gadget")
	createCRD(t, west, "example.com", "v1", "widgets", "Widget")
	startManager(t, host, store)
	for name, m := range map[string]*member{"east": east, "west": west} {
		mustCreate(t, hc, &corev1.Secret{
			ObjectMeta: metav1.ObjectMeta{Namespace: controllerNamespace, Name: name, Annotations: map[string]string{clusterv1alpha1.AnnotationCredentialClusters: name}},
			Data:       map[string][]byte{"kubeconfig": kubeconfigVia(t, m)},
		})
	}
	selections := map[string][]clusterv1alpha1.GroupResources{
		"east": {{Group: "", Resources: []string{"pods"}}, {Group: "example.com", Resources: []string{"widgets"}}},
		"west": {{Group: "", Resources: []string{"pods"}}, {Group: "apps", Resources: []string{"deployments"}}},
	}
	for name, sel := range selections {
		mustCreate(t, hc, &clusterv1alpha1.Cluster{
			ObjectMeta: metav1.ObjectMeta{Name: name},
			Spec: clusterv1alpha1.ClusterSpec{
				KubeconfigSecretRef: &clusterv1alpha1.SecretKeyRef{Namespace: controllerNamespace, Name: name},
				SyncResources:       sel,
			},
		})
	}
	synced := func(name string, want ...string) {
		t.Helper()
		waitCluster(t, hc, name, func(c *clusterv1alpha1.Cluster) error {
			var got []string
			for _, s := range c.Status.SyncResources {
				if s.State == clusterv1alpha1.SyncStateSynced {
					got = append(got, schema.GroupResource{Group: s.Group, Resource: s.Resource}.String())
				}
			}
			slices.Sort(got)
			if !slices.Equal(got, want) {
				return fmt.Errorf("%s syncs %v, want %v", name, got, want)
			}
			return nil
		})
	}
	synced("east", "customresourcedefinitions.apiextensions.k8s.io", "pods", "widgets.example.com")
	synced("west", "deployments.apps", "pods")
	for _, crd := range []string{"widgets.example.com", "gadgets.example.com"} {
		o, err := store.Get(context.Background(), storage.Key{Cluster: "east", GVR: storage.CRDResource, Name: crd})
		if err != nil {
			t.Fatalf("east's CRD %s: %v", crd, err)
		}
		var stored struct {
			Spec struct {
				Names struct{ Plural string }
			}
		}
		plural, _, _ := strings.Cut(crd, ".")
		if err := json.Unmarshal(o.Data, &stored); err != nil || stored.Spec.Names.Plural != plural {
			t.Fatalf("CRD %s stored without its spec: %v %s", crd, err, o.Data)
		}
	}
	page, err := store.List(context.Background(), &storage.ListQuery{GVR: storage.CRDResource, Clusters: []string{"west"}})
	if err != nil || len(page.Objects) != 0 {
		t.Fatalf("west's CRDs stored: %v %d", err, len(page.Objects))
	}

	// The members' OpenAPI documents of the group versions each syncs
	// (openapi.go), which the API server serves for kubectl explain.
	for cluster, want := range map[string][]string{
		"east": {"api/v1", "apis/apiextensions.k8s.io/v1", "apis/example.com/v1"},
		"west": {"api/v1", "apis/apps/v1"},
	} {
		eventually(t, func() error {
			o, err := store.Get(context.Background(), storage.Key{Cluster: cluster, GVR: storage.OpenAPIResource, Name: storage.OpenAPIIndexName})
			if err != nil {
				return err
			}
			var index storage.OpenAPIIndex
			if err := storage.DecodeOpenAPI(o.Data, &index); err != nil {
				return err
			}
			if got := slices.Sorted(maps.Keys(index.GroupVersions)); !slices.Equal(got, want) {
				return fmt.Errorf("%s's OpenAPI documents %v, want %v", cluster, got, want)
			}
			return nil
		})
	}
	o, err := store.Get(context.Background(), storage.Key{Cluster: "east", GVR: storage.OpenAPIResource, Name: "apis/example.com/v1"})
	if err != nil {
		t.Fatal(err)
	}
	var doc storage.OpenAPIDocument
	if err := storage.DecodeOpenAPI(o.Data, &doc); err != nil || !strings.Contains(doc.Document, `"com.example.v1.Widget"`) {
		t.Fatalf("east's OpenAPI of example.com/v1: %v", err)
	}
}
