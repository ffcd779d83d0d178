package storage

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/runtime/schema"
)

func TestParseFieldPath(t *testing.T) {
	obj := map[string]any{"spec": map[string]any{
		"nodeName": "n1",
		"containers": []any{
			map[string]any{"image": "nginx", "ports": []any{map[string]any{"containerPort": int64(80)}, map[string]any{"containerPort": 443.0}}},
			map[string]any{"image": "redis", "ports": "not a list"},
			"not an object",
		},
		"flag": true,
	}}
	for path, want := range map[string][]string{
		"spec.nodeName":            {"n1"},
		"{.spec.nodeName}":         {"n1"},
		".spec.flag":               {"true"},
		"spec.containers[*].image": {"nginx", "redis"},
		"spec.containers[*].ports[*].containerPort": {"80", "443"},
		"spec.containers":       nil, // not a scalar
		"spec.missing[*].image": nil,
		"spec.nodeName[*]":      nil,
	} {
		p, err := ParseFieldPath(path)
		if err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		if again, err := ParseFieldPath(p.String()); err != nil || !slices.Equal(again, p) {
			t.Errorf("%s: String gives %q, which parses as %v (%v)", path, p.String(), again, err)
		}
		fs, err := NewFieldSet(1, []FieldDeclaration{{Name: "x", Paths: []string{path}}})
		if err != nil || p == nil {
			t.Fatalf("%s: %v", path, err)
		}
		got := fs.Extract(schema.GroupResource{Resource: "pods"}, obj)["x"]
		slices.Sort(want)
		if !slices.Equal(got, want) {
			t.Errorf("%s: got %q, want %q", path, got, want)
		}
	}
	for _, bad := range []string{"", ".", "spec.", "spec..a", "spec.a[0]", "spec.a[*", "{spec.a", "spec.a b", "spec.a[*][*]"} {
		if _, err := ParseFieldPath(bad); !IsInvalid(err) {
			t.Errorf("%q: %v, want an invalid-input error", bad, err)
		}
	}
}

// TestExtractBounds: empty values, overlong ones and those beyond
// MaxFieldValues are not indexed; resources limit a
// declaration; one name declared twice has the values of both.
func TestExtractBounds(t *testing.T) {
	var containers []any
	for i := range MaxFieldValues + 10 {
		containers = append(containers, map[string]any{"image": fmt.Sprintf("img-%03d", i)})
	}
	containers = append(containers, map[string]any{"image": ""},
		map[string]any{"image": strings.Repeat("x", MaxFieldValueLen+1)}, map[string]any{"image": "img-000"})
	obj := map[string]any{"spec": map[string]any{"containers": containers, "a": "A", "b": "B"}}
	got := BuiltinFields.Extract(schema.GroupResource{Resource: "pods"}, obj)[ImagesField]
	if len(got) != MaxFieldValues || got[0] != "img-000" || got[MaxFieldValues-1] != fmt.Sprintf("img-%03d", MaxFieldValues-1) {
		t.Fatalf("images: %d values %q", len(got), got)
	}
	fs, err := NewFieldSet(1, []FieldDeclaration{
		{Name: "x", Paths: []string{"spec.a"}, Resources: []string{"deployments.apps"}},
		{Name: "x", Paths: []string{"spec.b"}},
	})
	if err != nil {
		t.Fatal(err)
	}
	for gr, want := range map[schema.GroupResource][]string{
		{Group: "apps", Resource: "deployments"}: {"A", "B"},
		{Resource: "pods"}:                       {"B"},
	} {
		if got := fs.Extract(gr, obj)["x"]; !slices.Equal(got, want) {
			t.Errorf("%v: %q, want %q", gr, got, want)
		}
	}
	for _, bad := range [][]FieldDeclaration{
		{{Name: "images", Paths: []string{"a"}}},
		{{Name: "metadata.name", Paths: []string{"a"}}},
		{{Name: "", Paths: []string{"a"}}},
		{{Name: "x", Paths: []string{"a"}, Resources: []string{""}}},
		{{Name: "x", Paths: make([]string, MaxFieldPaths+1)}},
	} {
		if _, err := NewFieldSet(1, bad); !IsInvalid(err) {
			t.Errorf("%+v: %v, want an invalid-input error", bad, err)
		}
	}
}

// TestFieldLimits: the declared fields that apply to one resource, and
// the values one object indexes of them together, are bounded; a
// declaration past a bound is refused alone, with the resource it would
// overfill named.
func TestFieldLimits(t *testing.T) {
	field := func(i int, resources ...string) FieldDeclaration {
		return FieldDeclaration{Name: fmt.Sprintf("f%02d", i), Paths: []string{fmt.Sprintf("spec.f%02d[*]", i)}, Resources: resources}
	}
	var pods, everywhere []FieldDeclaration
	for i := range MaxFieldsPerResource {
		pods = append(pods, field(i, "pods"))
		everywhere = append(everywhere, field(i))
	}
	for name, set := range map[string][]FieldDeclaration{
		"full for pods":                pods,
		"full for every resource":      everywhere,
		"pods full, and one elsewhere": append(slices.Clone(pods), field(MaxFieldsPerResource, "deployments.apps")),
		"one name for pods twice":      append(slices.Clone(pods), field(0)),
	} {
		if _, err := NewFieldSet(1, set); err != nil {
			t.Errorf("%s: %v", name, err)
		}
	}
	for name, set := range map[string][]FieldDeclaration{
		"one more for pods":              append(slices.Clone(pods), field(MaxFieldsPerResource, "pods")),
		"one more for every resource":    append(slices.Clone(pods), field(MaxFieldsPerResource)),
		"every resource full, pods more": append(slices.Clone(everywhere), field(MaxFieldsPerResource, "pods")),
	} {
		if _, err := NewFieldSet(1, set); !IsInvalid(err) || !strings.Contains(err.Error(), "at most 16 declared fields apply to a resource") {
			t.Errorf("%s: %v, want past the limit", name, err)
		}
	}

	// Admitted in order: the ones past a limit, or invalid, are left out.
	decls := append(slices.Clone(pods), field(MaxFieldsPerResource, "pods"), FieldDeclaration{Name: "images", Paths: []string{"a"}}, field(MaxFieldsPerResource+1, "services"))
	admitted, refused := AdmitFieldDeclarations(decls)
	if len(admitted) != MaxFieldsPerResource+1 || admitted[MaxFieldsPerResource].Name != decls[len(decls)-1].Name {
		t.Errorf("admitted %d: %+v", len(admitted), admitted)
	}
	if len(refused) != 2 || !strings.Contains(fmt.Sprint(refused[MaxFieldsPerResource]), "16 apply to pods") || !IsInvalid(refused[MaxFieldsPerResource+1]) {
		t.Errorf("refused %v", refused)
	}
	var many []FieldDeclaration
	for i := range MaxFieldDeclarations + 1 {
		many = append(many, field(i, fmt.Sprintf("r%d", i)))
	}
	if admitted, refused := AdmitFieldDeclarations(many); len(admitted) != MaxFieldDeclarations || refused[MaxFieldDeclarations] == nil {
		t.Errorf("%d declarations: %d admitted, refused %v", len(many), len(admitted), refused)
	}

	// Every declared field with more values than MaxFieldValues: the
	// declared ones index MaxDeclaredFieldValues together, the first by
	// name first; the built-in ones as many as they have.
	fs, err := NewFieldSet(1, pods)
	if err != nil {
		t.Fatal(err)
	}
	spec := map[string]any{}
	var containers []any
	for i := range MaxFieldValues + 5 {
		containers = append(containers, map[string]any{"image": fmt.Sprintf("img-%03d", i)})
	}
	spec["containers"] = containers
	for _, d := range pods {
		var vs []any
		for j := range MaxFieldValues + 5 {
			vs = append(vs, fmt.Sprintf("%s-%03d", d.Name, j))
		}
		spec[strings.TrimSuffix(strings.TrimPrefix(d.Paths[0], "spec."), "[*]")] = vs
	}
	got := fs.Extract(schema.GroupResource{Resource: "pods"}, map[string]any{"spec": spec})
	declared := 0
	for _, d := range pods {
		declared += len(got[d.Name])
	}
	if declared != MaxDeclaredFieldValues || len(got["f00"]) != MaxFieldValues || len(got["f01"]) != MaxDeclaredFieldValues-MaxFieldValues || got["f02"] != nil {
		t.Errorf("declared fields index %d values (f00 %d, f01 %d, f02 %d), want %d", declared, len(got["f00"]), len(got["f01"]), len(got["f02"]), MaxDeclaredFieldValues)
	}
	if len(got[ImagesField]) != MaxFieldValues {
		t.Errorf("images: %d values, want %d", len(got[ImagesField]), MaxFieldValues)
	}
}

// TestExtractsAlike: two field sets extract alike from a resource's
// objects when the same fields, declared or built in, read the same
// paths in them, whatever the fields of other resources and however the
// declarations are split or ordered.
func TestExtractsAlike(t *testing.T) {
	podsGR, deploymentsGR := schema.GroupResource{Resource: "pods"}, schema.GroupResource{Group: "apps", Resource: "deployments"}
	replicas := FieldDeclaration{Name: "replicas", Paths: []string{"spec.replicas", "status.replicas"}, Resources: []string{"deployments.apps"}}
	base := mustFieldSet(1, []FieldDeclaration{replicas})
	for _, tc := range []struct {
		name        string
		decls       []FieldDeclaration
		pods        bool // whether it extracts from pods as base does
		deployments bool
	}{
		{name: "the same", decls: []FieldDeclaration{replicas}, pods: true, deployments: true},
		{name: "split, reordered", decls: []FieldDeclaration{
			{Name: "replicas", Paths: []string{"status.replicas"}, Resources: []string{"deployments.apps"}},
			{Name: "replicas", Paths: []string{"spec.replicas", "status.replicas"}, Resources: []string{"deployments.apps"}},
		}, pods: true, deployments: true},
		{name: "one for pods added", decls: []FieldDeclaration{replicas, {Name: "node", Paths: []string{"spec.nodeName"}, Resources: []string{"pods"}}}, deployments: true},
		{name: "one for every resource added", decls: []FieldDeclaration{replicas, {Name: "team", Paths: []string{"metadata.annotations.team"}}}},
		{name: "a path changed", decls: []FieldDeclaration{{Name: "replicas", Paths: []string{"spec.replicas"}, Resources: []string{"deployments.apps"}}}, pods: true},
		{name: "none", pods: true},
	} {
		fs := mustFieldSet(2, tc.decls)
		if got := base.ExtractsAlike(fs, podsGR); got != tc.pods {
			t.Errorf("%s: alike for pods %v, want %v", tc.name, got, tc.pods)
		}
		if got := base.ExtractsAlike(fs, deploymentsGR); got != tc.deployments {
			t.Errorf("%s: alike for deployments %v, want %v", tc.name, got, tc.deployments)
		}
	}
}
