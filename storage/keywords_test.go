package storage

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// keywordObject is a pod named name in namespace ns with labels and
// annotations.
func keywordObject(ns, name string, labels, annotations map[string]string) *unstructured.Unstructured {
	u := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "Pod"}}
	u.SetNamespace(ns)
	u.SetName(name)
	u.SetLabels(labels)
	u.SetAnnotations(annotations)
	return u
}

func TestKeywordsOfSplitsWords(t *testing.T) {
	digest := strings.Repeat("9f86d081", 8) // 64 hex digits
	u := keywordObject("Team_Prod", "web-0", map[string]string{"app.kubernetes.io/name": "WebHook"}, map[string]string{
		"db":     "db.example.com:5432",
		"ticket": "TICKET-1234",
		"digest": "sha256:" + digest,
		"env":    "LOG_LEVEL=debug",
		"note":   "café über straße",
		"empty":  "",
	})
	got := KeywordsOf(u, map[string][]string{"images": {"registry.example/nginx@sha256:" + digest}, "spec.nodeName": {"node-a"}})
	want := []string{
		"0", "web", // name
		"team", "prod", // namespace: the underscore separates
		"webhook", "app", "kubernetes", "io", "name", // label value, key
		"registry", "example", "nginx", "sha256", digest, "node", "a", // fields
		"db", "com", "5432", "ticket", "1234", "log", "level", "debug", // annotation values
		"caf", "ber", "stra", "e", // non-ASCII letters separate
		"digest", "env", "note", "empty", // annotation keys
	}
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Errorf("KeywordsOf:\n got %v\nwant %v", got, want)
	}
}

func TestKeywordsOfDedupesAndSorts(t *testing.T) {
	u := keywordObject("web", "web", map[string]string{"web": "web"}, map[string]string{"a": "Web WEB web b", "web": "a"})
	if got, want := KeywordsOf(u, map[string][]string{"f": {"web", "B"}}), []string{"a", "b", "web"}; !slices.Equal(got, want) {
		t.Errorf("KeywordsOf = %v, want %v", got, want)
	}
}

func TestKeywordsOfTruncates(t *testing.T) {
	long := strings.Repeat("a", MaxKeywordLength) + "bcdef"       // 69 characters
	other := strings.Repeat("A", MaxKeywordLength) + "XYZXYZXYZX" // the same first 64
	u := keywordObject("ns", "n", nil, map[string]string{"x": long + "-" + other + "-tail"})
	got := KeywordsOf(u, nil)
	want := []string{"n", "ns", strings.Repeat("a", MaxKeywordLength), "tail", "x"}
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Errorf("KeywordsOf = %v, want %v", got, want)
	}
}

// TestKeywordsOfBound: past MaxObjectKeywords words, the earlier sources
// keep theirs: a name, namespace, labels and fields survive an object of
// a thousand annotation words, of which the first ones fill the rest, and
// an annotation word that is an earlier source's too costs nothing.
func TestKeywordsOfBound(t *testing.T) {
	var many []string
	for i := range 1000 {
		many = append(many, fmt.Sprintf("w%04d", i))
	}
	// "Later" sorts after "bulk": its value comes after the thousand words,
	// and the annotation keys after every value.
	u := keywordObject("prod", "api-server", map[string]string{"tier": "front"}, map[string]string{
		"bulk":  "api prod " + strings.Join(many, " "),
		"later": "latecomer",
	})
	got := KeywordsOf(u, map[string][]string{"images": {"nginx"}})
	early := []string{"api", "server", "prod", "front", "tier", "nginx"}
	want := append(slices.Clone(early), many[:MaxObjectKeywords-len(early)]...)
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Errorf("KeywordsOf kept %d words %v,\nwant %d %v", len(got), got, len(want), want)
	}
}

func TestKeywordsOfLeavesLastAppliedOut(t *testing.T) {
	u := keywordObject("ns", "n", nil, map[string]string{
		LastAppliedAnnotation: `{"metadata":{"annotations":{"secret":"hunter2"}}}`,
		"owner":               "alice",
	})
	if got, want := KeywordsOf(u, nil), []string{"alice", "n", "ns", "owner"}; !slices.Equal(got, want) {
		t.Errorf("KeywordsOf = %v, want %v", got, want)
	}
	if _, ok := u.GetAnnotations()[LastAppliedAnnotation]; !ok {
		t.Error("KeywordsOf removed the last-applied annotation from the object")
	}
}

// TestDescribeKeywords: an object's keywords come from the fields of the
// field set that describes it: images and references among the built-in
// ones.
func TestDescribeKeywords(t *testing.T) {
	u := &unstructured.Unstructured{Object: decode(t, `
apiVersion: v1
kind: Pod
metadata: {name: p, namespace: ns}
spec:
  nodeName: node-7
  serviceAccountName: builder
  containers: [{name: c, image: "ghcr.io/acme/api:v2"}]
`)}
	o := BuiltinFields.Describe(schema.GroupResource{Resource: "pods"}, u)
	for _, w := range []string{"node", "7", "builder", "ghcr", "acme", "api", "v2", "p", "ns"} {
		if !slices.Contains(o.Keywords, w) {
			t.Errorf("Describe's keywords %v lack %q", o.Keywords, w)
		}
	}
	if !slices.IsSorted(o.Keywords) {
		t.Errorf("Describe's keywords %v are not sorted", o.Keywords)
	}
}

func TestParseKeywords(t *testing.T) {
	long := strings.Repeat("x", 70)
	for _, c := range []struct {
		terms []string
		want  string
	}{
		{[]string{"web*"}, "web*"},
		{[]string{"db.example*"}, "db example*"},
		{[]string{"*web"}, "web"},
		{[]string{"TICKET-1234*"}, "ticket 1234*"},
		{[]string{"web", "WEB", "web.web"}, "web"},
		{[]string{"web", "web*"}, "web web*"},
		{[]string{"web*", "db", "web*"}, "web* db"},
		{[]string{long}, strings.Repeat("x", MaxKeywordLength)},
		{[]string{"a b c d e f g h i j k l m n o p", "p a"}, "a b c d e f g h i j k l m n o p"},
	} {
		ks, err := ParseKeywords(c.terms)
		if err != nil {
			t.Errorf("ParseKeywords(%q): %v", c.terms, err)
			continue
		}
		got := make([]string, len(ks))
		for i, k := range ks {
			got[i] = k.String()
		}
		if strings.Join(got, " ") != c.want {
			t.Errorf("ParseKeywords(%q) = %q, want %q", c.terms, got, c.want)
		}
	}
	for _, terms := range [][]string{
		{""}, {"*"}, {"web", "--"}, {"é"},
		{"a b c d e f g h i j k l m n o p q"},
		{"a b c d e f g h", "i j k l m n o p", "pqr*"},
		{"we*"}, {"db.x*"}, // prefixes shorter than MinKeywordPrefix
	} {
		if ks, err := ParseKeywords(terms); !IsInvalid(err) {
			t.Errorf("ParseKeywords(%q) = %v, %v; want an invalid-input error", terms, ks, err)
		}
	}
}

func TestKeywordMatches(t *testing.T) {
	words := []string{"b", "web", "webhook", "x1"}
	for _, c := range []struct {
		k    Keyword
		want bool
	}{
		{Keyword{Word: "web"}, true},
		{Keyword{Word: "webhook"}, true},
		{Keyword{Word: "we"}, false},
		{Keyword{Word: "webh"}, false},
		{Keyword{Word: "we", Prefix: true}, true},
		{Keyword{Word: "web", Prefix: true}, true},
		{Keyword{Word: "webh", Prefix: true}, true},
		{Keyword{Word: "webx", Prefix: true}, false},
		{Keyword{Word: "a", Prefix: true}, false},
		{Keyword{Word: "bb", Prefix: true}, false},
		{Keyword{Word: "x", Prefix: true}, true},
		{Keyword{Word: "y", Prefix: true}, false},
	} {
		if got := c.k.Matches(words); got != c.want {
			t.Errorf("%s matches %v: %v, want %v", c.k, words, got, c.want)
		}
	}
}

// TestValidateKeywords: a query's words go into databases' text query
// syntax, where only what KeywordsOf makes may go.
func TestValidateKeywords(t *testing.T) {
	gvr := schema.GroupVersionResource{Version: "v1", Resource: "pods"}
	valid := ListQuery{GVR: gvr, Keywords: []Keyword{{Word: "web", Prefix: true}, {Word: strings.Repeat("a", MaxKeywordLength)}, {Word: "0"}}}
	if err := valid.Validate(); err != nil {
		t.Errorf("Validate(%v): %v", valid.Keywords, err)
	}
	var tooMany []Keyword
	for i := range MaxQueryKeywords + 1 {
		tooMany = append(tooMany, Keyword{Word: fmt.Sprint("w", i)})
	}
	for _, ks := range [][]Keyword{
		{{Word: "Web"}},
		{{Word: "db.example"}},
		{{Word: "web*"}},
		{{Word: "a b"}},
		{{Word: `web"`}},
		{{Word: "web", Prefix: true}, {Word: ""}},
		{{Word: "café"}},
		{{Word: strings.Repeat("a", MaxKeywordLength+1)}},
		tooMany,
	} {
		q := ListQuery{GVR: gvr, Keywords: ks}
		if err := q.Validate(); !IsInvalid(err) {
			t.Errorf("Validate(%v): %v, want an invalid-input error", ks, err)
		}
	}
}
