package apiserver

import (
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	clusterv1alpha1 "github.com/panorama-io/panorama/apis/cluster/v1alpha1"
	"github.com/panorama-io/panorama/storage"
)

// clusterClaiming is a Cluster created at created that serves widgets as
// kind, namespaced or not.
func clusterClaiming(name string, created time.Time, kind string, namespaced bool) *clusterv1alpha1.Cluster {
	cl := clusterServing(name, widgetsGVR, kind)
	cl.CreationTimestamp = metav1.NewTime(created)
	cl.Status.SyncResources[0].Namespaced = namespaced
	return cl
}

// TestMergedResourceClaims: across clusters a resource has the kind and
// scope most of the clusters serving it claim, the oldest Cluster's in a
// tie, whatever the order of the registry's map and the clusters' names;
// a cluster's own view keeps its own claim.
func TestMergedResourceClaims(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	widget := storage.Resource{GVR: widgetsGVR, Kind: "Widget", Namespaced: true}
	gadget := storage.Resource{GVR: widgetsGVR, Kind: "Gadget"}
	check := func(r *Registry, cluster string, want storage.Resource) {
		t.Helper()
		// Maps iterate in a new order each time: a merge that followed
		// one would not give one answer every time.
		for range 50 {
			got, ok := r.Lookup(cluster, widgetsGVR)
			var listed storage.Resource
			for _, res := range r.Resources(cluster) {
				if res.GVR == widgetsGVR {
					listed = res
				}
			}
			if !ok || got != want || listed != want {
				t.Fatalf("view %q: Lookup %+v, Resources %+v, want %+v", cluster, got, listed, want)
			}
		}
	}

	// aaa, first by name and by age, alone against two.
	r := NewRegistry()
	r.Set(clusterClaiming("aaa", t0, "Gadget", false))
	r.Set(clusterClaiming("east", t0.Add(time.Hour), "Widget", true))
	r.Set(clusterClaiming("west", t0.Add(time.Hour), "Widget", true))
	check(r, "", widget)
	check(r, "aaa", gadget)
	check(r, "east", widget)

	// A tie goes to the oldest, not to the first name.
	r = NewRegistry()
	r.Set(clusterClaiming("aaa", t0.Add(time.Hour), "Gadget", false))
	r.Set(clusterClaiming("east", t0, "Widget", true))
	check(r, "", widget)
}
