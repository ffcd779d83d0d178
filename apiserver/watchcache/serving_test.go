package watchcache_test

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"sync/atomic"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/panorama-io/panorama/apiserver/watchcache"
	"github.com/panorama-io/panorama/storage"
	"github.com/panorama-io/panorama/storage/storagetest"
)

var deployments = schema.GroupVersionResource{Group: "apps", Version: "v1", Resource: "deployments"}

// blockingStore holds every List of one resource until released, as a
// snapshot of a big resource read from a slow database would.
type blockingStore struct {
	storage.Interface
	gvr     schema.GroupVersionResource
	entered chan struct{}
	release chan struct{}
}

func (s *blockingStore) List(ctx context.Context, q *storage.ListQuery) (*storage.ListResult, error) {
	if q.GVR == s.gvr {
		select {
		case s.entered <- struct{}{}:
		default:
		}
		select {
		case <-s.release:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	return s.Interface.List(ctx, q)
}

func deployment(name, rv string) storage.Change {
	u := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "apps/v1", "kind": "Deployment",
		"metadata": map[string]any{"name": name, "namespace": "ns", "resourceVersion": rv}}}
	return storage.Upsert(u)
}

// run starts a cache over s and waits until it has applied the log.
func run(t testing.TB, s storage.Interface, opts watchcache.Options) *watchcache.Cache {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	c := watchcache.New(s, opts)
	go func() { _ = c.Run(ctx) }()
	cur, _, err := s.Revision(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := c.WaitForRevision(ctx, cur); err != nil {
		t.Fatal(err)
	}
	return c
}

// within fails the test when fn does not return in a generous bound.
func within[T any](t *testing.T, what string, fn func() T) T {
	t.Helper()
	done := make(chan T, 1)
	go func() { done <- fn() }()
	select {
	case v := <-done:
		return v
	case <-time.After(10 * time.Second):
		t.Fatalf("%s: still waiting after 10s", what)
		panic("unreachable")
	}
}

// TestLoadDoesNotStallOthers loads a resource whose snapshot read hangs:
// the watches and lists of another resource carry on, and the resource,
// once loaded, has the changes made while it loaded.
func TestLoadDoesNotStallOthers(t *testing.T) {
	base := storagetest.Backends()[0].Open(t)
	s := &blockingStore{Interface: base, gvr: deployments, entered: make(chan struct{}, 1), release: make(chan struct{})}
	apply(t, s, pod("a", "1", "web"))
	if _, err := s.ForCluster("east", storage.Unfenced).Apply(context.Background(), deployments, []storage.Change{deployment("d1", "1")}); err != nil {
		t.Fatal(err)
	}
	c := run(t, s, watchcache.Options{PollInterval: 50 * time.Millisecond})
	ctx := context.Background()
	w, err := c.Watch(ctx, &storage.ListQuery{GVR: pods}, watchcache.WatchOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	expect(t, next(t, w, 1), "ADDED a")

	type listed struct {
		objs []storage.Object
		rev  int64
		err  error
	}
	loading := make(chan listed, 1)
	go func() {
		objs, rev, err := c.List(ctx, &storage.ListQuery{GVR: deployments})
		loading <- listed{objs, rev, err}
	}()
	<-s.entered // the deployments' snapshot read hangs from here on

	// A change of the pods reaches their watch, and a new list and watch
	// of pods are served.
	apply(t, s, pod("b", "1", "web"))
	expect(t, next(t, w, 1), "ADDED b")
	got := within(t, "resourceVersion=0 list of pods while deployments load", func() listed {
		objs, rev, err := c.List(ctx, &storage.ListQuery{GVR: pods})
		return listed{objs, rev, err}
	})
	if got.err != nil || len(got.objs) != 2 {
		t.Fatalf("pods while deployments load: %v, %v", got.objs, got.err)
	}
	w2 := within(t, "watch of pods while deployments load", func() *watchcache.Watcher {
		w, err := c.Watch(ctx, &storage.ListQuery{GVR: pods}, watchcache.WatchOptions{})
		if err != nil {
			t.Error(err)
		}
		return w
	})
	expect(t, next(t, w2, 2), "ADDED a", "ADDED b")
	w2.Stop()

	// Changes of the deployments made during the load are caught up.
	rev, err := s.ForCluster("east", storage.Unfenced).Apply(ctx, deployments, []storage.Change{deployment("d2", "1")})
	if err != nil {
		t.Fatal(err)
	}
	if err := c.WaitForRevision(ctx, rev); err != nil {
		t.Fatal(err)
	}
	close(s.release)
	l := within(t, "deployments once released", func() listed { return <-loading })
	if l.err != nil || len(l.objs) != 2 || l.objs[0].Name != "d1" || l.objs[1].Name != "d2" || l.rev < rev {
		t.Fatalf("deployments: %v at %d (want d1, d2 at %d or later), %v", l.objs, l.rev, rev, l.err)
	}
	// And the tail keeps them current.
	dw, err := c.Watch(ctx, &storage.ListQuery{GVR: deployments}, watchcache.WatchOptions{ResourceVersion: rev})
	if err != nil {
		t.Fatal(err)
	}
	defer dw.Stop()
	if _, err := s.ForCluster("east", storage.Unfenced).Apply(ctx, deployments, []storage.Change{storage.Delete("ns", "d1")}); err != nil {
		t.Fatal(err)
	}
	expect(t, next(t, dw, 1), "DELETED d1")
}

// TestSlowWatchCatchesUp: a watch whose client reads nothing while many
// more changes than its buffer are applied, in one write and one by one,
// still receives every one of them in order, as does a watch with a
// selector (the changes' ADDED and DELETED as objects enter and leave
// it), and a watch that reads along receives them as they come.
func TestSlowWatchCatchesUp(t *testing.T) {
	s := storagetest.Backends()[0].Open(t)
	apply(t, s, pod("a", "1", "web"))
	const buffer = 5
	c := run(t, s, watchcache.Options{PollInterval: 50 * time.Millisecond, WatchBuffer: buffer})
	ctx := context.Background()
	from := c.Revision()
	watch := func(q *storage.ListQuery) *watchcache.Watcher {
		w, err := c.Watch(ctx, q, watchcache.WatchOptions{ResourceVersion: from})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(w.Stop)
		return w
	}
	fast := watch(&storage.ListQuery{GVR: pods})
	slow := watch(&storage.ListQuery{GVR: pods})
	webOnly, _ := labels.Parse("app=web")
	reqs, _ := webOnly.Requirements()
	web := watch(&storage.ListQuery{GVR: pods, Labels: reqs})
	var want, wantWeb []string
	// One write of 4 buffers' worth, as a group commit publishes them.
	var burst []storage.Change
	for i := range 4 * buffer {
		burst = append(burst, pod(fmt.Sprintf("b%02d", i), "1", "web"))
		want = append(want, fmt.Sprintf("ADDED b%02d", i))
	}
	apply(t, s, burst...)
	wantWeb = append(wantWeb, want...)
	expect(t, next(t, fast, len(burst)), want...)
	// Then one by one, half of them moving out of app=web.
	for i := range 3 * buffer {
		app := "web"
		if i%2 == 1 {
			app = "db"
		}
		apply(t, s, pod(fmt.Sprintf("b%02d", i), "2", app))
		ev := fmt.Sprintf("MODIFIED b%02d", i)
		want = append(want, ev)
		if app == "db" {
			ev = fmt.Sprintf("DELETED b%02d", i)
		}
		wantWeb = append(wantWeb, ev)
		expect(t, next(t, fast, 1), want[len(want)-1])
	}
	expect(t, next(t, slow, len(want)), want...)
	expect(t, next(t, web, len(wantWeb)), wantWeb...)
	// Caught up, the slow watch queues again.
	apply(t, s, pod("last", "1", "web"))
	expect(t, next(t, slow, 1), "ADDED last")
}

// TestCaughtUpWatchBookmark: a watch with bookmarks that caught up on
// changes the last of which was not for it is told the revision it
// caught up to, rather than staying at its last event until the next.
func TestCaughtUpWatchBookmark(t *testing.T) {
	s := storagetest.Backends()[0].Open(t)
	apply(t, s, pod("a", "1", "web"))
	c := run(t, s, watchcache.Options{PollInterval: 50 * time.Millisecond, WatchBuffer: 2})
	ctx := context.Background()
	webOnly, _ := labels.Parse("app=web")
	reqs, _ := webOnly.Requirements()
	w, err := c.Watch(ctx, &storage.ListQuery{GVR: pods, Labels: reqs},
		watchcache.WatchOptions{ResourceVersion: c.Revision(), Bookmarks: true, BookmarkInterval: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	var burst []storage.Change
	var want []string
	for i := range 6 {
		burst = append(burst, pod(fmt.Sprintf("w%d", i), "1", "web"))
		want = append(want, fmt.Sprintf("ADDED w%d", i))
	}
	apply(t, s, burst...)
	last := apply(t, s, pod("d", "1", "db"))
	if err := c.WaitForRevision(ctx, last); err != nil {
		t.Fatal(err)
	}
	expect(t, next(t, w, len(want)+1), append(want, fmt.Sprintf("BOOKMARK %d", last))...)
}

// TestSlowWatchIsClosed: a watch whose client reads nothing while the ring
// of recent changes moves past what it was sent is closed, after what it
// had queued, while another watch of the same resource receives every
// change.
func TestSlowWatchIsClosed(t *testing.T) {
	s := storagetest.Backends()[0].Open(t)
	apply(t, s, pod("a", "1", "web"))
	const buffer, ring = 5, 20
	c := run(t, s, watchcache.Options{PollInterval: 50 * time.Millisecond, WatchBuffer: buffer, RingSize: ring})
	ctx := context.Background()
	from := c.Revision()
	fast, err := c.Watch(ctx, &storage.ListQuery{GVR: pods}, watchcache.WatchOptions{ResourceVersion: from})
	if err != nil {
		t.Fatal(err)
	}
	defer fast.Stop()
	slow, err := c.Watch(ctx, &storage.ListQuery{GVR: pods}, watchcache.WatchOptions{ResourceVersion: from})
	if err != nil {
		t.Fatal(err)
	}
	defer slow.Stop()
	const changes = 2 * ring
	for i := range changes {
		apply(t, s, pod(fmt.Sprintf("p%02d", i), "1", "web"))
		expect(t, next(t, fast, 1), fmt.Sprintf("ADDED p%02d", i))
	}
	received := 0
	within(t, "the slow watch to close", func() bool {
		for range slow.ResultChan() {
			received++
		}
		return true
	})
	if received >= changes {
		t.Fatalf("the slow watch received all %d changes, want it closed after about %d", received, buffer)
	}
}

// TestIdleWatchMemory measures what an idle watch holds: a small buffer,
// not a queue as large as the ring.
func TestIdleWatchMemory(t *testing.T) {
	s := storagetest.Backends()[0].Open(t)
	apply(t, s, pod("a", "1", "web"))
	c := run(t, s, watchcache.Options{PollInterval: 50 * time.Millisecond})
	ctx := context.Background()
	if _, _, err := c.List(ctx, &storage.ListQuery{GVR: pods}); err != nil { // load pods first
		t.Fatal(err)
	}
	from := c.Revision()
	const n = 200
	inUse := func() uint64 {
		runtime.GC()
		var m runtime.MemStats
		runtime.ReadMemStats(&m)
		return m.HeapAlloc + m.StackInuse
	}
	before := inUse()
	watches := make([]*watchcache.Watcher, n)
	for i := range watches {
		w, err := c.Watch(ctx, &storage.ListQuery{GVR: pods}, watchcache.WatchOptions{ResourceVersion: from, Bookmarks: true})
		if err != nil {
			t.Fatal(err)
		}
		watches[i] = w
	}
	after := inUse()
	perWatch := (int64(after) - int64(before)) / n
	t.Logf("an idle watch holds %d bytes", perWatch)
	if perWatch > 64<<10 {
		t.Errorf("an idle watch holds %d bytes, want under 64 KiB", perWatch)
	}
	for _, w := range watches {
		w.Stop()
	}
}

// TestWatchLimits refuses watches beyond the total and per-user limits,
// and counts a stopped watch out.
func TestWatchLimits(t *testing.T) {
	s := storagetest.Backends()[0].Open(t)
	apply(t, s, pod("a", "1", "web"))
	c := run(t, s, watchcache.Options{PollInterval: 50 * time.Millisecond, MaxWatches: 3, MaxWatchesPerUser: 2})
	ctx := context.Background()
	watchAs := func(user string) (*watchcache.Watcher, error) {
		return c.Watch(ctx, &storage.ListQuery{GVR: pods}, watchcache.WatchOptions{ResourceVersion: c.Revision(), User: user})
	}
	refused := func(err error, user string) {
		t.Helper()
		var tooMany *watchcache.TooManyWatchesError
		if !errors.As(err, &tooMany) || tooMany.User != user {
			t.Fatalf("want a TooManyWatchesError for user %q, got %v", user, err)
		}
	}
	alice1, err := watchAs("alice")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := watchAs("alice"); err != nil {
		t.Fatal(err)
	}
	_, err = watchAs("alice")
	refused(err, "alice")
	if _, err := watchAs("bob"); err != nil {
		t.Fatal(err)
	}
	_, err = watchAs("carol")
	refused(err, "") // the total
	alice1.Stop()
	within(t, "a stopped watch to be counted out", func() error {
		for {
			w, err := watchAs("carol")
			if err == nil {
				w.Stop()
				return nil
			}
			time.Sleep(10 * time.Millisecond)
		}
	})
}

// TestWatchFutureRevision: a watch at a revision the cache has not reached
// waits for it, and fails as kube-apiserver's does when it does not come.
func TestWatchFutureRevision(t *testing.T) {
	s := storagetest.Backends()[0].Open(t)
	cur := apply(t, s, pod("a", "1", "web"))
	c := run(t, s, watchcache.Options{PollInterval: 50 * time.Millisecond, FreshnessTimeout: 100 * time.Millisecond})
	ctx := context.Background()
	_, err := c.Watch(ctx, &storage.ListQuery{GVR: pods}, watchcache.WatchOptions{ResourceVersion: cur + 100})
	var tooLarge *storage.TooLargeError
	if !errors.As(err, &tooLarge) || tooLarge.Requested != cur+100 || tooLarge.Current != cur {
		t.Fatalf("watch at %d with the cache at %d: %v", cur+100, cur, err)
	}

	// A watch at the next revision starts once it is written.
	patient := run(t, s, watchcache.Options{PollInterval: 50 * time.Millisecond, FreshnessTimeout: time.Hour})
	watchNext := func(opts watchcache.WatchOptions, name string) (*watchcache.Watcher, int64) {
		started := make(chan *watchcache.Watcher, 1)
		go func() {
			w, err := patient.Watch(ctx, &storage.ListQuery{GVR: pods}, opts)
			if err != nil {
				t.Error(err)
			}
			started <- w
		}()
		rev := apply(t, s, pod(name, "1", "web"))
		if rev != opts.ResourceVersion {
			t.Fatalf("wrote %d, want %d", rev, opts.ResourceVersion)
		}
		return within(t, "a watch at the next revision", func() *watchcache.Watcher { return <-started }), rev
	}
	w, _ := watchNext(watchcache.WatchOptions{ResourceVersion: cur + 1}, "b")
	cur = apply(t, s, pod("c", "1", "web"))
	expect(t, next(t, w, 1), "ADDED c")
	w.Stop()
	// The watch-list protocol: the state sent is at least at the revision.
	w, cur = watchNext(watchcache.WatchOptions{ResourceVersion: cur + 1, SendInitialEvents: true, Bookmarks: true, BookmarkInterval: time.Hour}, "d")
	expect(t, next(t, w, 5), "ADDED a", "ADDED b", "ADDED c", "ADDED d", fmt.Sprintf("BOOKMARK %d end", cur))
	w.Stop()
}

// compactingStore fails the next read of the log as too old, as when
// compaction overtakes the tail.
type compactingStore struct {
	storage.Interface
	overtaken atomic.Bool
}

func (s *compactingStore) Changes(ctx context.Context, since int64, limit int) ([]storage.LoggedChange, int64, error) {
	if s.overtaken.CompareAndSwap(true, false) {
		return nil, 0, &storage.TooOldError{Requested: since, Compacted: since + 1}
	}
	return s.Interface.Changes(ctx, since, limit)
}

// TestReset: when compaction overtakes the tail, watches end and the
// resources are loaded again, current.
func TestReset(t *testing.T) {
	s := &compactingStore{Interface: storagetest.Backends()[0].Open(t)}
	apply(t, s, pod("a", "1", "web"))
	c := run(t, s, watchcache.Options{PollInterval: 50 * time.Millisecond})
	ctx := context.Background()
	w, err := c.Watch(ctx, &storage.ListQuery{GVR: pods}, watchcache.WatchOptions{})
	if err != nil {
		t.Fatal(err)
	}
	expect(t, next(t, w, 1), "ADDED a")
	s.overtaken.Store(true)
	rev := apply(t, s, pod("b", "1", "web"))
	within(t, "the watch to end at the reset", func() bool {
		for range w.ResultChan() {
		}
		return true
	})
	if err := c.WaitForRevision(ctx, rev); err != nil {
		t.Fatal(err)
	}
	objs, _, err := c.List(ctx, &storage.ListQuery{GVR: pods})
	if err != nil || len(objs) != 2 {
		t.Fatalf("list after the reset: %v, %v", objs, err)
	}
	w, err = c.Watch(ctx, &storage.ListQuery{GVR: pods}, watchcache.WatchOptions{ResourceVersion: rev})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	apply(t, s, storage.Delete("ns", "a"))
	expect(t, next(t, w, 1), "DELETED a")
}
