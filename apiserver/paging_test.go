package apiserver

import (
	"context"
	"fmt"
	"maps"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	searchv1alpha1 "github.com/panorama-io/panorama/apis/search/v1alpha1"
	"github.com/panorama-io/panorama/storage"
)

// readCountingStore counts the reads a handler asks of its store.
type readCountingStore struct {
	storage.Interface
	mu    sync.Mutex
	calls map[string]int
}

func (s *readCountingStore) count(name string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.calls[name]++
}

// take returns the calls counted since the last take.
func (s *readCountingStore) take() map[string]int {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := s.calls
	s.calls = map[string]int{}
	return out
}

func (s *readCountingStore) List(ctx context.Context, q *storage.ListQuery) (*storage.ListResult, error) {
	s.count("List")
	return s.Interface.List(ctx, q)
}

func (s *readCountingStore) Get(ctx context.Context, key storage.Key) (*storage.Object, error) {
	s.count("Get")
	return s.Interface.Get(ctx, key)
}

func (s *readCountingStore) Revision(ctx context.Context) (int64, int64, error) {
	s.count("Revision")
	return s.Interface.Revision(ctx)
}

// LatestRevision is the read of the store's revision that a consistent
// read makes (storage.Reader), counted as one of Revision.
func (s *readCountingStore) LatestRevision(ctx context.Context) (int64, int64, error) {
	s.count("Revision")
	return s.Interface.LatestRevision(ctx)
}

func (s *readCountingStore) Count(ctx context.Context, q *storage.CountQuery) (*storage.CountResult, error) {
	s.count("Count")
	return s.Interface.Count(ctx, q)
}

func (s *readCountingStore) Fields(ctx context.Context) (*storage.FieldSet, error) {
	s.count("Fields")
	return s.Interface.Fields(ctx)
}

// TestPagedList follows a paged list across clusters to its end, as
// client-go's pager does: every page is at the first page's
// resourceVersion whatever is written meanwhile, the pages together are
// the whole list in order, remainingItemCount counts what follows (when
// asked). A page the store serves (with remainingItemCount) costs it one
// list (and the cached fields) and no other read; one the watch cache
// serves, once it holds the resource, costs the store one read of its
// revision for the first page and none for the later ones, at a revision
// the cache has applied. A token whose revision was compacted since is
// 410 Expired, as kube-apiserver answers it, from either: from the cache
// once its tail has read the compaction.
func TestPagedList(t *testing.T) {
	h, store := testHandler(t)
	raw := store
	counting := &readCountingStore{Interface: raw, calls: map[string]int{}}
	h.store = counting // the watch cache keeps the store itself: only the handler's reads are counted
	mux := http.NewServeMux()
	mux.Handle(searchv1alpha1.ViewsPrefix+"/", h)
	srv := httptest.NewServer(asUser(mux))
	t.Cleanup(srv.Close)
	base := srv.URL + searchv1alpha1.ViewPath("") + "/api/v1/pods"

	var want []string
	for i, cluster := range []string{"west", "east", "west", "east", "east", "west", "east"} {
		name := fmt.Sprintf("p%d", i)
		putPod(t, raw, cluster, name)
		want = append(want, cluster+"/"+name)
	}
	slices.Sort(want) // the order of a list: cluster, namespace, name

	type page struct {
		rv, cont  string
		remaining *int64
		names     []string
	}
	get := func(query string) (int, map[string]any, page) {
		t.Helper()
		code, _, body := getJSON(t, base+"?"+query, "")
		if code != http.StatusOK {
			return code, body, page{}
		}
		meta := body["metadata"].(map[string]any)
		p := page{rv: meta["resourceVersion"].(string)}
		p.cont, _ = meta["continue"].(string)
		if n, ok := meta["remainingItemCount"].(float64); ok {
			r := int64(n)
			p.remaining = &r
		}
		for _, it := range body["items"].([]any) {
			m := it.(map[string]any)["metadata"].(map[string]any)
			p.names = append(p.names, m["annotations"].(map[string]any)[storage.ClusterAnnotation].(string)+"/"+m["name"].(string))
		}
		return code, body, p
	}

	counting.take()
	_, _, first := get("limit=3&withRemainingCount=true")
	if first.cont == "" || first.remaining == nil || *first.remaining != 4 || len(first.names) != 3 {
		t.Fatalf("first page: %+v, want 3 items, a continue token and 4 remaining", first)
	}
	if calls := counting.take(); !maps.Equal(calls, map[string]int{"List": 1, "Fields": 1}) {
		t.Errorf("the first page asked the store %v, want one list and the fields", calls)
	}
	putPod(t, raw, "east", "p9") // after the first page's revision: in no page
	got, cont := first.names, first.cont
	var second string
	for cont != "" {
		if second == "" {
			second = cont
		}
		code, body, p := get("limit=3&withRemainingCount=true&continue=" + url.QueryEscape(cont))
		if code != http.StatusOK {
			t.Fatalf("continuing: %d %v", code, body)
		}
		if p.rv != first.rv {
			t.Errorf("a page at resourceVersion %s, the first page's is %s", p.rv, first.rv)
		}
		if calls := counting.take(); !maps.Equal(calls, map[string]int{"List": 1, "Fields": 1}) {
			t.Errorf("a continued page asked the store %v, want one list and the fields", calls)
		}
		left := int64(len(want) - len(got) - len(p.names))
		switch {
		case p.cont != "" && (p.remaining == nil || *p.remaining != left):
			t.Errorf("page %v: remainingItemCount %v, want %d", p.names, p.remaining, left)
		case p.cont == "" && p.remaining != nil:
			t.Errorf("the last page has remainingItemCount %d", *p.remaining)
		}
		got, cont = append(got, p.names...), p.cont
	}
	if strings.Join(got, ",") != strings.Join(want, ",") {
		t.Fatalf("pages listed %v, want %v", got, want)
	}

	// Without remainingItemCount, the first page starts loading the
	// resource into the cache, which serves the pages from then on.
	want = append(want, "east/p9")
	slices.Sort(want)
	get("limit=3")
	for !h.cache.Holds(podsGVR) {
		time.Sleep(10 * time.Millisecond)
	}
	counting.take()
	got, cont = nil, ""
	var cached []string // the continue tokens
	for {
		code, body, p := get("limit=3&continue=" + url.QueryEscape(cont))
		if code != http.StatusOK {
			t.Fatalf("a page from the cache: %d %v", code, body)
		}
		asked := map[string]int{"Revision": 1, "Fields": 1}
		if cont != "" {
			asked = map[string]int{"Fields": 1}
		}
		if calls := counting.take(); !maps.Equal(calls, asked) {
			t.Errorf("a page from the cache (continue %q) asked the store %v, want %v", cont, calls, asked)
		}
		if cont == "" {
			putPod(t, raw, "east", "p10") // in no page either
		}
		got, cont = append(got, p.names...), p.cont
		if cont == "" {
			break
		}
		cached = append(cached, cont)
	}
	if strings.Join(got, ",") != strings.Join(want, ",") {
		t.Fatalf("pages from the cache listed %v, want %v", got, want)
	}

	cur, _, err := raw.Revision(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if err := raw.Compact(context.Background(), cur, false); err != nil {
		t.Fatal(err)
	}
	// A first page waits for the cache to apply the store's latest
	// revision, read by its tail with the compaction.
	putPod(t, raw, "east", "p11")
	if code, body, _ := get("limit=3"); code != http.StatusOK {
		t.Fatalf("a first page after the compaction: %d %v", code, body)
	}
	for _, query := range []string{"withRemainingCount=true&continue=" + url.QueryEscape(second), "continue=" + url.QueryEscape(cached[0])} {
		code, body, _ := get("limit=3&" + query)
		if code != http.StatusGone || body["reason"] != "Expired" || !strings.Contains(body["message"].(string), "continue parameter is too old") {
			t.Fatalf("continuing a compacted list (%s): %d %v, want 410 Expired", query, code, body)
		}
	}
}
