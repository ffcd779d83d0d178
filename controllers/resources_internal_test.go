package controllers

import (
	"slices"
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
