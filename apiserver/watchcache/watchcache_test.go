package watchcache_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/panorama-io/panorama/apiserver/watchcache"
	"github.com/panorama-io/panorama/storage"
	"github.com/panorama-io/panorama/storage/storagetest"
)

var pods = schema.GroupVersionResource{Version: "v1", Resource: "pods"}

func pod(name, rv, app string) storage.Change {
	u := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "Pod",
		"metadata": map[string]any{"name": name, "namespace": "ns", "resourceVersion": rv, "labels": map[string]any{"app": app}}}}
	return storage.Upsert(u)
}

func apply(t *testing.T, s storage.Interface, changes ...storage.Change) int64 {
	t.Helper()
	rev, err := s.ForCluster("east", storage.Unfenced).Apply(context.Background(), pods, changes)
	if err != nil {
		t.Fatal(err)
	}
	return rev
}

// next reads n events as "TYPE name" (bookmarks as "BOOKMARK rev").
func next(t *testing.T, w *watchcache.Watcher, n int) []string {
	t.Helper()
	var out []string
	for range n {
		select {
		case e, ok := <-w.ResultChan():
			if !ok {
				t.Fatalf("watch closed after %v", out)
			}
			if e.Object == nil {
				s := fmt.Sprintf("BOOKMARK %d", e.Revision)
				if e.InitialEventsEnd {
					s += " end"
				}
				out = append(out, s)
			} else {
				out = append(out, fmt.Sprintf("%s %s", e.Type, e.Object.Name))
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("no event after %v", out)
		}
	}
	return out
}

func expect(t *testing.T, got []string, want ...string) {
	t.Helper()
	if strings.Join(got, ", ") != strings.Join(want, ", ") {
		t.Fatalf("events:\n got %v\nwant %v", got, want)
	}
}

func TestWatchCache(t *testing.T) {
	// One backend is enough: the cache only reads the storage interface. A
	// second store on the same database plays another replica's writer.
	opts := storagetest.Backends()[0].Options(t)
	s, replica := storagetest.OpenStore(t, opts), storagetest.OpenStore(t, opts)
	apply(t, s, pod("a", "1", "web"), pod("b", "1", "db"))
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	c := watchcache.New(s, watchcache.Options{PollInterval: 50 * time.Millisecond, RingSize: 4})
	go func() { _ = c.Run(ctx) }()
	if err := c.WaitForRevision(ctx, 2); err != nil {
		t.Fatal(err)
	}
	web, _ := labels.Parse("app=web")
	reqs, _ := web.Requirements()
	q := &storage.ListQuery{GVR: pods, Labels: reqs}

	objs, rev, err := c.List(ctx, q)
	if err != nil || len(objs) != 1 || objs[0].Name != "a" || rev != 2 {
		t.Fatalf("list: %v at %d, %v", objs, rev, err)
	}

	// The watch-list protocol: state, then the end bookmark, then changes,
	// with objects entering and leaving the selection.
	w, err := c.Watch(ctx, q, watchcache.WatchOptions{SendInitialEvents: true, Bookmarks: true, BookmarkInterval: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	expect(t, next(t, w, 2), "ADDED a", "BOOKMARK 2 end")
	apply(t, s, pod("b", "2", "web"))      // 3: b enters
	apply(t, s, pod("a", "2", "db"))       // 4: a leaves
	apply(t, s, pod("c", "1", "db"))       // 5: not selected
	apply(t, s, pod("b", "3", "web"))      // 6: b modified
	apply(t, s, storage.Delete("ns", "b")) // 7
	expect(t, next(t, w, 4), "ADDED b", "DELETED a", "MODIFIED b", "DELETED b")
	w.Stop()

	// Resuming from a revision replays from the ring; the ring holds 4
	// changes, so a revision before them is too old.
	if err := c.WaitForRevision(ctx, 7); err != nil {
		t.Fatal(err)
	}
	w, err = c.Watch(ctx, &storage.ListQuery{GVR: pods}, watchcache.WatchOptions{ResourceVersion: 4})
	if err != nil {
		t.Fatal(err)
	}
	expect(t, next(t, w, 3), "ADDED c", "MODIFIED b", "DELETED b")
	w.Stop()
	if _, err := c.Watch(ctx, &storage.ListQuery{GVR: pods}, watchcache.WatchOptions{ResourceVersion: 2}); !storage.IsTooOld(err) {
		t.Fatalf("watch from an evicted revision: %v", err)
	}

	// Legacy watch from 0: current state as ADDED, then changes; bookmarks
	// carry the revision.
	w, err = c.Watch(ctx, &storage.ListQuery{GVR: pods}, watchcache.WatchOptions{Bookmarks: true, BookmarkInterval: time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	expect(t, next(t, w, 2), "ADDED a", "ADDED c")
	apply(t, s, pod("d", "1", "web"))
	got := next(t, w, 1)
	for got[0] != "ADDED d" {
		if !strings.HasPrefix(got[0], "BOOKMARK 7") {
			t.Fatalf("unexpected %v before ADDED d", got)
		}
		got = next(t, w, 1)
	}
	// A change of another resource moves the revision: a bookmark tells the
	// watcher, so that it resumes after it.
	other := schema.GroupVersionResource{Group: "apps", Version: "v1", Resource: "deployments"}
	if _, err := s.ForCluster("east", storage.Unfenced).Apply(ctx, other, []storage.Change{pod("dep", "1", "web")}); err != nil {
		t.Fatal(err)
	}
	expect(t, next(t, w, 1), "BOOKMARK 9")
	// Writes through another store (no in-process notification) arrive by poll.
	apply(t, replica, storage.Delete("ns", "a"))
	got = next(t, w, 1)
	for strings.HasPrefix(got[0], "BOOKMARK") {
		got = next(t, w, 1)
	}
	expect(t, got, "DELETED a")
	cancel()
	for range w.ResultChan() {
	}
}

// TestWatchCacheRemembers starts a cache after changes were made, as after
// a restart: watches from before its start are served from the log.
func TestWatchCacheRemembers(t *testing.T) {
	s := storagetest.Backends()[0].Open(t)
	apply(t, s, pod("a", "1", "web"))      // 1
	apply(t, s, pod("b", "1", "db"))       // 2
	apply(t, s, pod("b", "2", "web"))      // 3: b enters app=web
	apply(t, s, pod("a", "2", "db"))       // 4: a leaves
	apply(t, s, storage.Delete("ns", "b")) // 5
	apply(t, s, pod("c", "1", "web"))      // 6
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	for _, ring := range []int{10, 3} {
		c := watchcache.New(s, watchcache.Options{PollInterval: 50 * time.Millisecond, RingSize: ring})
		go func() { _ = c.Run(ctx) }()
		if err := c.WaitForRevision(ctx, 6); err != nil {
			t.Fatal(err)
		}
		web, _ := labels.Parse("app=web")
		reqs, _ := web.Requirements()
		q := &storage.ListQuery{GVR: pods, Labels: reqs}
		from := int64(2)
		want := []string{"ADDED b", "DELETED a", "DELETED b", "ADDED c"}
		if ring == 3 {
			from, want = 3, want[1:]
			if _, err := c.Watch(ctx, q, watchcache.WatchOptions{ResourceVersion: 2}); !storage.IsTooOld(err) {
				t.Fatalf("ring of 3: watch from 2: %v", err)
			}
		}
		w, err := c.Watch(ctx, q, watchcache.WatchOptions{ResourceVersion: from})
		if err != nil {
			t.Fatalf("ring of %d: watch from %d: %v", ring, from, err)
		}
		expect(t, next(t, w, len(want)), want...)
		w.Stop()
	}
}
