package watchcache_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"runtime/debug"
	"slices"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/panorama-io/panorama/apiserver/watchcache"
	"github.com/panorama-io/panorama/internal/containermemory"
	"github.com/panorama-io/panorama/storage"
	"github.com/panorama-io/panorama/storage/storagetest"
)

// BenchmarkBudgetedCache stores realistic pods under several resources
// and lists each in turn, by label a page of 500 at a time, three times
// over, through Reads with the cache under a budget of a quarter of their
// JSON and Go's soft limit where the API server sets it. It prints, as
// ratios to the budget, the most the heap and the resident memory grew
// over what they were before the cache started: after a collection at the
// end of each resource's lists, and at their peaks (peaks: the live heap
// as each collection found it, the resident memory as it was sampled); the
// most resident memory as a ratio to issue 35's bound; and the p99 of a
// page answered while the
// cache held its resource against one answered while it did not (the
// store's, while a load may be reading the store too), and against the
// same pages read from the store alone before the cache started, the
// baseline. PANORAMA_BENCH_COUNT_OBJECTS sets the pods per resource,
// PANORAMA_BENCH_BUDGET_RESOURCES the resources (default 8): the cache
// holds a resource whole or not at all, so with few large resources none
// may fit the budget, and every page is the store's;
// PANORAMA_BENCH_PEAK_PROFILE names a file for the heap profile at the
// peak.
func BenchmarkBudgetedCache(b *testing.B) {
	const passes, page = 3, 500
	n := storagetest.BenchCountObjects(b, 5000)
	resources := storagetest.EnvInt(b, "PANORAMA_BENCH_BUDGET_RESOURCES", 8, 2)
	for _, backend := range storagetest.Backends() {
		b.Run(backend.Name, func(b *testing.B) {
			s := backend.Open(b)
			ctx := context.Background()
			var gvrs []schema.GroupVersionResource
			var jsonBytes int64
			for r := range resources {
				gvr := schema.GroupVersionResource{Group: fmt.Sprintf("r%d.example.com", r), Version: "v1", Resource: "pods"}
				gvrs = append(gvrs, gvr)
				storagetest.StoreRealisticPods(b, s, gvr, rand.New(rand.NewPCG(uint64(r), 7)), n, 0, storagetest.InCluster("east"))
				q := storage.ListQuery{GVR: gvr, Limit: page}
				for {
					p, err := s.List(ctx, &q)
					if err != nil {
						b.Fatal(err)
					}
					for _, o := range p.Objects {
						jsonBytes += int64(len(o.Data))
					}
					if q.Continue = p.Continue; q.Continue == "" {
						break
					}
				}
			}
			budget := jsonBytes / 4
			// Go's soft limit as the API server sets it (cmd/apiserver),
			// unless GOMEMLIMIT says otherwise.
			defer debug.SetMemoryLimit(debug.SetMemoryLimit(-1))
			containermemory.FitGo(b.TempDir(), watchcache.GoMemoryLimit(budget))
			// pages lists gvr by label a page at a time through list,
			// recording each page's time where record says.
			pages := func(gvr schema.GroupVersionResource, list func(*storage.ListQuery) (*storage.ListResult, error), record func(time.Duration)) {
				q := storage.ListQuery{GVR: gvr, Labels: requirements(b, "tier=back"), Limit: page}
				for {
					start := time.Now()
					p, err := list(&q)
					if err != nil {
						b.Fatal(err)
					}
					record(time.Since(start))
					if q.Continue = p.Continue; q.Continue == "" {
						return
					}
				}
			}
			var storeAlone, cached, notCached []time.Duration
			for _, gvr := range gvrs {
				pages(gvr, func(q *storage.ListQuery) (*storage.ListResult, error) { return s.List(ctx, q) },
					func(d time.Duration) { storeAlone = append(storeAlone, d) })
			}
			heapBefore, rssBefore := memory(b)
			stopPeaks := peaks(b)
			c := run(b, s, watchcache.Options{MemoryBudget: budget})
			reads := watchcache.NewReads(s, c)
			var heapMost, rssMost int64
			b.ResetTimer()
			for range passes {
				for _, gvr := range gvrs {
					for range passes {
						held := false
						pages(gvr, func(q *storage.ListQuery) (*storage.ListResult, error) {
							held = c.Holds(gvr)
							return reads.List(ctx, q, watchcache.Freshness{})
						}, func(d time.Duration) {
							if held {
								cached = append(cached, d)
							} else {
								notCached = append(notCached, d)
							}
						})
					}
					heap, rss := memory(b)
					heapMost, rssMost = max(heapMost, heap-heapBefore), max(rssMost, rss-rssBefore)
				}
			}
			b.StopTimer()
			heapPeak, rssPeak := stopPeaks()
			p99 := func(d []time.Duration) time.Duration {
				if len(d) == 0 {
					return 0
				}
				slices.Sort(d)
				return d[len(d)*99/100]
			}
			b.ReportMetric(float64(heapMost)/float64(budget), "heap/budget")
			b.ReportMetric(float64(rssMost)/float64(budget), "rss/budget")
			b.ReportMetric(float64(heapPeak)/float64(budget), "peak-heap/budget")
			b.ReportMetric(float64(rssPeak)/float64(budget), "peak-rss/budget")
			// Issue 35's bound on resident memory, which the server's soft
			// limit is.
			bound := watchcache.GoMemoryLimit(budget)
			b.ReportMetric(float64(rssBefore+rssPeak)/float64(bound), "peak-rss/bound")
			if len(cached) > 0 {
				b.ReportMetric(float64(p99(notCached))/float64(p99(cached)), "p99-uncached/cached")
			}
			b.ReportMetric(float64(p99(notCached))/float64(max(p99(storeAlone), 1)), "p99-uncached/store-alone")
			b.Logf("%d resources of %d pods, %d MiB of JSON, budget %d MiB: heap grew at most %d MiB (%.2fx the budget), RSS %d MiB (%.2fx); "+
				"at their peaks, the live heap %d MiB (%.2fx), RSS %d MiB (%.2fx); "+
				"a page of %d by label: p99 %v held (%d pages), %v not held (%d pages), %v from the store alone",
				resources, n, jsonBytes>>20, budget>>20, heapMost>>20, float64(heapMost)/float64(budget), rssMost>>20, float64(rssMost)/float64(budget),
				heapPeak>>20, float64(heapPeak)/float64(budget), rssPeak>>20, float64(rssPeak)/float64(budget),
				page, p99(cached), len(cached), p99(notCached), len(notCached), p99(storeAlone))
			b.Logf("before the cache the process held a live heap of %d MiB and %d MiB resident; at most %d MiB resident, %.2fx the bound of 1.3x the budget + 300 MiB (%d MiB), Go's soft limit %d MiB",
				heapBefore>>20, rssBefore>>20, (rssBefore+rssPeak)>>20, float64(rssBefore+rssPeak)/float64(bound), bound>>20, debug.SetMemoryLimit(-1)>>20)
		})
	}
}
