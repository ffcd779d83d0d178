package watchcache_test

import (
	"context"
	"testing"
	"time"

	"github.com/panorama-io/panorama/apiserver/watchcache"
	"github.com/panorama-io/panorama/storage"
	"github.com/panorama-io/panorama/storage/sqlstore"
	"github.com/panorama-io/panorama/storage/storagetest"
)

// BenchmarkCachedCount counts 100,000 pods (PANORAMA_BENCH_COUNT_OBJECTS
// of them when set: make bench-count-1m) in the watch cache as
// storagetest.BenchCounts do, each as a ratio to a plain SELECT COUNT(*)
// of the objects' table and to the store's count of the same query, timed
// in turn with it in the same run (best of several runs each); and prints
// what holding the pods costs the cache, in heap and resident memory.
func BenchmarkCachedCount(b *testing.B) {
	n := storagetest.BenchCountObjects(b, 100_000)
	const runs, slow = 5, 10 * time.Second
	for _, be := range storagetest.Backends() {
		b.Run(be.Name, func(b *testing.B) {
			opts := be.Options(b)
			s, c := cachedPods(b, be.Name, opts, n)
			ctx := context.Background()
			rev, _, err := s.Revision(ctx)
			if err != nil {
				b.Fatal(err)
			}
			plain := storagetest.PlainCount(b, opts, n)
			for _, bc := range storagetest.BenchCounts(b) {
				var cached, bestPlain, stored time.Duration
				var res, want *storage.CountResult
				for r := range runs {
					if d := plain(); bestPlain == 0 || d < bestPlain {
						bestPlain = d
					}
					start := time.Now()
					var ok bool
					if res, ok, err = c.Count(ctx, &bc.Query, rev); err != nil || !ok {
						b.Fatalf("%s: ok %v, %v", bc.Name, ok, err)
					}
					if d := time.Since(start); cached == 0 || d < cached {
						cached = d
					}
					// A store's count of more than slow is timed once.
					if r == 0 || stored < slow {
						start = time.Now()
						if want, err = s.Count(ctx, &bc.Query); err != nil {
							b.Fatal(err)
						}
						if d := time.Since(start); stored == 0 || d < stored {
							stored = d
						}
					}
				}
				if len(res.Groups) != len(want.Groups) || res.Groups[0].Count != want.Groups[0].Count {
					b.Fatalf("%s: the cache counted %d groups, the largest %d; the store %d, %d", bc.Name,
						len(res.Groups), res.Groups[0].Count, len(want.Groups), want.Groups[0].Count)
				}
				b.ReportMetric(storagetest.Millis(cached), bc.Name+"-ms")
				b.ReportMetric(float64(cached)/float64(bestPlain), bc.Name+"/count(*)")
				b.ReportMetric(float64(cached)/float64(stored), bc.Name+"/store")
				b.Logf("%s: %d pods by %-36s cached %8v (%d groups), plain COUNT(*) %v, ratio %.2fx; the store's count %v, ratio %.3fx",
					be.Name, n, bc.Name, cached.Round(time.Microsecond), len(res.Groups), bestPlain.Round(time.Microsecond),
					float64(cached)/float64(bestPlain), stored.Round(time.Microsecond), float64(cached)/float64(stored))
			}
		})
	}
}

// cachedPods stores n BenchPods in a fresh database of opts, loads them
// into a watch cache, and prints what the load took and what holding them
// costs the cache, in heap and resident memory.
func cachedPods(b *testing.B, backend string, opts sqlstore.Options, n int) (*sqlstore.Store, *watchcache.Cache) {
	s := storagetest.OpenStore(b, opts)
	storagetest.IngestPods(b, backend, s, n)
	heapBefore, rssBefore := memory(b)
	c := run(b, s, watchcache.Options{})
	start := time.Now()
	if _, _, err := c.List(context.Background(), &storage.ListQuery{GVR: storagetest.Pods}); err != nil {
		b.Fatal(err)
	}
	load := time.Since(start)
	heap, rss := memory(b)
	b.ReportMetric(float64(heap-heapBefore)/float64(n), "heap-B/pod")
	b.ReportMetric(float64(rss-rssBefore)/float64(n), "rss-B/pod")
	b.Logf("%s: %d pods loaded into the cache in %v; it holds %d MiB of heap (%.0f B a pod), the process %d MiB more resident (%d MiB in all)",
		backend, n, load.Round(time.Millisecond), (heap-heapBefore)>>20, float64(heap-heapBefore)/float64(n), (rss-rssBefore)>>20, rss>>20)
	return s, c
}
