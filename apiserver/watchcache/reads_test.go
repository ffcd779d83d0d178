package watchcache_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/panorama-io/panorama/apiserver/watchcache"
	"github.com/panorama-io/panorama/storage"
)

// listCounting counts the lists the store answers; ahead, when set, makes
// it a store whose reads must show a revision that far past what its log
// (which the cache tails) has reached, as a replica behind its primary,
// and that waits for it no longer than readWait.
type listCounting struct {
	storage.Interface
	ahead    int64
	readWait time.Duration
	lists    atomic.Int32
}

func (s *listCounting) List(ctx context.Context, q *storage.ListQuery) (*storage.ListResult, error) {
	s.lists.Add(1)
	return s.Interface.List(ctx, q)
}

func (s *listCounting) LatestRevision(ctx context.Context) (int64, int64, error) {
	cur, compacted, err := s.Interface.LatestRevision(ctx)
	return cur + s.ahead, compacted, err
}

func (s *listCounting) ReadsLag() bool { return s.ahead > 0 }

func (s *listCounting) ReadWait() time.Duration { return s.readWait }

// TestReadsDecide: a consistent list is the cache's once it has applied
// the store's latest revision, the store's when the cache cannot reach it
// within the store's ReadWait, at once when that is none (the cache's
// freshness timeout, an hour here, is never waited out); a list of the
// cache's state as it is never asks the store; a query the cache cannot
// answer is the store's.
func TestReadsDecide(t *testing.T) {
	s, c, _, _ := fortyLoaded(t, 7, watchcache.Options{PollInterval: 50 * time.Millisecond, FreshnessTimeout: time.Hour})
	ctx := context.Background()
	for _, tc := range []struct {
		name      string
		store     *listCounting
		q         storage.ListQuery
		f         watchcache.Freshness
		fromStore int32
	}{
		{"consistent, the cache current", &listCounting{Interface: s}, storage.ListQuery{GVR: pods, Limit: 10}, watchcache.Freshness{}, 0},
		{"consistent, the cache behind", &listCounting{Interface: s, ahead: 1000, readWait: 50 * time.Millisecond},
			storage.ListQuery{GVR: pods, Limit: 10}, watchcache.Freshness{}, 1},
		{"consistent, the cache behind, no read wait", &listCounting{Interface: s, ahead: 1000},
			storage.ListQuery{GVR: pods, Limit: 10}, watchcache.Freshness{}, 1},
		{"as it is", &listCounting{Interface: s, ahead: 1000, readWait: time.Hour}, storage.ListQuery{GVR: pods}, watchcache.Freshness{Any: true}, 0},
		{"owner filter", &listCounting{Interface: s}, storage.ListQuery{GVR: pods, OwnerName: "x"}, watchcache.Freshness{Any: true}, 1},
	} {
		page, err := watchcache.NewReads(tc.store, c).List(ctx, &tc.q, tc.f)
		if err != nil || page == nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		if n := tc.store.lists.Load(); n != tc.fromStore {
			t.Errorf("%s: the store listed %d times, want %d", tc.name, n, tc.fromStore)
		}
	}
}
