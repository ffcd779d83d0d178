package controllers

import (
	"bytes"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"github.com/panorama-io/panorama/test/testenv"
)

// TestDiscoveryByETag: an unchanged member is rediscovered from its
// aggregated discovery's ETags, answered 304 Not Modified, and a CRD added
// to it is discovered all the same.
func TestDiscoveryByETag(t *testing.T) {
	member := testenv.Start(t, testenv.WithoutCRDs())
	var mu sync.Mutex
	answers := map[string]int{} // path -> status code of its last answer
	cfg := rest.CopyConfig(member.Config)
	cfg.WrapTransport = func(rt http.RoundTripper) http.RoundTripper {
		return roundTripper(func(req *http.Request) (*http.Response, error) {
			resp, err := rt.RoundTrip(req)
			if err == nil {
				mu.Lock()
				answers[req.URL.Path] = resp.StatusCode
				mu.Unlock()
			}
			return resp, err
		})
	}
	dc, err := discovery.NewDiscoveryClientForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	var d discoveries
	first, err := d.discover(t.Context(), "east", "config", dc)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.ContainsFunc(first.resources[schema.GroupVersion{Version: "v1"}], func(r metav1.APIResource) bool { return r.Name == "pods" }) ||
		first.preferred["apps"] != "v1" {
		t.Fatalf("first discovery: preferred %v, core resources %v", first.preferred, first.resources[schema.GroupVersion{Version: "v1"}])
	}
	again, err := d.discover(t.Context(), "east", "config", dc)
	if err != nil {
		t.Fatal(err)
	}
	if again != first || answers["/api"] != http.StatusNotModified || answers["/apis"] != http.StatusNotModified {
		t.Fatalf("unchanged member: answers %v, same resources %v", answers, again == first)
	}
	// Another connection of the cluster is discovered afresh.
	if other, err := d.discover(t.Context(), "east", "another config", dc); err != nil || other == first || answers["/apis"] != http.StatusOK {
		t.Fatalf("new connection: answers %v, same resources %v (%v)", answers, other == first, err)
	}

	crd := &apiextensionsv1.CustomResourceDefinition{
		ObjectMeta: metav1.ObjectMeta{Name: "widgets.example.com"},
		Spec: apiextensionsv1.CustomResourceDefinitionSpec{
			Group: "example.com", Scope: apiextensionsv1.NamespaceScoped,
			Names: apiextensionsv1.CustomResourceDefinitionNames{Plural: "widgets", Kind: "Widget", ListKind: "WidgetList", Singular: "widget"},
			Versions: []apiextensionsv1.CustomResourceDefinitionVersion{{
				Name: "v1", Served: true, Storage: true,
				Schema: &apiextensionsv1.CustomResourceValidation{OpenAPIV3Schema: &apiextensionsv1.JSONSchemaProps{Type: "object"}},
			}},
		},
	}
	if err := envtest.CreateCRDs(member.Config, []*apiextensionsv1.CustomResourceDefinition{crd}); err != nil {
		t.Fatal(err)
	}
	testenv.Eventually(t, time.Minute, func() error {
		m, err := d.discover(t.Context(), "east", "another config", dc)
		if err != nil {
			return err
		}
		widgets := m.resources[schema.GroupVersion{Group: "example.com", Version: "v1"}]
		if len(widgets) != 1 || widgets[0].Name != "widgets" || widgets[0].Kind != "Widget" || m.preferred["example.com"] != "v1" {
			return fmt.Errorf("example.com: preferred %q, resources %v", m.preferred["example.com"], widgets)
		}
		return nil
	})
}

// TestDiscoveryWithoutAggregation: a member serving no aggregated
// discovery is discovered as client-go's discovery reads it.
func TestDiscoveryWithoutAggregation(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		switch r.URL.Path {
		case "/api":
			w.Write([]byte(`{"kind":"APIVersions","versions":["v1"]}`))
		case "/apis":
			w.Write([]byte(`{"kind":"APIGroupList","apiVersion":"v1","groups":[]}`))
		case "/api/v1":
			w.Write([]byte(`{"kind":"APIResourceList","groupVersion":"v1","resources":[{"name":"pods","namespaced":true,"kind":"Pod","verbs":["list","watch"]}]}`))
		default:
			http.NotFound(w, r)
		}
	}))
	defer srv.Close()
	dc, err := discovery.NewDiscoveryClientForConfig(withResponseLimit(&rest.Config{Host: srv.URL}, "east"))
	if err != nil {
		t.Fatal(err)
	}
	var d discoveries
	for range 2 {
		m, err := d.discover(t.Context(), "old", "config", dc)
		if err != nil {
			t.Fatal(err)
		}
		if pods := m.resources[schema.GroupVersion{Version: "v1"}]; len(pods) != 1 || pods[0].Kind != "Pod" {
			t.Fatalf("resources %v", m.resources)
		}
	}
}

// TestDiscoveryOversized: a member's aggregated discovery document is read
// up to maxMemberResponseBytes, and one larger fails discovery with an
// error naming the member and the limit, as the Cluster's status says it,
// rather than being read whole, here or by client-go's discovery.
func TestDiscoveryOversized(t *testing.T) {
	// Valid JSON, padded with white space: read whole, it is an empty
	// document, and discovery would find nothing wrong.
	doc := []byte(`{"kind":"APIGroupDiscoveryList","apiVersion":"apidiscovery.k8s.io/v2","items":[]}`)
	padding := bytes.Repeat([]byte(" "), 1<<20)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList")
		if _, err := w.Write(doc); err != nil {
			return
		}
		for written := len(doc); written <= maxMemberResponseBytes; written += len(padding) {
			if _, err := w.Write(padding); err != nil {
				return // the client stopped reading
			}
		}
	}))
	defer srv.Close()
	dc, err := discovery.NewDiscoveryClientForConfig(withResponseLimit(&rest.Config{Host: srv.URL}, "east"))
	if err != nil {
		t.Fatal(err)
	}
	var d discoveries
	m, err := d.discover(t.Context(), "east", "config", dc)
	if err == nil {
		t.Fatalf("discovered %v, want an error", m)
	}
	text := memberErrorText(err)
	if !strings.Contains(text, "member east") || !strings.Contains(text, strconv.Itoa(maxMemberResponseBytes)+" bytes") {
		t.Fatalf("status message %q: want the member and the limit named", text)
	}
}

type roundTripper func(*http.Request) (*http.Response, error)

func (f roundTripper) RoundTrip(req *http.Request) (*http.Response, error) { return f(req) }
