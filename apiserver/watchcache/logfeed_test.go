package watchcache_test

import (
	"context"
	"sync/atomic"
	"testing"

	"github.com/panorama-io/panorama/apiserver/watchcache"
	"github.com/panorama-io/panorama/storage"
	"github.com/panorama-io/panorama/storage/storagetest"
)

// changesCounting counts the reads of the change log.
type changesCounting struct {
	storage.Interface
	reads atomic.Int64
}

func (s *changesCounting) Changes(ctx context.Context, since int64, limit int) ([]storage.LoggedChange, int64, error) {
	s.reads.Add(1)
	return s.Interface.Changes(ctx, since, limit)
}

// TestLogWatchesShareTheirReads: the watches of a resource not cached,
// from the log, read it once for them all rather than each for itself,
// and each sees every change.
func TestLogWatchesShareTheirReads(t *testing.T) {
	const watches = 16
	storagetest.ForEach(t, func(t *testing.T, b storagetest.Backend) {
		s := &changesCounting{Interface: b.Open(t)}
		ctx := context.Background()
		apply(t, s, pod("a", "1", "web"))
		c := run(t, s, watchcache.Options{MemoryBudget: 1024})
		var ws []*watchcache.Watcher
		for range watches {
			w, err := c.Watch(ctx, &storage.ListQuery{GVR: pods}, watchcache.WatchOptions{})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(w.Stop)
			expect(t, next(t, w, 1), "ADDED a")
			ws = append(ws, w)
		}
		if c.Holds(pods) {
			t.Fatal("the cache of a tiny budget holds the pods")
		}
		for round, name := range []string{"b", "c"} {
			before := s.reads.Load()
			apply(t, s, pod(name, "1", "web"))
			for _, w := range ws {
				expect(t, next(t, w, 1), "ADDED "+name)
			}
			// The tail's reads, and the feed's, a few each; not one a watch.
			if reads := s.reads.Load() - before; reads >= watches/2 {
				t.Errorf("round %d: %d reads of the log for %d watches of one change", round, reads, watches)
			}
		}
	})
}
