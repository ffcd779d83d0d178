package apiserver

import (
	"slices"
	"testing"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/restmapper"

	clusterv1alpha1 "github.com/panorama-io/panorama/apis/cluster/v1alpha1"
)

// TestDiscoveryRanksKubernetesGroupsFirst: a member's CRD that serves
// `deployments` in a group sorting before apps does not capture
// `kubectl get deployments` of the view, nor one named as a short name
// `kubectl get deploy` or `po`, nor one member's CRD the fleet's, over
// either discovery (kubectl reads the aggregated one, older clients the
// legacy one). Clients take
// the first group discovery lists that serves a name; kube-apiserver's
// own discovery ranks its groups above any CRD's, and the view must too.
func TestDiscoveryRanksKubernetesGroupsFirst(t *testing.T) {
	_, cfg, reg := testServer(t)
	add := func(cl *clusterv1alpha1.Cluster, gvr schema.GroupVersionResource, kind string) {
		cl.Status.SyncResources = append(cl.Status.SyncResources, clusterServing("", gvr, kind).Status.SyncResources...)
	}
	east := clusterServing("east", podsGVR, "Pod")
	add(east, schema.GroupVersionResource{Group: "apps", Version: "v1", Resource: "deployments"}, "Deployment")
	reg.Set(east)
	west := clusterServing("west", schema.GroupVersionResource{Group: "aaa.example.com", Version: "v1", Resource: "deployments"}, "Deployment")
	add(west, schema.GroupVersionResource{Group: "events.k8s.io", Version: "v1", Resource: "events"}, "Event")
	add(west, schema.GroupVersionResource{Group: "zzz.example.com", Version: "v1", Resource: "events"}, "Event")
	// Named as short names of Kubernetes' resources, which kubectl then
	// no longer expands.
	add(west, schema.GroupVersionResource{Group: "zzz.example.com", Version: "v1", Resource: "hogs"}, "Deploy")
	add(west, schema.GroupVersionResource{Group: "zzz.example.com", Version: "v1", Resource: "po"}, "Po")
	reg.Set(west)
	// A group more clusters serve comes first: east's httproutes do not
	// take the name from north's and west's Gateway API, though east is
	// the oldest.
	gateway := schema.GroupVersionResource{Group: "gateway.networking.k8s.io", Version: "v1", Resource: "httproutes"}
	add(west, gateway, "HTTPRoute")
	reg.Set(west)
	reg.Set(clusterServing("north", gateway, "HTTPRoute"))
	add(east, schema.GroupVersionResource{Group: "bbb.example.com", Version: "v1", Resource: "httproutes"}, "HTTPRoute")
	reg.Set(east)

	for _, aggregated := range []bool{true, false} {
		client := discovery.NewDiscoveryClientForConfigOrDie(cfg)
		client.UseLegacyDiscovery = !aggregated
		groups, err := restmapper.GetAPIGroupResources(client)
		if err != nil {
			t.Fatal(err)
		}
		var names []string
		for _, g := range groups {
			names = append(names, g.Group.Name)
		}
		// apiextensions.k8s.io is the view's CRDs, authorization.k8s.io its
		// self reviews.
		if want := []string{"", "apiextensions.k8s.io", "apps", "events.k8s.io", "authorization.k8s.io",
			"gateway.networking.k8s.io", "bbb.example.com", "aaa.example.com", "zzz.example.com"}; !slices.Equal(names, want) {
			t.Errorf("aggregated %v: groups %q, want %q", aggregated, names, want)
		}
		mapper := restmapper.NewShortcutExpander(restmapper.NewDiscoveryRESTMapper(groups), client, nil)
		for resource, want := range map[string]string{"deployments": "apps", "deployment": "apps", "deploy": "apps", "events": "events.k8s.io", "po": "", "httproutes": "gateway.networking.k8s.io"} {
			gvr, err := mapper.ResourceFor(schema.GroupVersionResource{Resource: resource})
			if err != nil || gvr.Group != want {
				t.Errorf("aggregated %v: %q resolves to %v (%v), want group %q", aggregated, resource, gvr, err, want)
			}
		}
	}
}
