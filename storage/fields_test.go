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
