package controllers

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/rest"

	"github.com/panorama-io/panorama/controllers/synchronizer"
	"github.com/panorama-io/panorama/storage"
	"github.com/panorama-io/panorama/storage/storagetest"
)

// fakeOpenAPIMember serves an OpenAPI v3 index and documents as
// kube-apiserver does, counting the documents fetched. Its documents are
// what a member may send: the test sets them.
type fakeOpenAPIMember struct {
	mu      sync.Mutex
	docs    map[string]string // path -> body
	hashes  map[string]string // path -> hash in the index
	fetched map[string]int
	noIndex bool
}

func (m *fakeOpenAPIMember) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if r.URL.Path == "/openapi/v3" {
		if m.noIndex {
			http.NotFound(w, r)
			return
		}
		index := map[string]any{}
		for p := range m.docs {
			index[p] = map[string]string{"serverRelativeURL": "/openapi/v3/" + p + "?hash=" + m.hashes[p]}
		}
		_ = json.NewEncoder(w).Encode(map[string]any{"paths": index})
		return
	}
	p := strings.TrimPrefix(r.URL.Path, "/openapi/v3/")
	if r.URL.Query().Get("hash") != m.hashes[p] {
		http.Error(w, "stale hash", http.StatusMovedPermanently)
		return
	}
	m.fetched[p]++
	_, _ = w.Write([]byte(m.docs[p]))
}

func (m *fakeOpenAPIMember) set(path, hash, body string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.docs[path], m.hashes[path] = body, hash
}

func (m *fakeOpenAPIMember) fetches(path string) int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.fetched[path]
}

func memberDoc(description string) string {
	return fmt.Sprintf(`{"openapi":"3.0.0","paths":{},"components":{"schemas":{"X":{"description":%q}}}}`, description)
}

func resourcesIn(gvs ...string) []synchronizer.Resource {
	var out []synchronizer.Resource
	for _, gv := range gvs {
		g, _ := schema.ParseGroupVersion(gv)
		out = append(out, synchronizer.Resource{Resource: storage.Resource{GVR: g.WithResource("things")}})
	}
	return out
}

// TestSyncOpenAPI, on every database: the documents of the synced group versions are stored
// with an index; a document is fetched again only when the member's hash
// of it changes, and nothing is written when nothing changed; what the
// member sends too large or not as an OpenAPI document is left out and
// named, the rest stored; a group version no longer synced is removed,
// unless the selection is partial; a member without OpenAPI v3 has none.
func TestSyncOpenAPI(t *testing.T) {
	storagetest.ForEach(t, func(t *testing.T, b storagetest.Backend) { testSyncOpenAPI(t, b.Open(t)) })
}

func testSyncOpenAPI(t *testing.T, store storage.Interface) {
	ctx := context.Background()
	m := &fakeOpenAPIMember{docs: map[string]string{}, hashes: map[string]string{}, fetched: map[string]int{}}
	m.set("api/v1", "c1", memberDoc("core 1"))
	m.set("apis/apps/v1", "a1", memberDoc("apps 1"))
	m.set("apis/big.example/v1", "b1", `{"openapi":"3.0.0","x":"`+strings.Repeat("x", maxOpenAPIDocumentBytes)+`"}`)
	m.set("apis/bad.example/v1", "d1", `{"openapi":"3.0.0","paths":[]}`)
	m.set("apis/unsynced.example/v1", "u1", memberDoc("unsynced"))
	srv := httptest.NewServer(m)
	t.Cleanup(srv.Close)
	member := discovery.NewDiscoveryClientForConfigOrDie(&rest.Config{Host: srv.URL}).RESTClient()

	index := func() storage.OpenAPIIndex {
		t.Helper()
		o, err := store.Get(ctx, storage.Key{Cluster: "east", GVR: storage.OpenAPIResource, Name: storage.OpenAPIIndexName})
		if err != nil {
			t.Fatal(err)
		}
		var idx storage.OpenAPIIndex
		if err := storage.DecodeOpenAPI(o.Data, &idx); err != nil {
			t.Fatal(err)
		}
		return idx
	}
	document := func(path string) (string, error) {
		o, err := store.Get(ctx, storage.Key{Cluster: "east", GVR: storage.OpenAPIResource, Name: path})
		if err != nil {
			return "", err
		}
		var doc storage.OpenAPIDocument
		if err := storage.DecodeOpenAPI(o.Data, &doc); err != nil {
			t.Fatal(err)
		}
		return doc.Document, nil
	}
	stored := func(want ...string) {
		t.Helper()
		idx := index()
		if len(idx.GroupVersions) != len(want) {
			t.Fatalf("index %v, want %v", idx.GroupVersions, want)
		}
		for _, p := range want {
			if _, err := document(p); err != nil {
				t.Fatalf("document %s: %v", p, err)
			}
		}
	}

	sel := synchronizer.Selection{Resources: resourcesIn("v1", "apps/v1", "big.example/v1", "bad.example/v1", "missing.example/v1")}
	err := syncOpenAPI(ctx, store, "east", storage.Unfenced, "v1.37.2", member, sel)
	if err == nil || !strings.Contains(err.Error(), "apis/big.example/v1: larger than") || !strings.Contains(err.Error(), "apis/bad.example/v1: not an OpenAPI document") {
		t.Fatalf("refused documents not named: %v", err)
	}
	stored("api/v1", "apis/apps/v1")
	if idx := index(); idx.MemberVersion != "v1.37.2" || idx.GroupVersions["api/v1"].Hash != storage.Digest([]byte(memberDoc("core 1"))) {
		t.Fatalf("index %+v", idx)
	}
	if doc, _ := document("api/v1"); !strings.Contains(doc, "core 1") {
		t.Fatalf("api/v1 stored as %s", doc)
	}

	// Unchanged: nothing fetched again, nothing written.
	sel.Resources = resourcesIn("v1", "apps/v1")
	rev, _, _ := store.Revision(ctx)
	if err := syncOpenAPI(ctx, store, "east", storage.Unfenced, "v1.37.2", member, sel); err != nil {
		t.Fatal(err)
	}
	if again, _, _ := store.Revision(ctx); again != rev || m.fetches("api/v1") != 1 || m.fetches("apis/apps/v1") != 1 {
		t.Fatalf("unchanged documents: revision %d -> %d, fetched api/v1 %d times, apps/v1 %d", rev, again, m.fetches("api/v1"), m.fetches("apis/apps/v1"))
	}

	// The member's api/v1 changes (its hash with it): only it is fetched.
	m.set("api/v1", "c2", memberDoc("core 2"))
	if err := syncOpenAPI(ctx, store, "east", storage.Unfenced, "v1.37.2", member, sel); err != nil {
		t.Fatal(err)
	}
	if doc, _ := document("api/v1"); !strings.Contains(doc, "core 2") || m.fetches("api/v1") != 2 || m.fetches("apis/apps/v1") != 1 {
		t.Fatalf("after a change: %s, fetched api/v1 %d times, apps/v1 %d", doc, m.fetches("api/v1"), m.fetches("apis/apps/v1"))
	}

	// A partial selection keeps what it lacks; a full one removes it.
	sel = synchronizer.Selection{Resources: resourcesIn("v1"), Partial: true}
	if err := syncOpenAPI(ctx, store, "east", storage.Unfenced, "v1.37.2", member, sel); err != nil {
		t.Fatal(err)
	}
	stored("api/v1", "apis/apps/v1")
	sel.Partial = false
	if err := syncOpenAPI(ctx, store, "east", storage.Unfenced, "v1.37.2", member, sel); err != nil {
		t.Fatal(err)
	}
	stored("api/v1")
	if _, err := document("apis/apps/v1"); !errors.Is(err, storage.ErrNotFound) {
		t.Fatalf("a deselected group version's document: %v", err)
	}

	// A member that serves no OpenAPI v3: nothing to serve.
	m.noIndex = true
	if err := syncOpenAPI(ctx, store, "east", storage.Unfenced, "v1.37.2", member, sel); err != nil {
		t.Fatal(err)
	}
	stored()
}

// TestOpenAPIChecksDue: a check is due at once for a new key, then only
// after the interval.
func TestOpenAPIChecksDue(t *testing.T) {
	var c openAPIChecks
	now := time.Unix(1000, 0)
	for _, step := range []struct {
		cluster, key string
		after        time.Duration
		want         bool
	}{
		{"east", "a", 0, true}, {"east", "a", time.Second, false}, {"west", "a", 0, true},
		{"east", "b", 0, true}, {"east", "b", 30 * time.Second, true}, {"east", "b", 29 * time.Second, false},
	} {
		now = now.Add(step.after)
		if got := c.due(step.cluster, step.key, 30*time.Second, now); got != step.want {
			t.Fatalf("%+v: due %v", step, got)
		}
	}
	c.forget("east")
	if !c.due("east", "b", 30*time.Second, now) {
		t.Fatal("a forgotten cluster is not due")
	}
}
