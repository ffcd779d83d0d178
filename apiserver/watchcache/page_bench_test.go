package watchcache_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/fields"

	"github.com/panorama-io/panorama/apiserver/watchcache"
	"github.com/panorama-io/panorama/storage"
	"github.com/panorama-io/panorama/storage/storagetest"
)

// BenchmarkCachedSearch times searches of 100,000 pods
// (PANORAMA_BENCH_COUNT_OBJECTS of them when set: make bench-count-1m) as
// pages of 100 the watch cache serves, the first page and one from the
// middle of the list (a continue token's), and prints p50 and p99 of each
// as ratios to the store's page of the same query, timed in turn with it
// in the same run. First it lists them all from the cache in pages of
// 500, as the API server reads them, against the cache's unpaged list.
func BenchmarkCachedSearch(b *testing.B) {
	n := storagetest.BenchCountObjects(b, 100_000)
	const runs, page = 21, 100
	searches := []struct {
		name string
		q    storage.ListQuery
	}{
		{"all", storage.ListQuery{}},
		{"app=web (a quarter)", storage.ListQuery{Labels: requirements(b, "app=web")}},
		{"shard=s7 (a thousandth)", storage.ListQuery{Labels: requirements(b, "shard=s7")}},
		{"shard=s7,app!=web", storage.ListQuery{Labels: requirements(b, "shard=s7,app!=web")}},
		{"app=web,tier=front", storage.ListQuery{Labels: requirements(b, "app=web,tier=front")}},
		{"status.phase=Failed", storage.ListQuery{Fields: fields.Requirements{{Field: "status.phase", Operator: "=", Value: "Failed"}}}},
		{"images=team-7/", storage.ListQuery{Images: []string{"team-7/"}}},
		{"namespace=ns-7", storage.ListQuery{Namespaces: []string{"ns-7"}}},
	}
	for _, be := range storagetest.Backends() {
		b.Run(be.Name, func(b *testing.B) {
			s, c := cachedPods(b, be.Name, be.Options(b), n)
			ctx := context.Background()
			cur, compacted, err := s.Revision(ctx)
			if err != nil {
				b.Fatal(err)
			}
			pagedList(b, s, c, n)
			// The middle of the list: a key half the pods precede.
			middle := &storage.Object{Key: storage.Key{Cluster: "north", Namespace: "ns-0", Name: "pod-0"}}
			for _, sc := range searches {
				for _, late := range []bool{false, true} {
					q := sc.q
					q.GVR, q.Limit = storagetest.Pods, page
					// Metrics are named by the query, without the comment.
					name, metric := sc.name, strings.Fields(sc.name)[0]
					if late {
						q.Continue = storage.EncodeContinue(cur, q.Order(), middle)
						name, metric = name+", middle", metric+"-middle"
					}
					var cached, stored []time.Duration
					for range runs {
						start := time.Now()
						got, ok, err := c.Page(ctx, &q, cur, compacted)
						if err != nil || !ok {
							b.Fatalf("%s: ok %v, %v", name, ok, err)
						}
						cached = append(cached, time.Since(start))
						start = time.Now()
						want, err := s.List(ctx, &q)
						if err != nil {
							b.Fatal(err)
						}
						stored = append(stored, time.Since(start))
						if len(got.Objects) != len(want.Objects) || got.Continue != want.Continue {
							b.Fatalf("%s: the cache's page has %d objects, the store's %d", name, len(got.Objects), len(want.Objects))
						}
					}
					slices.Sort(cached)
					slices.Sort(stored)
					p50, p99 := storagetest.Quantile(cached, 0.5), storagetest.Quantile(cached, 0.99)
					sp50, sp99 := storagetest.Quantile(stored, 0.5), storagetest.Quantile(stored, 0.99)
					b.ReportMetric(storagetest.Millis(p50), metric+"-p50-ms")
					b.ReportMetric(float64(p50)/float64(sp50), metric+"-p50/store")
					b.Logf("%s: %d pods, a page of %d, %-34s cached p50 %8v p99 %8v; the store's p50 %8v p99 %8v; ratio %.3fx, %.3fx",
						be.Name, n, page, fmt.Sprintf("%s:", name), p50.Round(time.Microsecond), p99.Round(time.Microsecond),
						sp50.Round(time.Microsecond), sp99.Round(time.Microsecond), float64(p50)/float64(sp50), float64(p99)/float64(sp99))
				}
			}
		})
	}
}

// pagedList times a list of all n pods in pages of 500 from the cache as
// the API server reads them (Reads.List) against the cache's unpaged list,
// each the best of three, timed in turn.
func pagedList(b *testing.B, s storage.Interface, c *watchcache.Cache, n int) {
	ctx := context.Background()
	list := func(limit int64) time.Duration {
		start := time.Now()
		q := &storage.ListQuery{GVR: storagetest.Pods, Limit: limit}
		listed := 0
		for {
			page, ok, err := c.PageApplied(ctx, q)
			if !ok && err == nil {
				var cur, compacted int64
				if cur, compacted, err = s.Revision(ctx); err == nil {
					page, ok, err = c.Page(ctx, q, cur, compacted)
				}
			}
			if err != nil || !ok {
				b.Fatalf("a page from the cache: ok %v, %v", ok, err)
			}
			listed += len(page.Objects)
			if q.Continue = page.Continue; q.Continue == "" {
				break
			}
		}
		if listed != n {
			b.Fatalf("listed %d pods of %d (limit %d)", listed, n, limit)
		}
		return time.Since(start)
	}
	best := storagetest.BestOf3(func() time.Duration { return list(500) }, func() time.Duration { return list(0) })
	paged, unpaged := best[0], best[1]
	b.ReportMetric(float64(paged)/float64(unpaged), "cache-paged/unpaged")
	b.Logf("%d pods from the cache: paged (500) %v, %.2fx the unpaged list (%v)", n, paged.Round(time.Millisecond), float64(paged)/float64(unpaged), unpaged.Round(time.Millisecond))
}
