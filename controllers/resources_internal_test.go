package controllers

import (
	"reflect"
	"slices"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	clusterv1alpha1 "github.com/panorama-io/panorama/apis/cluster/v1alpha1"
)

// TestResolveNeverSelectsPanoramaGroups checks that a member's resources of
// panorama.io groups, which Panorama keeps its own data of a cluster under,
// are never selected: not by wildcards, not named.
func TestResolveNeverSelectsPanoramaGroups(t *testing.T) {
	listable := metav1.Verbs{"list", "watch"}
	served := map[string]string{ // group -> resource
		"":                    "pods",
		"example.com":         "widgets",
		"openapi.panorama.io": "documents",
		"panorama.io":         "things",
		"cluster.panorama.io": "clusters",
		"notpanorama.io":      "gadgets",
	}
	m := &memberResources{preferred: map[string]string{}, versions: map[string][]string{}, resources: map[schema.GroupVersion][]metav1.APIResource{}}
	for group, resource := range served {
		version := "v1"
		if group == "openapi.panorama.io" {
			version = "v3"
		}
		m.preferred[group], m.versions[group] = version, []string{version}
		gv := schema.GroupVersion{Group: group, Version: version}
		m.resources[gv] = []metav1.APIResource{{Name: resource, Kind: resource, Verbs: listable}}
	}
	selections := []clusterv1alpha1.GroupResources{
		{Group: "*", Resources: []string{"*"}},
		{Group: "openapi.panorama.io", Versions: []string{"v3"}, Resources: []string{"documents"}},
		{Group: "cluster.panorama.io", Resources: []string{"clusters"}},
		{Group: "panorama.io", Resources: []string{"*"}},
	}
	var got []string
	resolved, err := m.resolve(selections)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range resolved {
		got = append(got, r.GVR.GroupResource().String())
	}
	slices.Sort(got)
	if want := []string{"gadgets.notpanorama.io", "pods", "widgets.example.com"}; !slices.Equal(got, want) {
		t.Fatalf("selected %v, want %v", got, want)
	}
}

// TestResolveImpliedKeepsFilters: the selections a Cluster implies (the
// CRDs of syncAllCustomResources, each custom resource by name) add what
// its own selections do not select, and never take away the filter that a
// selection of its own, by "*", gives a resource.
func TestResolveImpliedKeepsFilters(t *testing.T) {
	listable := metav1.Verbs{"list", "watch"}
	m := &memberResources{
		preferred: map[string]string{"example.com": "v1", "apiextensions.k8s.io": "v1", "other.io": "v1"},
		versions:  map[string][]string{"example.com": {"v1"}, "apiextensions.k8s.io": {"v1"}, "other.io": {"v1"}},
		resources: map[schema.GroupVersion][]metav1.APIResource{
			{Group: "example.com", Version: "v1"}:          {{Name: "widgets", Kind: "Widget", Namespaced: true, Verbs: listable}},
			{Group: "apiextensions.k8s.io", Version: "v1"}: {{Name: "customresourcedefinitions", Kind: "CustomResourceDefinition", Verbs: listable}},
			{Group: "other.io", Version: "v1"}:             {{Name: "gadgets", Kind: "Gadget", Namespaced: true, Verbs: listable}},
		},
	}
	own := []clusterv1alpha1.GroupResources{{
		Group: "example.com", Resources: []string{"*"}, Namespaces: []string{"team"},
		LabelSelector: &clusterv1alpha1.LabelSelector{MatchLabels: map[string]clusterv1alpha1.LabelValue{"tier": "front"}},
	}}
	implied := []clusterv1alpha1.GroupResources{
		{Group: "apiextensions.k8s.io", Resources: []string{"customresourcedefinitions"}},
		{Group: "example.com", Resources: []string{"widgets"}},
		{Group: "other.io", Resources: []string{"gadgets"}},
	}
	resolved, err := m.resolve(own, implied...)
	if err != nil {
		t.Fatal(err)
	}
	filters := map[string]string{}
	for _, r := range resolved {
		filters[r.GVR.GroupResource().String()] = r.Filter.String()
	}
	if len(filters) != 3 {
		t.Fatalf("resolved %v, want widgets, gadgets and the CRDs", filters)
	}
	if f := filters["widgets.example.com"]; !strings.Contains(f, "team") || !strings.Contains(f, "tier=front") {
		t.Errorf("widgets synced under filter %q, want the Cluster's namespaces and labels", f)
	}
	for _, gr := range []string{"gadgets.other.io", "customresourcedefinitions.apiextensions.k8s.io"} {
		if f := filters[gr]; f != "" {
			t.Errorf("%s synced under filter %q, want none: no selection of the Cluster's selects it", gr, f)
		}
	}
}

// TestMemberDiscoveryIsWellNamed: what a member's discovery claims goes
// into the paths clients of the views build, so only resources named as
// kube-apiserver names them are kept, and only such short names.
// TestMemberCannotClaimKubernetesResources: in Kubernetes' own groups a
// member's discovery holds only what kube-apiserver serves there; what
// else it claims (a Deployment in the core group, an apps/v2, a Pod under
// another name) would take kubectl's names of the views from every
// cluster's objects of them, and is not synced.
func TestMemberCannotClaimKubernetesResources(t *testing.T) {
	listWatch := metav1.Verbs{"get", "list", "watch"}
	resource := func(name, kind string) metav1.APIResource {
		return metav1.APIResource{Name: name, Kind: kind, Verbs: listWatch}
	}
	lists := []*metav1.APIResourceList{
		{GroupVersion: "v1", APIResources: []metav1.APIResource{resource("pods", "Pod"), resource("deployments", "Deployment"), resource("podz", "Pod")}},
		{GroupVersion: "apps/v1", APIResources: []metav1.APIResource{resource("deployments", "Deployment")}},
		{GroupVersion: "apps/v2", APIResources: []metav1.APIResource{resource("deployments", "Deployment")}},
		{GroupVersion: "admissionregistration.k8s.io/v1", APIResources: []metav1.APIResource{resource("deployments", "Deployment")}},
		{GroupVersion: "apiextensions.k8s.io/v1", APIResources: []metav1.APIResource{resource("customresourcedefinitions", "CustomResourceDefinition")}},
		{GroupVersion: "example.com/v1", APIResources: []metav1.APIResource{resource("deployments", "Deployment")}},
	}
	var got []string
	for gv, rs := range memberResourcesOf(nil, lists, false).resources {
		for _, r := range rs {
			got = append(got, gv.WithResource(r.Name).String())
		}
	}
	slices.Sort(got)
	want := []string{"/v1, Resource=pods", "apiextensions.k8s.io/v1, Resource=customresourcedefinitions", "apps/v1, Resource=deployments", "example.com/v1, Resource=deployments"}
	if !slices.Equal(got, want) {
		t.Errorf("resources kept: %q\nwant %q", got, want)
	}
}

func TestMemberDiscoveryIsWellNamed(t *testing.T) {
	listWatch := metav1.Verbs{"get", "list", "watch"}
	lists := []*metav1.APIResourceList{
		{GroupVersion: "v1", APIResources: []metav1.APIResource{
			{Name: "pods", Kind: "Pod", Verbs: listWatch, ShortNames: []string{"po", "../x", "a?b"}, Categories: []string{"all", "#x"}},
			{Name: "pods/log", Kind: "Pod", Verbs: listWatch},
			{Name: "..", Kind: "Up", Verbs: listWatch},
			{Name: "x?y#z", Kind: "X", Verbs: listWatch},
			{Name: "widgets", Kind: "Wid/get", Verbs: listWatch},
			{Name: "nodes", Kind: "Node", Verbs: metav1.Verbs{"get"}},
		}},
		{GroupVersion: "evil..example.com/v1", APIResources: []metav1.APIResource{{Name: "things", Kind: "Thing", Verbs: listWatch}}},
		{GroupVersion: "example.com/v1?x", APIResources: []metav1.APIResource{{Name: "things", Kind: "Thing", Verbs: listWatch}}},
		{GroupVersion: "example.com/v1", APIResources: []metav1.APIResource{{Name: "things", Kind: "Thing", Verbs: listWatch}}},
	}
	got := memberResourcesOf(nil, lists, false).resources
	want := map[schema.GroupVersion][]metav1.APIResource{
		{Version: "v1"}:                       {{Name: "pods", Kind: "Pod", Verbs: listWatch, ShortNames: []string{"po"}, Categories: []string{"all"}}},
		{Group: "example.com", Version: "v1"}: {{Name: "things", Kind: "Thing", Verbs: listWatch}},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("resources kept: %+v\nwant %+v", got, want)
	}
	// The member's own answer is not changed under it.
	if sn := lists[0].APIResources[0].ShortNames; len(sn) != 3 {
		t.Errorf("the member's discovery was changed: %v", sn)
	}
}
