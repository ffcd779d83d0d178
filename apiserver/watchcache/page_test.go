package watchcache_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync/atomic"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/fields"

	"github.com/panorama-io/panorama/apiserver/watchcache"
	"github.com/panorama-io/panorama/storage"
	"github.com/panorama-io/panorama/storage/sqlstore"
	"github.com/panorama-io/panorama/storage/storagetest"
)

// objectLines spells objects as their keys and stored bytes, a line each.
func objectLines(objs []storage.Object) string {
	out := ""
	for _, o := range objs {
		out += fmt.Sprintf("%s/%s/%s %s\n", o.Cluster, o.Namespace, o.Name, o.Data)
	}
	return out
}

// pageKeys spells a page as its objects' lines and its continue token.
func pageKeys(p *storage.ListResult) string {
	return objectLines(p.Objects) + "continue " + p.Continue
}

// TestPageAsStore: every page the cache serves is the store's page of the
// same query, byte for byte and with the same continue token, whether it
// walks its objects in key order, sorts the selected ones, gives up a
// walk for a sort or chooses by their costs, and when
// objects change, come and go between the pages of a list: the later
// pages then show the state at the first page's revision, which the
// cache rebuilds from its ring. Run on every database, this also holds
// the cache's key order to each database's.
func TestPageAsStore(t *testing.T) {
	storagetest.ForEach(t, func(t *testing.T, b storagetest.Backend) {
		s := b.Open(t)
		ctx := context.Background()
		rng := rand.New(rand.NewPCG(5, 5))
		all := firstPods(200)
		writeCounted(t, s, rng, 1, all)
		c := run(t, s, watchcache.Options{})
		revisions := func() (cur, compacted int64) {
			t.Helper()
			cur, compacted, err := s.Revision(ctx)
			if err != nil {
				t.Fatal(err)
			}
			return cur, compacted
		}

		// A resource nobody loaded is the store's to list; the page starts
		// loading it.
		cur, compacted := revisions()
		if _, ok, err := c.Page(ctx, &storage.ListQuery{GVR: pods, Limit: 10}, cur, compacted); ok || err != nil {
			t.Fatalf("page of a resource not loaded: ok %v, %v; want the store to list", ok, err)
		}
		within(t, "the load a page started", func() bool {
			for !c.Holds(pods) {
				time.Sleep(10 * time.Millisecond)
			}
			return true
		})

		queries := []storage.ListQuery{
			{},
			{Clusters: []string{"west"}},
			{Labels: requirements(t, "tier=front")},
			{Labels: requirements(t, "app notin (app-1)"), Namespaces: []string{"ns-0", "ns-2"}},
			{Names: []string{"pod-1", "pod-50", "pod-199"}},
			{FuzzyName: "pod-1"},
			{Fields: fields.Requirements{{Field: "status.phase", Operator: "=", Value: "Running"}}},
			{Images: []string{"nginx"}},
			{Labels: requirements(t, "tier=nowhere")},
			// A range of the key order: a walk starts at it and stops after.
			{Clusters: []string{"east"}},
			{Clusters: []string{"west"}, Namespaces: []string{"ns-1", "ns-2"}, Labels: requirements(t, "tier=front")},
		}
		round := 1
		check := func(q storage.ListQuery, changeBetweenPages bool) {
			t.Helper()
			q.GVR = pods
			cur, compacted := revisions()
			page, ok, err := c.Page(ctx, &q, cur, compacted)
			if err != nil || !ok {
				t.Fatalf("%+v: first page: ok %v, %v", q, ok, err)
			}
			if page.Revision < cur {
				t.Fatalf("%+v: first page at %d, before the store's %d", q, page.Revision, cur)
			}
			at := page.Revision
			var whole string
			for n := 1; ; n++ {
				sq := q
				if sq.Continue == "" {
					sq.Revision = at
				}
				want, err := s.List(ctx, &sq)
				if err != nil {
					t.Fatal(err)
				}
				if got, w := pageKeys(page), pageKeys(want); got != w || page.Revision != want.Revision {
					t.Fatalf("%+v: page %d at %d:\ncache\n%s\nstore at %d\n%s", q, n, page.Revision, got, want.Revision, w)
				}
				whole += objectLines(page.Objects)
				if page.Continue == "" {
					break
				}
				if changeBetweenPages {
					// Some pods change (labels, images, phase drawn anew),
					// some go, some come, ahead of the list and behind it.
					round++
					keys := rng.Perm(230)
					writeCounted(t, s, rng, round, keys[:25], keys[25:35]...)
				}
				q.Continue = page.Continue
				// A later page is at a revision the cache has applied: it
				// needs none of the store's (the API server's way), and is
				// the same page with them.
				if n%2 == 0 {
					page, ok, err = c.PageApplied(ctx, &q)
				} else {
					cur, compacted := revisions()
					page, ok, err = c.Page(ctx, &q, cur, compacted)
				}
				if err != nil || !ok {
					t.Fatalf("%+v: page %d: ok %v, %v", q, n+1, ok, err)
				}
			}
			// The pages together are the whole list at the first's revision.
			q.Continue, q.Limit, q.Revision = "", 0, at
			want, err := s.List(ctx, &q)
			if err != nil {
				t.Fatal(err)
			}
			if w := pageKeys(want); whole+"continue " != w {
				t.Fatalf("%+v: pages at %d:\n%s\nthe store's list then:\n%s", q, at, whole, w)
			}
		}
		for _, way := range []int{watchcache.Walking, watchcache.Sorting, watchcache.GivingUp, watchcache.ByTheirCosts} {
			restore := watchcache.PageBy(way)
			for _, q := range queries {
				for _, limit := range []int64{0, 5, 64} {
					q.Limit = limit
					check(q, false)
					check(q, limit > 0)
				}
			}
			restore()
		}
		if round < 10 {
			t.Fatalf("only %d rounds of changes between pages", round)
		}
	})
}

// fortyLoaded writes 40 pods, drawn from seed, and runs a cache with opts
// that has loaded them. It returns the generator for their next rounds.
func fortyLoaded(t *testing.T, seed uint64, opts watchcache.Options) (*sqlstore.Store, *watchcache.Cache, *rand.Rand, []int) {
	t.Helper()
	s := storagetest.Backends()[0].Open(t)
	rng := rand.New(rand.NewPCG(seed, seed))
	all := firstPods(40)
	writeCounted(t, s, rng, 1, all)
	c := run(t, s, opts)
	if _, _, err := c.List(context.Background(), &storage.ListQuery{GVR: pods}); err != nil {
		t.Fatal(err)
	}
	return s, c, rng, all
}

// TestPageBeyondTheRing: a page at a revision older than the cache's ring
// reaches is the store's to serve, and one below the store's compacted
// revision is gone, as the store answers it.
func TestPageBeyondTheRing(t *testing.T) {
	s, c, rng, all := fortyLoaded(t, 6, watchcache.Options{RingSize: 8})
	ctx := context.Background()
	cur, compacted, err := s.Revision(ctx)
	if err != nil {
		t.Fatal(err)
	}
	q := storage.ListQuery{GVR: pods, Limit: 5}
	first, ok, err := c.Page(ctx, &q, cur, compacted)
	if err != nil || !ok || len(first.Objects) != 5 || first.Continue == "" {
		t.Fatalf("first page: %v, ok %v, %v", first, ok, err)
	}
	q.Continue = first.Continue
	if _, _, err := c.Page(ctx, &q, cur, first.Revision+1); !storage.IsTooOld(err) {
		t.Fatalf("a page below the compacted revision: %v, want too old", err)
	}
	for round := 2; round < 6; round++ {
		writeCounted(t, s, rng, round, all[:3])
	}
	cur, compacted, err = s.Revision(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := c.WaitForRevision(ctx, cur); err != nil {
		t.Fatal(err)
	}
	if page, ok, err := c.Page(ctx, &q, cur, compacted); ok || err != nil {
		t.Fatalf("a page behind the ring: %v, ok %v, %v; want the store to serve it", page, ok, err)
	}
	if page, ok, err := c.PageApplied(ctx, &q); ok || err != nil {
		t.Fatalf("a page behind the ring, without the store's revisions: %v, ok %v, %v; want the store to serve it", page, ok, err)
	}
}

// TestPageApplied: without the store's revisions, the cache serves only
// the pages that continue a list at a revision it has applied, and knows
// them compacted once its tail has read the compaction, as the store
// answers them then.
func TestPageApplied(t *testing.T) {
	s, c, rng, all := fortyLoaded(t, 9, watchcache.Options{PollInterval: 20 * time.Millisecond})
	ctx := context.Background()
	cur, compacted, err := s.Revision(ctx)
	if err != nil {
		t.Fatal(err)
	}
	q := storage.ListQuery{GVR: pods, Limit: 5}
	if page, ok, err := c.PageApplied(ctx, &q); ok || err != nil {
		t.Fatalf("a first page without the store's revision: %v, ok %v, %v; want Page to answer it", page, ok, err)
	}
	first, ok, err := c.Page(ctx, &q, cur, compacted)
	if err != nil || !ok {
		t.Fatalf("first page: ok %v, %v", ok, err)
	}
	exact := storage.ListQuery{GVR: pods, Limit: 5, Revision: first.Revision}
	if page, ok, err := c.PageApplied(ctx, &exact); ok || err != nil {
		t.Fatalf("an Exact list's first page: %v, ok %v, %v; want Page to answer it", page, ok, err)
	}
	ahead := storage.ListQuery{GVR: pods, Limit: 5, Continue: storage.EncodeContinue(first.Revision+1000, q.Order(), &first.Objects[0])}
	if page, ok, err := c.PageApplied(ctx, &ahead); ok || err != nil {
		t.Fatalf("a page at a revision not applied: %v, ok %v, %v; want Page to answer it", page, ok, err)
	}

	q.Continue = first.Continue
	writeCounted(t, s, rng, 2, all[:10]) // changes after the first page
	second, ok, err := c.PageApplied(ctx, &q)
	if err != nil || !ok {
		t.Fatalf("second page: ok %v, %v", ok, err)
	}
	want, err := s.List(ctx, &q)
	if err != nil {
		t.Fatal(err)
	}
	if g, w := pageKeys(second), pageKeys(want); g != w || second.Revision != first.Revision {
		t.Fatalf("second page at %d:\ncache\n%s\nstore at %d\n%s", second.Revision, g, want.Revision, w)
	}

	// Compacted past the list's revision, its next page is gone, for the
	// store at once and for the cache once its tail has read the mark.
	cur, _, err = s.Revision(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := c.WaitForRevision(ctx, cur); err != nil { // else the tail finds itself overtaken, and resets
		t.Fatal(err)
	}
	if err := s.Compact(ctx, cur, false); err != nil {
		t.Fatal(err)
	}
	q.Continue = second.Continue
	if _, err := s.List(ctx, &q); !storage.IsTooOld(err) {
		t.Fatalf("the store's page below the compacted revision: %v, want too old", err)
	}
	within(t, "the tail reading the compaction", func() bool {
		for {
			_, _, err := c.PageApplied(ctx, &q)
			if storage.IsTooOld(err) {
				return true
			}
			if err != nil {
				t.Error(err)
				return false
			}
			time.Sleep(10 * time.Millisecond)
		}
	})
}

// TestPageBeforeTheLoad: pages at revisions before the cache loaded the
// resource, whose changes it took from the log's history at the load
// (the ring's pre-images then come from the log, not from the objects it
// replaced), are the store's pages at those revisions.
func TestPageBeforeTheLoad(t *testing.T) {
	storagetest.ForEach(t, func(t *testing.T, b storagetest.Backend) {
		s := b.Open(t)
		ctx := context.Background()
		rng := rand.New(rand.NewPCG(7, 7))
		first := writeCounted(t, s, rng, 1, firstPods(60))
		for round := 2; round <= 8; round++ {
			keys := rng.Perm(70)
			writeCounted(t, s, rng, round, keys[:8], keys[8:12]...)
		}
		cur, compacted, err := s.Revision(ctx)
		if err != nil {
			t.Fatal(err)
		}
		// With the default ring the whole log is in it; with a ring of 20,
		// the first change of a key in it takes its pre-image from the log
		// (the revisions before the ring are the store's to serve).
		for _, ring := range []int{0, 20} {
			c := run(t, s, watchcache.Options{RingSize: ring})
			if _, _, err := c.List(ctx, &storage.ListQuery{GVR: pods}); err != nil {
				t.Fatal(err)
			}
			pages := 0
			for at := first; at <= cur; at += 3 {
				for _, q := range []storage.ListQuery{{}, {Labels: requirements(t, "tier=front")}, {Clusters: []string{"west"}}} {
					q.GVR, q.Limit, q.Revision = pods, 9, at
					for {
						got, ok, err := c.Page(ctx, &q, cur, compacted)
						if err != nil || !ok && ring == 0 {
							t.Fatalf("%+v: ok %v, %v", q, ok, err)
						}
						if !ok {
							break
						}
						want, err := s.List(ctx, &q)
						if err != nil {
							t.Fatal(err)
						}
						if g, w := pageKeys(got), pageKeys(want); g != w {
							t.Fatalf("ring %d, %+v at %d:\ncache\n%s\nstore\n%s", ring, q, at, g, w)
						}
						// Pre-images from the log carry their own revision too.
						for i := range got.Objects {
							if got.Objects[i].Revision != want.Objects[i].Revision {
								t.Fatalf("ring %d, %+v at %d: %s at revision %d, the store's at %d", ring, q, at, got.Objects[i].Name, got.Objects[i].Revision, want.Objects[i].Revision)
							}
						}
						pages++
						if q.Continue = got.Continue; q.Continue == "" {
							break
						}
						q.Revision = 0
					}
				}
			}
			if pages < 20 {
				t.Fatalf("ring %d: compared %d pages", ring, pages)
			}
		}
	})
}

// TestPageLimitIsCapped: a limit above storage.MaxLimit pages by
// MaxLimit, as the store does, however large.
func TestPageLimitIsCapped(t *testing.T) {
	if testing.Short() {
		t.Skip("writes storage.MaxLimit objects: not in the unit tier (go test -short); make test runs it")
	}
	s := storagetest.Backends()[0].Open(t)
	ctx := context.Background()
	rng := rand.New(rand.NewPCG(8, 8))
	n := storage.MaxLimit + 5
	for start := 0; start < n; start += 2000 {
		writeCounted(t, s, rng, 1, firstPods(min(start+2000, n))[start:])
	}
	c := run(t, s, watchcache.Options{})
	if _, _, err := c.List(ctx, &storage.ListQuery{GVR: pods}); err != nil {
		t.Fatal(err)
	}
	cur, compacted, err := s.Revision(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, limit := range []int64{storage.MaxLimit + 1, 1 << 40} {
		q := storage.ListQuery{GVR: pods, Limit: limit}
		got, ok, err := c.Page(ctx, &q, cur, compacted)
		if err != nil || !ok {
			t.Fatalf("limit %d: ok %v, %v", limit, ok, err)
		}
		want, err := s.List(ctx, &q)
		if err != nil {
			t.Fatal(err)
		}
		if len(got.Objects) != storage.MaxLimit || got.Continue == "" || pageKeys(got) != pageKeys(want) {
			t.Fatalf("limit %d: %d objects, continue %q; the store's %d, %q", limit, len(got.Objects), got.Continue, len(want.Objects), want.Continue)
		}
	}
}

// failingLog fails every read of the log while failing is set, as a
// store or replica that is down does.
type failingLog struct {
	storage.Interface
	failing atomic.Bool
}

func (s *failingLog) Changes(ctx context.Context, since int64, limit int) ([]storage.LoggedChange, int64, error) {
	if s.failing.Load() {
		return nil, 0, errors.New("the log is unreachable")
	}
	return s.Interface.Changes(ctx, since, limit)
}

// TestPageAppliedDistrustsAStalledTail: once the tail has not read the
// log for a while, it may have missed a compaction, and a page that
// continues a list reads the store's revisions (Page) again.
func TestPageAppliedDistrustsAStalledTail(t *testing.T) {
	s := &failingLog{Interface: storagetest.Backends()[0].Open(t)}
	ctx := context.Background()
	writeCounted(t, s, rand.New(rand.NewPCG(10, 10)), 1, firstPods(20))
	const poll = 20 * time.Millisecond
	c := run(t, s, watchcache.Options{PollInterval: poll})
	if _, _, err := c.List(ctx, &storage.ListQuery{GVR: pods}); err != nil {
		t.Fatal(err)
	}
	cur, compacted, err := s.Revision(ctx)
	if err != nil {
		t.Fatal(err)
	}
	q := storage.ListQuery{GVR: pods, Limit: 5}
	first, ok, err := c.Page(ctx, &q, cur, compacted)
	if err != nil || !ok {
		t.Fatalf("first page: ok %v, %v", ok, err)
	}
	q.Continue = first.Continue
	if _, ok, err := c.PageApplied(ctx, &q); !ok || err != nil {
		t.Fatalf("a page of a tailing cache: ok %v, %v", ok, err)
	}
	s.failing.Store(true)
	time.Sleep(watchcache.StaleCompaction*poll + 5*poll)
	if _, ok, err := c.PageApplied(ctx, &q); ok || err != nil {
		t.Fatalf("a page of a stalled tail: ok %v, %v; want Page to answer it", ok, err)
	}
	s.failing.Store(false)
	within(t, "the tail reading the log again", func() bool {
		for {
			if _, ok, _ := c.PageApplied(ctx, &q); ok {
				return true
			}
			time.Sleep(poll)
		}
	})
}
