package controllers_test

import (
	"context"
	"errors"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	clusterv1alpha1 "github.com/panorama-io/panorama/apis/cluster/v1alpha1"
	"github.com/panorama-io/panorama/storage"
	"github.com/panorama-io/panorama/storage/storagetest"
	"github.com/panorama-io/panorama/test/testenv"
)

var configMapsGVR = schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}

// TestOrphansSweptAtStart: what changed while no controller ran leaves
// rows no Cluster selects (a Cluster deleted without its finalizer having
// run, a resource deselected): once the controller starts they are removed,
// while what is stored of Clusters whose resources cannot be known now
// (paused, member unreachable) stays.
func TestOrphansSweptAtStart(t *testing.T) {
	host := testenv.Start(t)
	east := startMember(t)
	store := storagetest.Backends()[2].Open(t)
	hc := hostClient(t, host)
	ctx := context.Background()
	createNamespace(t, east, "web")
	createPod(t, east, "web", "web-0", nil)

	// Left by an earlier run of the controller.
	stored := map[storage.Key]bool{ // -> still stored at the end
		{Cluster: "gone", GVR: podsGVR}:              false, // its Cluster was deleted
		{Cluster: "east", GVR: configMapsGVR}:        false, // deselected
		{Cluster: "paused", GVR: configMapsGVR}:      true,
		{Cluster: "unreachable", GVR: configMapsGVR}: true,
	}
	for k := range stored {
		u := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "Thing",
			"metadata": map[string]any{"namespace": "web", "name": "left-over", "resourceVersion": "1"}}}
		if _, err := store.ForCluster(k.Cluster, storage.Unfenced).Apply(ctx, k.GVR, []storage.Change{storage.Upsert(u)}); err != nil {
			t.Fatal(err)
		}
	}

	mustCreate(t, hc, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: controllerNamespace}})
	mustCreate(t, hc, &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: controllerNamespace, Name: "east", Annotations: map[string]string{clusterv1alpha1.AnnotationCredentialClusters: "east"}},
		Data:       map[string][]byte{"kubeconfig": kubeconfigVia(t, east)},
	})
	pods := []clusterv1alpha1.GroupResources{{Group: "", Resources: []string{"pods"}}}
	for name, spec := range map[string]clusterv1alpha1.ClusterSpec{
		"east":        {KubeconfigSecretRef: &clusterv1alpha1.SecretKeyRef{Namespace: controllerNamespace, Name: "east"}, SyncResources: pods},
		"paused":      {APIServer: "https://" + east.proxy.Addr, Paused: true, SyncResources: pods},
		"unreachable": {APIServer: "https://127.0.0.1:1", SyncResources: pods},
	} {
		mustCreate(t, hc, &clusterv1alpha1.Cluster{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: spec})
	}
	startManager(t, host, store)

	waitConverged(t, store, "east", east, podsGVR)
	get := func(k storage.Key) error {
		k.Namespace, k.Name = "web", "left-over"
		_, err := store.Get(ctx, k)
		return err
	}
	for k, kept := range stored {
		if !kept {
			eventually(t, func() error {
				if err := get(k); !errors.Is(err, storage.ErrNotFound) {
					return errors.New(k.Cluster + " " + k.GVR.Resource + " still stored")
				}
				return nil
			})
		}
	}
	for k, kept := range stored {
		if err := get(k); kept && err != nil {
			t.Errorf("%s %s: %v, want kept", k.Cluster, k.GVR.Resource, err)
		}
	}
}
