package apiserver

import (
	"context"
	"slices"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/dynamic"

	"github.com/panorama-io/panorama/storage"
)

var widgetsGVR = schema.GroupVersionResource{Group: "example.com", Version: "v1", Resource: "widgets"}

func putCRD(t *testing.T, s storage.Interface, cluster, plural, version string) {
	t.Helper()
	u := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
		"metadata": map[string]any{"name": plural + ".example.com", "resourceVersion": version, "uid": cluster + plural},
		"spec": map[string]any{"group": "example.com", "scope": "Namespaced",
			"names":    map[string]any{"plural": plural, "kind": "Thing", "listKind": "ThingList", "singular": plural},
			"versions": []any{map[string]any{"name": "v1", "served": true, "storage": true}}},
	}}
	if _, err := s.ForCluster(cluster, storage.Unfenced).Apply(context.Background(), storage.CRDResource, []storage.Change{storage.Upsert(u)}); err != nil {
		t.Fatal(err)
	}
}

func crdNamesOf(t *testing.T, c dynamic.Interface) []string {
	t.Helper()
	list, err := c.Resource(storage.CRDResource).List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, i := range list.Items {
		out = append(out, i.GetAnnotations()[storage.ClusterAnnotation]+"/"+i.GetName())
	}
	return out
}

// TestCRDs serves the CRDs of what each cluster syncs, read-only, under
// every view: east syncs widgets and stores the CRDs of widgets and
// gadgets; west syncs pods only and stores the widgets CRD too.
func TestCRDs(t *testing.T) {
	store, cfg, registry := testServer(t)
	registry.Set(clusterServing("east", widgetsGVR, "Widget"))
	putCRD(t, store, "east", "widgets", "1")
	putCRD(t, store, "east", "gadgets", "1")
	putCRD(t, store, "west", "widgets", "1")

	east := dynamic.NewForConfigOrDie(as(cfg, "admin", "east"))
	if got := crdNamesOf(t, east); !slices.Equal(got, []string{"east/widgets.example.com"}) {
		t.Fatalf("east lists %v, want only the CRD of what it syncs", got)
	}
	crd, err := east.Resource(storage.CRDResource).Get(context.Background(), "widgets.example.com", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if plural, _, _ := unstructured.NestedString(crd.Object, "spec", "names", "plural"); plural != "widgets" {
		t.Fatalf("the CRD lacks its spec: %v", crd.Object)
	}
	for _, c := range []struct {
		view, name string
	}{{"east", "gadgets.example.com"}, {"west", "widgets.example.com"}, {"", "gadgets.example.com"}} {
		_, err := dynamic.NewForConfigOrDie(as(cfg, "admin", c.view)).Resource(storage.CRDResource).Get(context.Background(), c.name, metav1.GetOptions{})
		if !apierrors.IsNotFound(err) {
			t.Errorf("view %q, CRD %s it does not sync: %v, want NotFound", c.view, c.name, err)
		}
	}
	west := dynamic.NewForConfigOrDie(as(cfg, "admin", "west"))
	if got := crdNamesOf(t, west); len(got) != 0 {
		t.Errorf("west syncs no custom resource but lists %v", got)
	}
	if got := crdNamesOf(t, dynamic.NewForConfigOrDie(cfg)); !slices.Equal(got, []string{"east/widgets.example.com"}) {
		t.Errorf("all clusters list %v", got)
	}
	// west serves the group all the same, so `kubectl get crd` answers.
	resources, err := discovery.NewDiscoveryClientForConfigOrDie(as(cfg, "admin", "west")).ServerResourcesForGroupVersion("apiextensions.k8s.io/v1")
	if err != nil || len(resources.APIResources) != 1 || resources.APIResources[0].Name != "customresourcedefinitions" || resources.APIResources[0].Namespaced {
		t.Fatalf("west discovery of apiextensions.k8s.io/v1: %v %+v", err, resources)
	}

	// A watch sees changes of the CRDs east syncs, not of the others.
	w, err := east.Resource(storage.CRDResource).Watch(context.Background(), metav1.ListOptions{ResourceVersion: "0"})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	next := func() watch.Event {
		t.Helper()
		select {
		case e := <-w.ResultChan():
			return e
		case <-time.After(10 * time.Second):
			t.Fatal("no watch event")
		}
		return watch.Event{}
	}
	if e := next(); e.Type != watch.Added || e.Object.(*unstructured.Unstructured).GetName() != "widgets.example.com" {
		t.Fatalf("first event %v %v", e.Type, e.Object)
	}
	putCRD(t, store, "east", "gadgets", "2")
	putCRD(t, store, "east", "widgets", "2")
	if e := next(); e.Type != watch.Modified || e.Object.(*unstructured.Unstructured).GetName() != "widgets.example.com" {
		t.Fatalf("next event %v %v, want widgets modified and nothing of gadgets", e.Type, e.Object)
	}

	// Read as any member resource: who may read pods in east may not read
	// its CRDs.
	_, err = dynamic.NewForConfigOrDie(as(cfg, "east", "east")).Resource(storage.CRDResource).List(context.Background(), metav1.ListOptions{})
	if !apierrors.IsForbidden(err) {
		t.Errorf("user east lists CRDs: %v, want Forbidden", err)
	}
}
