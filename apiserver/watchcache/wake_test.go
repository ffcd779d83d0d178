package watchcache_test

import (
	"context"
	"testing"
	"time"

	"github.com/panorama-io/panorama/apiserver/watchcache"
	"github.com/panorama-io/panorama/storage"
	"github.com/panorama-io/panorama/storage/storagetest"
)

// TestWatchSeesOtherProcessesWithoutPoll: a write through another store on
// the same database, as the controller manager's is to an API server,
// reaches a watch although the poll is an hour away: PostgreSQL notifies
// the cache, the revision probe finds it on MySQL/MariaDB.
func TestWatchSeesOtherProcessesWithoutPoll(t *testing.T) {
	storagetest.ForEach(t, func(t *testing.T, b storagetest.Backend) {
		if b.Name == "sqlite" {
			t.Skip("SQLite is not followed: one process owns its file")
		}
		opts := b.Options(t)
		served, writer := storagetest.OpenStore(t, opts), storagetest.OpenStore(t, opts)
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		c := watchcache.New(served, watchcache.Options{PollInterval: time.Hour})
		go func() { _ = c.Run(ctx) }()
		w, err := c.Watch(ctx, &storage.ListQuery{GVR: pods}, watchcache.WatchOptions{})
		if err != nil {
			t.Fatal(err)
		}
		defer w.Stop()
		for _, name := range []string{"a", "b", "c"} {
			// Each write is awaited, so each needs a wake of its own.
			apply(t, writer, pod(name, "1", "web"))
			expect(t, next(t, w, 1), "ADDED "+name)
		}
	})
}
