package watchcache_test

import (
	"context"
	"crypto/sha256"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/spf13/pflag"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/panorama-io/panorama/apiserver/watchcache"
	"github.com/panorama-io/panorama/storage"
	"github.com/panorama-io/panorama/storage/storagetest"
)

// TestDefaultMemoryBudget: the budget whose Go soft limit is nine tenths
// of the container's memory limit (containermemory.Limit reads it), at
// least a quarter of the limit; none without one.
func TestDefaultMemoryBudget(t *testing.T) {
	limited := func(limit int64) string {
		root := t.TempDir()
		if err := os.WriteFile(filepath.Join(root, "memory.max"), []byte(strconv.FormatInt(limit, 10)+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		return root
	}
	budgetUnder := func(limit int64) int64 { return watchcache.DefaultMemoryBudget(limited(limit)) }
	for _, limit := range []int64{1 << 30, 4 << 30, 64 << 30} {
		budget := budgetUnder(limit)
		// Rounded down to the budget's tenths.
		if soft, nineTenths := watchcache.GoMemoryLimit(budget), limit/10*9; soft > nineTenths || soft < nineTenths-13 {
			t.Errorf("under a %d MiB limit: budget %d MiB, whose soft limit %d is not nine tenths of the limit, %d", limit>>20, budget>>20, soft, nineTenths)
		}
	}
	// 0.9 × 512 MiB leaves too little beside the server's 300 MiB.
	if got := budgetUnder(512 << 20); got != 128<<20 {
		t.Errorf("under a 512 MiB limit: budget %d MiB, want a quarter, 128 MiB", got>>20)
	}
	if got := watchcache.SharedMemoryBudget(limited(4 << 30)); got != 1<<30 {
		t.Errorf("beside the controller under a 4 GiB limit: budget %d MiB, want a quarter, 1024 MiB", got>>20)
	}
	if got := watchcache.DefaultMemoryBudget(t.TempDir()); got != 0 {
		t.Errorf("without a limit: budget %d, want none", got)
	}
}

// TestGoMemoryLimit: 1.3 times the budget and 300 MiB for the rest of the
// server (issue 35's bound on its resident memory); none for no budget.
func TestGoMemoryLimit(t *testing.T) {
	for _, tc := range []struct{ budget, want int64 }{
		{0, 0},
		{1000 << 20, 1300<<20 + 300<<20},
		{math.MaxInt64, math.MaxInt64}, // --watch-cache-memory-budget=8Ei
	} {
		if got := watchcache.GoMemoryLimit(tc.budget); got != tc.want {
			t.Errorf("budget %d: soft limit %d, want %d", tc.budget, got, tc.want)
		}
	}
}

// TestMemoryBudgetFlag: the flag takes a quantity; a negative one is
// refused.
func TestMemoryBudgetFlag(t *testing.T) {
	for _, tc := range []struct {
		arg     string
		want    int64
		invalid bool
	}{{"64Mi", 64 << 20, false}, {"1G", 1e9, false}, {"0", 0, false}, {"-1Mi", -1 << 20, true}} {
		o := watchcache.NewOptions()
		fs := pflag.NewFlagSet("test", pflag.ContinueOnError)
		o.AddFlags(fs)
		if err := fs.Parse([]string{"--watch-cache-memory-budget=" + tc.arg}); err != nil {
			t.Fatalf("%s: %v", tc.arg, err)
		}
		if o.MemoryBudget != tc.want {
			t.Errorf("%s: %d bytes, want %d", tc.arg, o.MemoryBudget, tc.want)
		}
		if errs := o.Validate(); (len(errs) > 0) != tc.invalid {
			t.Errorf("%s: errors %v, want some: %v", tc.arg, errs, tc.invalid)
		}
	}
}

// budgeted are the resources of the budget's tests, each holding the same
// pods.
var budgeted = []schema.GroupVersionResource{
	{Group: "a.example.com", Version: "v1", Resource: "pods"},
	{Group: "b.example.com", Version: "v1", Resource: "pods"},
	{Group: "c.example.com", Version: "v1", Resource: "pods"},
}

// writeBudgeted writes round of pods keys to every budgeted resource; it
// returns the revision after.
func writeBudgeted(t *testing.T, s storage.Interface, round int, keys []int, deletes ...int) int64 {
	t.Helper()
	var rev int64
	for _, gvr := range budgeted {
		rev = writePods(t, s, gvr, round, keys, deletes...)
	}
	return rev
}

// oneResourceBudget is a budget that holds one budgeted resource and not
// two: what a cache holds of one, and half again.
func oneResourceBudget(t *testing.T, s storage.Interface) int64 {
	t.Helper()
	c := run(t, s, watchcache.Options{})
	if _, _, err := c.List(context.Background(), &storage.ListQuery{GVR: budgeted[0]}); err != nil {
		t.Fatal(err)
	}
	return watchcache.HeldBytes(c) * 3 / 2
}

// held spells which budgeted resources c holds.
func held(c *watchcache.Cache) string {
	var out []string
	for _, gvr := range budgeted {
		if c.Holds(gvr) {
			out = append(out, gvr.Group[:1])
		}
	}
	return strings.Join(out, ",")
}

// answers spells every answer of q the way r gives them: the whole list,
// its pages of 7 by continue token, and its counts by tier.
func answers(t *testing.T, r reader, q storage.ListQuery) string {
	t.Helper()
	ctx := context.Background()
	var b strings.Builder
	list, err := r.List(ctx, &q)
	if err != nil {
		return "list: " + err.Error()
	}
	fmt.Fprintf(&b, "list at %d:\n%s", list.Revision, objectLines(list.Objects))
	pq := q
	pq.Limit = 7
	for {
		page, err := r.List(ctx, &pq)
		if err != nil {
			return b.String() + "page: " + err.Error()
		}
		fmt.Fprintf(&b, "page at %d: %s\n", page.Revision, pageKeys(page))
		if page.Continue == "" {
			break
		}
		pq.Continue = page.Continue
	}
	if q.Revision == 0 {
		res, err := r.Count(ctx, countQuery(t, q, 0, "label:tier"))
		if err != nil {
			return b.String() + "count: " + err.Error()
		}
		b.WriteString(spell(res))
	}
	return b.String()
}

// reader lists and counts, as the store or Reads do.
type reader interface {
	List(ctx context.Context, q *storage.ListQuery) (*storage.ListResult, error)
	Count(ctx context.Context, q *storage.CountQuery) (*storage.CountResult, error)
}

// consistentReads reads through Reads, consistently.
type consistentReads struct{ *watchcache.Reads }

func (r consistentReads) List(ctx context.Context, q *storage.ListQuery) (*storage.ListResult, error) {
	return r.Reads.List(ctx, q, watchcache.Freshness{})
}

func (r consistentReads) Count(ctx context.Context, q *storage.CountQuery) (*storage.CountResult, error) {
	return r.Reads.Count(ctx, q, watchcache.Freshness{})
}

// TestScanKeepsWhatItHolds lists resources in turn, over and over, under
// a budget that holds one of them: the first one read stays held, rather
// than each one read next being loaded to evict it (the others are read
// no more often); a resource read more often is then loaded, and evicts
// it. Every answer, cached, evicted or not loaded, at the latest
// revision, at an earlier one and below the compacted one, is the
// store's.
func TestScanKeepsWhatItHolds(t *testing.T) {
	storagetest.ForEach(t, func(t *testing.T, b storagetest.Backend) {
		s := b.Open(t)
		ctx := context.Background()
		all := firstPods(60)
		early := writeBudgeted(t, s, 1, all)
		writeBudgeted(t, s, 2, all[:20], 40, 41)
		c := run(t, s, watchcache.Options{MemoryBudget: oneResourceBudget(t, s)})
		reads := consistentReads{watchcache.NewReads(s, c)}
		sel := requirements(t, "tier=front")
		read := func(round int, gvr schema.GroupVersionResource) {
			t.Helper()
			for _, q := range []storage.ListQuery{
				{GVR: gvr}, {GVR: gvr, Labels: sel}, {GVR: gvr, Namespaces: []string{"ns-1"}}, {GVR: gvr, Revision: early},
			} {
				for range 3 {
					if got, want := answers(t, reads, q), answers(t, s, q); got != want {
						t.Fatalf("round %d, %+v: through the cache\n%s\nthe store\n%s", round, q, got, want)
					}
				}
			}
		}
		for round, gvr := range append(budgeted, budgeted...) {
			read(round, gvr)
			if round == 0 {
				// Its first page started its load, without waiting for it.
				if _, _, err := c.List(ctx, &storage.ListQuery{GVR: gvr}); err != nil {
					t.Fatal(err)
				}
			}
			if got := held(c); got != "a" {
				t.Errorf("round %d, %s read: the cache holds %q, want a alone", round, gvr.Group[:1], got)
			}
		}
		hot := budgeted[2]
		for round := range 4 {
			read(round, hot)
		}
		if _, _, err := c.List(ctx, &storage.ListQuery{GVR: hot}); err != nil {
			t.Fatalf("listing the resource read most: %v", err)
		}
		if got := held(c); got != "c" {
			t.Errorf("the cache holds %q, want c alone", got)
		}
		read(0, budgeted[0])
		cur, _, err := s.Revision(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if err := s.Compact(ctx, cur, false); err != nil {
			t.Fatal(err)
		}
		q := storage.ListQuery{GVR: budgeted[0], Revision: early, Limit: 5}
		if _, err := reads.List(ctx, &q); !storage.IsTooOld(err) {
			t.Errorf("a list below the compacted revision: %v, want too old", err)
		}
	})
}

// blockingHistory holds the read of one resource's history until
// released: a load of it then has read its objects, and not published
// them.
type blockingHistory struct {
	storage.Interface
	gvr     schema.GroupVersionResource
	entered chan struct{}
	release chan struct{}
}

func (s *blockingHistory) History(ctx context.Context, gvr schema.GroupVersionResource, upTo int64, limit int) ([]storage.LoggedChange, int64, error) {
	if gvr == s.gvr {
		s.entered <- struct{}{}
		<-s.release
	}
	return s.Interface.History(ctx, gvr, upTo, limit)
}

// TestLoadsUnderWayShareTheBudget: the objects a load has read count
// against the budget before it publishes them, so that a second load,
// which fits the budget alone but not beside the first, stops, and the
// store answers its reads, rather than both being held at once.
func TestLoadsUnderWayShareTheBudget(t *testing.T) {
	storagetest.ForEach(t, func(t *testing.T, b storagetest.Backend) {
		base := b.Open(t)
		ctx := context.Background()
		writeBudgeted(t, base, 1, firstPods(60))
		budget := oneResourceBudget(t, base)
		s := &blockingHistory{Interface: base, gvr: budgeted[0], entered: make(chan struct{}), release: make(chan struct{})}
		c := run(t, s, watchcache.Options{MemoryBudget: budget})
		loaded := make(chan error, 1)
		go func() {
			_, _, err := c.List(ctx, &storage.ListQuery{GVR: budgeted[0]})
			loaded <- err
		}()
		within(t, "the first load reading its history", func() struct{} { <-s.entered; return struct{}{} })
		_, _, err := c.List(ctx, &storage.ListQuery{GVR: budgeted[1]})
		if !watchcache.IsNotCached(err) {
			t.Errorf("listing a second resource while the first loads: %v, want not cached", err)
		}
		q := storage.ListQuery{GVR: budgeted[1]}
		if got, want := answers(t, consistentReads{watchcache.NewReads(s, c)}, q), answers(t, base, q); got != want {
			t.Errorf("through the cache\n%s\nthe store\n%s", got, want)
		}
		close(s.release)
		if err := within(t, "the first load", func() error { return <-loaded }); err != nil {
			t.Fatal(err)
		}
		if got := held(c); got != "a" {
			t.Errorf("the cache holds %q, want a alone", got)
		}
	})
}

// observedLoads calls list and history, where set, as a page of the
// objects or of the log of gvr is read.
type observedLoads struct {
	storage.Interface
	gvr           schema.GroupVersionResource
	list, history func()
}

func (s *observedLoads) List(ctx context.Context, q *storage.ListQuery) (*storage.ListResult, error) {
	if q.GVR == s.gvr && s.list != nil {
		s.list()
	}
	return s.Interface.List(ctx, q)
}

func (s *observedLoads) History(ctx context.Context, gvr schema.GroupVersionResource, upTo int64, limit int) ([]storage.LoggedChange, int64, error) {
	if gvr == s.gvr && s.history != nil {
		s.history()
	}
	return s.Interface.History(ctx, gvr, upTo, limit)
}

// writePods writes round of the countedPods keys to gvr; it returns the
// revision after.
func writePods(t *testing.T, s storage.Interface, gvr schema.GroupVersionResource, round int, keys []int, deletes ...int) int64 {
	t.Helper()
	rng := rand.New(rand.NewPCG(uint64(round), 3))
	var changes []storage.Change
	for _, i := range keys {
		changes = append(changes, countedPod(rng, i, round))
	}
	for _, i := range deletes {
		changes = append(changes, storage.Delete(fmt.Sprintf("ns-%d", i%3), fmt.Sprintf("pod-%d", i)))
	}
	rev, err := s.ForCluster("east", storage.Unfenced).Apply(context.Background(), gvr, changes)
	if err != nil {
		t.Fatal(err)
	}
	return rev
}

// TestLoadEvictsAsItReads: a load reads its resource in pages, each
// counted against the budget as it is read, so that what it evicts to
// fit goes while it reads rather than once it has read the whole
// resource beside it; what is held and reserved never exceeds the
// budget as a page of the objects or of the log is read.
func TestLoadEvictsAsItReads(t *testing.T) {
	storagetest.ForEach(t, func(t *testing.T, b storagetest.Backend) {
		base := b.Open(t)
		ctx := context.Background()
		small, large := budgeted[0], budgeted[1]
		writePods(t, base, small, 1, firstPods(1000))
		writePods(t, base, large, 1, firstPods(2000))
		unbudgeted := run(t, base, watchcache.Options{})
		if _, _, err := unbudgeted.List(ctx, &storage.ListQuery{GVR: small}); err != nil {
			t.Fatal(err)
		}
		smallBytes := watchcache.HeldBytes(unbudgeted)
		if _, _, err := unbudgeted.List(ctx, &storage.ListQuery{GVR: large}); err != nil {
			t.Fatal(err)
		}
		// Each fits alone, not both.
		budget := watchcache.HeldBytes(unbudgeted) - smallBytes + smallBytes/4
		var c *watchcache.Cache
		var held, reserved []int64 // as each page of the large resource is read
		pages := 0                 // of its objects
		page := func() {
			held, reserved = append(held, watchcache.HeldBytes(c)), append(reserved, watchcache.Reserved(c))
		}
		s := &observedLoads{Interface: base, gvr: large, list: func() { pages++; page() }, history: page}
		c = run(t, s, watchcache.Options{MemoryBudget: budget})
		for _, gvr := range []schema.GroupVersionResource{small, large} {
			if _, _, err := c.List(ctx, &storage.ListQuery{GVR: gvr}); err != nil {
				t.Fatalf("listing %s: %v", gvr.Group, err)
			}
		}
		if !c.Holds(large) || c.Holds(small) {
			t.Fatalf("the cache holds the large resource %v, the small one %v; want the large one alone", c.Holds(large), c.Holds(small))
		}
		if pages < 2 {
			t.Fatalf("the large resource was read in %d pages, want several", pages)
		}
		if last := held[pages-1]; last != 0 {
			t.Errorf("the small resource (%d bytes) was still held as the load read its last page of objects", last)
		}
		for i := range held {
			if held[i]+reserved[i] > budget {
				t.Errorf("page %d: %d bytes held and %d reserved, over the budget of %d", i, held[i], reserved[i], budget)
			}
		}
	})
}

// TestRingReadInPages: a load under a budget reads the log of its
// resource in pages, newest first, into the ring that a load without one
// reads at once: a watch from before either cache started sees what a
// watch of the log sees, objects entering and leaving its selection
// included, and a list at an earlier revision, made of the ring's
// pre-images, is the store's.
func TestRingReadInPages(t *testing.T) {
	storagetest.ForEach(t, func(t *testing.T, b storagetest.Backend) {
		base := b.Open(t)
		ctx := context.Background()
		gvr, all := budgeted[0], firstPods(150)
		first := writePods(t, base, gvr, 1, all)
		early := writePods(t, base, gvr, 2, all[:120], 130, 131)
		writePods(t, base, gvr, 3, all[50:], 20)
		unbudgeted := run(t, base, watchcache.Options{})
		if _, _, err := unbudgeted.List(ctx, &storage.ListQuery{GVR: gvr}); err != nil {
			t.Fatal(err)
		}
		histories := 0
		s := &observedLoads{Interface: base, gvr: gvr, history: func() { histories++ }}
		c := run(t, s, watchcache.Options{MemoryBudget: 2 * watchcache.HeldBytes(unbudgeted)})
		if _, _, err := c.List(ctx, &storage.ListQuery{GVR: gvr}); err != nil {
			t.Fatal(err)
		}
		if !c.Holds(gvr) || histories < 2 {
			t.Fatalf("held %v, the log read in %d pages; want it held, read in several", c.Holds(gvr), histories)
		}
		// The watches of everything and of a selection, from before the
		// caches started, until a write after, of each cache and of the log
		// (a cache under a budget too small for the resource).
		caches := []*watchcache.Cache{c, unbudgeted, run(t, base, watchcache.Options{MemoryBudget: 1024})}
		sels := []string{"", "tier=front"}
		watches := make([][]*watchcache.Watcher, len(caches))
		for i, cache := range caches {
			for _, sel := range sels {
				w, err := cache.Watch(ctx, &storage.ListQuery{GVR: gvr, Labels: requirements(t, sel)}, watchcache.WatchOptions{
					ResourceVersion: first - 1, Bookmarks: true, BookmarkInterval: time.Nanosecond,
				})
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(w.Stop)
				watches[i] = append(watches[i], w)
			}
		}
		end := writePods(t, base, gvr, 4, all[:1])
		for j, sel := range sels {
			want := events(t, watches[2][j], end)
			if !strings.Contains(want, "DELETED") {
				t.Fatalf("watching %q, the log has no deletion:\n%s", sel, want)
			}
			for i, name := range []string{"the budgeted cache", "the unbudgeted cache"} {
				if got := events(t, watches[i][j], end); got != want {
					t.Errorf("watching %q: %s\n%s\nthe log\n%s", sel, name, got, want)
				}
			}
		}
		q := storage.ListQuery{GVR: gvr, Revision: early}
		if got, want := answers(t, consistentReads{watchcache.NewReads(s, c)}, q), answers(t, base, q); got != want {
			t.Errorf("at revision %d through the cache\n%s\nthe store\n%s", early, got, want)
		}
	})
}

// events reads w until it has seen revision last, and spells its events
// but bookmarks, which tell how far it has seen, each with a digest of
// its object's JSON.
func events(t *testing.T, w *watchcache.Watcher, last int64) string {
	t.Helper()
	return within(t, "events", func() string {
		var b strings.Builder
		for e := range w.ResultChan() {
			if e.Type != watch.Bookmark {
				fmt.Fprintf(&b, "%s %s/%s at %d: %x\n", e.Type, e.Object.Namespace, e.Object.Name, e.Revision, sha256.Sum256(e.Object.Data))
			}
			if e.Revision >= last {
				break
			}
		}
		return b.String()
	})
}

// TestWatchOfAResourceNotCached: a resource that alone exceeds the budget
// is not cached; its watches, served from the log, see what a cached
// watch sees: every change, objects entering and leaving the selection
// as ADDED and DELETED, from a revision or from the state.
func TestWatchOfAResourceNotCached(t *testing.T) {
	storagetest.ForEach(t, func(t *testing.T, b storagetest.Backend) {
		s := b.Open(t)
		ctx := context.Background()
		all := firstPods(30)
		from := writeBudgeted(t, s, 1, all)
		cached := run(t, s, watchcache.Options{})
		tiny := run(t, s, watchcache.Options{MemoryBudget: 1024})
		sel := requirements(t, "tier=front")
		gvr := budgeted[0]
		type pair struct{ cached, tiny *watchcache.Watcher }
		var watches []pair
		for _, opts := range []watchcache.WatchOptions{{ResourceVersion: from}, {}, {ResourceVersion: from, SendInitialEvents: true}} {
			opts.Bookmarks, opts.BookmarkInterval = true, time.Nanosecond
			for _, q := range []storage.ListQuery{{GVR: gvr}, {GVR: gvr, Labels: sel}} {
				var p pair
				var err error
				if p.cached, err = cached.Watch(ctx, &q, opts); err != nil {
					t.Fatal(err)
				}
				if p.tiny, err = tiny.Watch(ctx, &q, opts); err != nil {
					t.Fatal(err)
				}
				watches = append(watches, p)
			}
		}
		if held(tiny) != "" {
			t.Fatalf("the cache of a tiny budget holds %s", held(tiny))
		}
		writeBudgeted(t, s, 2, all[:20], 25)
		last := writeBudgeted(t, s, 3, all[10:])
		for i, p := range watches {
			got, want := events(t, p.tiny, last), events(t, p.cached, last)
			if got != want || want == "" {
				t.Errorf("watch %d: from the log\n%s\nfrom the cache\n%s", i, got, want)
			}
			p.tiny.Stop()
			p.cached.Stop()
		}
	})
}

// TestWatchPinsItsResource: a watched resource is never evicted, and its
// watch sees every change while others are read in turn. Those others fit
// the budget alone but not beside it: they are not cached (the store reads
// them, the log serves their watches) rather than loaded and evicted at
// once, again and again, for as long as a watch waits for them to stay;
// once the watch ends, a watch of them caches them again.
func TestWatchPinsItsResource(t *testing.T) {
	storagetest.ForEach(t, func(t *testing.T, b storagetest.Backend) {
		s := b.Open(t)
		ctx := context.Background()
		all := firstPods(60)
		from := writeBudgeted(t, s, 1, all)
		writeBudgeted(t, s, 2, all[:30], 50)
		c := run(t, s, watchcache.Options{MemoryBudget: oneResourceBudget(t, s)})
		reference := run(t, s, watchcache.Options{})
		opts := watchcache.WatchOptions{ResourceVersion: from, Bookmarks: true, BookmarkInterval: time.Nanosecond}
		watch := func(c *watchcache.Cache, gvr schema.GroupVersionResource) *watchcache.Watcher {
			t.Helper()
			w := within(t, "a watch", func() *watchcache.Watcher {
				w, err := c.Watch(ctx, &storage.ListQuery{GVR: gvr}, opts)
				if err != nil {
					t.Error(err)
				}
				return w
			})
			if w == nil {
				t.FailNow()
			}
			t.Cleanup(w.Stop)
			return w
		}
		w, ref := watch(c, budgeted[0]), watch(reference, budgeted[0])
		for round, gvr := range budgeted[1:] {
			if _, _, err := c.List(ctx, &storage.ListQuery{GVR: gvr}); !watchcache.IsNotCached(err) {
				t.Fatalf("round %d: listing %s beside the watched resource: %v, want not cached", round, gvr.Group, err)
			}
			if !c.Holds(budgeted[0]) {
				t.Fatalf("round %d: the watched resource was evicted", round)
			}
		}
		crowded, crowdedRef := watch(c, budgeted[1]), watch(reference, budgeted[1])
		if got := held(c); got != "a" {
			t.Errorf("the cache holds %q, want the watched resource alone", got)
		}
		last := writeBudgeted(t, s, 3, all[:2])
		if got, want := events(t, w, last), events(t, ref, last); got != want || want == "" {
			t.Errorf("the pinned watch\n%s\nunbudgeted\n%s", got, want)
		}
		if got, want := events(t, crowded, last), events(t, crowdedRef, last); got != want || want == "" {
			t.Errorf("the watch beside it\n%s\nunbudgeted\n%s", got, want)
		}
		w.Stop()
		drained(t, "the pinned watch", w)
		crowded.Stop()
		watch(c, budgeted[1])
		if got := held(c); got != "b" {
			t.Errorf("unwatched, the cache holds %q, want b alone", got)
		}
	})
}

// TestHeldBytesEstimate holds the estimate of what a cache holds to the
// heap it takes, realistic pods synced and then changed (the ring then
// holds their pre-images).
func TestHeldBytesEstimate(t *testing.T) {
	const n = 2000
	s := storagetest.Backends()[0].Open(t)
	ctx := context.Background()
	for round := range 2 {
		storagetest.StoreRealisticPods(t, s, pods, rand.New(rand.NewPCG(11, 11)), n, round, storagetest.InCluster("east"))
	}
	before := liveHeap()
	c := run(t, s, watchcache.Options{})
	if _, _, err := c.List(ctx, &storage.ListQuery{GVR: pods}); err != nil {
		t.Fatal(err)
	}
	heap := liveHeap() - before
	estimate := watchcache.HeldBytes(c)
	ratio := float64(estimate) / float64(heap)
	t.Logf("estimate %d B, heap %d B: %.2fx", estimate, heap, ratio)
	if ratio < 0.75 || ratio > 1.5 {
		t.Errorf("the estimate is %.2fx the heap the cache holds, want within 0.75x-1.5x", ratio)
	}
	runtime.KeepAlive(c)
}

// liveHeap is the heap in use after a collection.
func liveHeap() int64 {
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return int64(m.HeapAlloc)
}
