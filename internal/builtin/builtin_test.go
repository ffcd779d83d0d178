package builtin_test

import (
	"slices"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery"

	"github.com/panorama-io/panorama/internal/builtin"
	"github.com/panorama-io/panorama/test/testenv"
)

// TestKubeAPIServersOwnAreBuiltin: every resource a real kube-apiserver
// lists of its own groups is Kubernetes' own, by Group and Resource, so
// that refusing a member's claims to the contrary drops nothing real.
func TestKubeAPIServersOwnAreBuiltin(t *testing.T) {
	env := testenv.Start(t, testenv.WithoutCRDs())
	_, lists, err := discovery.NewDiscoveryClientForConfigOrDie(env.Config).ServerGroupsAndResources()
	if err != nil {
		t.Fatal(err)
	}
	checked := 0
	for _, l := range lists {
		gv, err := schema.ParseGroupVersion(l.GroupVersion)
		if err != nil {
			t.Fatal(err)
		}
		if gv.Group == "apiregistration.k8s.io" {
			continue // the aggregator's: Panorama does not sync it
		}
		if !builtin.Group(gv.Group) {
			t.Errorf("group %q of kube-apiserver is not Kubernetes' own", gv.Group)
			continue
		}
		for _, r := range l.APIResources {
			if strings.Contains(r.Name, "/") || !slices.Contains(r.Verbs, "list") {
				continue // what Panorama syncs
			}
			if !builtin.Resource(gv.WithKind(r.Kind), r.Name) {
				t.Errorf("%s %s (%s) of kube-apiserver is not Kubernetes' own", gv, r.Name, r.Kind)
			}
			checked++
		}
	}
	if checked < 40 {
		t.Errorf("checked %d resources of kube-apiserver, want its ~50", checked)
	}
}

// TestResourceRefusesClaims: what a member may claim in Kubernetes' groups
// that kube-apiserver never serves.
func TestResourceRefusesClaims(t *testing.T) {
	for _, c := range []struct {
		gvk      schema.GroupVersionKind
		resource string
		want     bool
	}{
		{schema.GroupVersionKind{Group: "apps", Version: "v1", Kind: "Deployment"}, "deployments", true},
		{schema.GroupVersionKind{Version: "v1", Kind: "Endpoints"}, "endpoints", true},
		{schema.GroupVersionKind{Group: "apiextensions.k8s.io", Version: "v1", Kind: "CustomResourceDefinition"}, "customresourcedefinitions", true},
		{schema.GroupVersionKind{Group: "apps", Version: "v2", Kind: "Deployment"}, "deployments", false},
		{schema.GroupVersionKind{Version: "v1", Kind: "Deployment"}, "deployments", false},
		{schema.GroupVersionKind{Version: "v1", Kind: "Pod"}, "podz", false},
		{schema.GroupVersionKind{Group: "admissionregistration.k8s.io", Version: "v1", Kind: "Deployment"}, "deployments", false},
		{schema.GroupVersionKind{Group: "apiextensions.k8s.io", Version: "v1", Kind: "Deployment"}, "deployments", false},
	} {
		if got := builtin.Resource(c.gvk, c.resource); got != c.want {
			t.Errorf("Resource(%v, %q) = %v, want %v", c.gvk, c.resource, got, c.want)
		}
	}
	for group, want := range map[string]bool{"": true, "apps": true, "events.k8s.io": true, "apiextensions.k8s.io": true,
		"gateway.networking.k8s.io": false, "example.com": false} {
		if got := builtin.Group(group); got != want {
			t.Errorf("Group(%q) = %v, want %v", group, got, want)
		}
	}
}
