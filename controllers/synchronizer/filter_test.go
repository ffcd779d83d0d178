package synchronizer

import (
	"reflect"
	"slices"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	clusterv1alpha1 "github.com/panorama-io/panorama/apis/cluster/v1alpha1"
)

// TestFilterAsked: a filter is asked of the member in the forms a list
// and a watch take, shows as it is in force, and a cluster-scoped
// resource ignores its namespaces, saying so.
func TestFilterAsked(t *testing.T) {
	f, err := NewFilter(clusterv1alpha1.GroupResources{
		ExcludeNamespaces: []string{"kube-system", "kube-public", "kube-system"},
		LabelSelector:     &clusterv1alpha1.LabelSelector{MatchLabels: map[string]clusterv1alpha1.LabelValue{"tier": "front"}},
		DropFields:        []clusterv1alpha1.FieldPath{"status", "metadata.annotations[example.com/notes]"},
	})
	if err != nil {
		t.Fatal(err)
	}
	opts := f.listOptions(metav1.ListOptions{Limit: 5})
	if opts.FieldSelector != "metadata.namespace!=kube-public,metadata.namespace!=kube-system" || opts.LabelSelector != "tier=front" || opts.Limit != 5 {
		t.Fatalf("list options %+v", opts)
	}
	if got := f.scopes(); !slices.Equal(got, []string{""}) {
		t.Fatalf("scopes %q, want the whole resource", got)
	}
	want := "fields=metadata.namespace!=kube-public,metadata.namespace!=kube-system; labels=tier=front; dropFields=metadata.annotations[example.com/notes],status"
	if f.String() != want {
		t.Fatalf("filter %q, want %q", f, want)
	}
	c := f.For(false)
	if c.listOptions(metav1.ListOptions{}).FieldSelector != "" || !strings.HasSuffix(c.String(), "namespaces ignored: cluster-scoped") {
		t.Fatalf("cluster-scoped filter %q", c)
	}
	if f.String() != want {
		t.Fatalf("For changed the filter it was called on: %q", f)
	}

	in, err := NewFilter(clusterv1alpha1.GroupResources{Namespaces: []string{"b", "a"}})
	if err != nil {
		t.Fatal(err)
	}
	if got := in.scopes(); !slices.Equal(got, []string{"a", "b"}) || !in.keeps("a") || in.keeps("c") || in.String() != "namespaces=a,b" {
		t.Fatalf("namespaces filter: scopes %q, %q", got, in)
	}
	if none, err := NewFilter(clusterv1alpha1.GroupResources{LabelSelector: &clusterv1alpha1.LabelSelector{}}); none != nil || err != nil {
		t.Fatalf("an empty filter: %v (%v), want none", none, err)
	}
}

// TestFilterRefused: what the CRD refuses, a filter refuses too, for
// Clusters stored before its rules.
func TestFilterRefused(t *testing.T) {
	for name, sel := range map[string]clusterv1alpha1.GroupResources{
		"both namespace lists": {Namespaces: []string{"a"}, ExcludeNamespaces: []string{"b"}},
		"bad namespace":        {Namespaces: []string{"../secrets"}},
		"bad excluded":         {ExcludeNamespaces: []string{"a,b"}},
		"bad operator": {LabelSelector: &clusterv1alpha1.LabelSelector{MatchExpressions: []clusterv1alpha1.LabelSelectorRequirement{
			{Key: "tier", Operator: "Like", Values: []clusterv1alpha1.LabelValue{"x"}},
		}}},
		"identity dropped":   {DropFields: []clusterv1alpha1.FieldPath{"metadata.name"}},
		"identity bracketed": {DropFields: []clusterv1alpha1.FieldPath{"metadata[namespace]"}},
		"empty key":          {DropFields: []clusterv1alpha1.FieldPath{"metadata.annotations[]"}},
		"unclosed key":       {DropFields: []clusterv1alpha1.FieldPath{"metadata.annotations[a"}},
		"double dot":         {DropFields: []clusterv1alpha1.FieldPath{"spec..template"}},
		"leading dot":        {DropFields: []clusterv1alpha1.FieldPath{".status"}},
	} {
		if f, err := NewFilter(sel); err == nil {
			t.Errorf("%s: filter %q, want an error", name, f)
		}
	}
}

// TestFilterDrops: the paths of dropFields, and only they, are removed;
// a path an object lacks removes nothing.
func TestFilterDrops(t *testing.T) {
	f, err := NewFilter(clusterv1alpha1.GroupResources{DropFields: []clusterv1alpha1.FieldPath{
		"status", "metadata.annotations[example.com/notes]", "spec.template.metadata", "spec.missing.deeper", "data[a.b]",
	}})
	if err != nil {
		t.Fatal(err)
	}
	obj := map[string]any{
		"metadata": map[string]any{"name": "x", "annotations": map[string]any{"example.com/notes": "n", "keep": "k"}},
		"spec":     map[string]any{"template": map[string]any{"metadata": map[string]any{"labels": "l"}, "spec": "s"}, "replicas": int64(1)},
		"status":   map[string]any{"ready": true},
		"data":     map[string]any{"a.b": "dropped", "a": map[string]any{"b": "kept"}},
	}
	f.dropFrom(obj)
	want := map[string]any{
		"metadata": map[string]any{"name": "x", "annotations": map[string]any{"keep": "k"}},
		"spec":     map[string]any{"template": map[string]any{"spec": "s"}, "replicas": int64(1)},
		"data":     map[string]any{"a": map[string]any{"b": "kept"}},
	}
	if !reflect.DeepEqual(obj, want) {
		t.Fatalf("after dropping: %v, want %v", obj, want)
	}
}

// TestFilterMarksDropped: an object stored under dropFields is labelled
// with a mark of the paths, which differs from another filter's, and
// its other labels stay; under none, the label goes, the member's own
// included.
func TestFilterMarksDropped(t *testing.T) {
	filter := func(paths ...clusterv1alpha1.FieldPath) *Filter {
		f, err := NewFilter(clusterv1alpha1.GroupResources{DropFields: paths})
		if err != nil {
			t.Fatal(err)
		}
		return f
	}
	marked := func(f *Filter, labels map[string]string) map[string]string {
		u := &unstructured.Unstructured{Object: map[string]any{}}
		u.SetLabels(labels)
		f.markDropped(u)
		return u.GetLabels()
	}
	status, data := filter("status"), filter("data")
	got := marked(status, map[string]string{"tier": "front"})
	if got[DroppedFieldsLabel] == "" || got["tier"] != "front" || len(got) != 2 {
		t.Fatalf("dropping status, labels %v; want tier and a mark", got)
	}
	if other := marked(data, nil)[DroppedFieldsLabel]; other == "" || other == got[DroppedFieldsLabel] {
		t.Errorf("dropping data marks %q, dropping status %q: want two marks", other, got[DroppedFieldsLabel])
	}
	for _, none := range []*Filter{nil, filter()} {
		if got := marked(none, map[string]string{DroppedFieldsLabel: "member's", "tier": "front"}); !reflect.DeepEqual(got, map[string]string{"tier": "front"}) {
			t.Errorf("dropping nothing, labels %v; want tier alone", got)
		}
		if got := marked(none, map[string]string{DroppedFieldsLabel: "member's"}); got != nil {
			t.Errorf("dropping nothing, labels %v; want none", got)
		}
	}
}

// TestFilterAdmits: what a member sends is kept only as the filter asked
// for it, whether or not the member filtered: the namespaces of the
// filter, never an excluded one, and labels its selector selects, read
// before any field is dropped.
func TestFilterAdmits(t *testing.T) {
	obj := func(ns string, labels map[string]string) *unstructured.Unstructured {
		u := &unstructured.Unstructured{Object: map[string]any{"metadata": map[string]any{"name": "x", "namespace": ns}}}
		u.SetLabels(labels)
		return u
	}
	front := map[string]string{"tier": "front"}
	selector := &clusterv1alpha1.LabelSelector{MatchLabels: map[string]clusterv1alpha1.LabelValue{"tier": "front"}}
	for name, c := range map[string]struct {
		sel  clusterv1alpha1.GroupResources
		obj  *unstructured.Unstructured
		want bool
	}{
		"included":            {clusterv1alpha1.GroupResources{Namespaces: []string{"web"}}, obj("web", nil), true},
		"not included":        {clusterv1alpha1.GroupResources{Namespaces: []string{"web"}}, obj("db", nil), false},
		"excluded":            {clusterv1alpha1.GroupResources{ExcludeNamespaces: []string{"kube-system"}}, obj("kube-system", nil), false},
		"not excluded":        {clusterv1alpha1.GroupResources{ExcludeNamespaces: []string{"kube-system"}}, obj("web", nil), true},
		"selected":            {clusterv1alpha1.GroupResources{LabelSelector: selector}, obj("web", front), true},
		"not selected":        {clusterv1alpha1.GroupResources{LabelSelector: selector}, obj("web", map[string]string{"tier": "back"}), false},
		"labels then dropped": {clusterv1alpha1.GroupResources{LabelSelector: selector, DropFields: []clusterv1alpha1.FieldPath{"metadata.labels"}}, obj("web", front), true},
	} {
		f, err := NewFilter(c.sel)
		if err != nil {
			t.Fatal(err)
		}
		s := &Synchronizer{resource: Resource{Filter: f}, opts: Options{KeepManagedFields: true, KeepLastApplied: true}}
		if _, admitted, err := s.object(c.obj); err != nil || admitted != c.want {
			t.Errorf("%s: admitted %v (%v), want %v", name, admitted, err, c.want)
		}
	}
}
