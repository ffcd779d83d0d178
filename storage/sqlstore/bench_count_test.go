package sqlstore_test

import (
	"context"
	"testing"
	"time"

	"github.com/panorama-io/panorama/storage"
	"github.com/panorama-io/panorama/storage/sqlstore"
	"github.com/panorama-io/panorama/storage/storagetest"
)

// BenchmarkCount counts benchObjects pods (PANORAMA_BENCH_COUNT_OBJECTS
// of them when set: make bench-count-1m) as storagetest.BenchCounts do,
// each as a ratio to a plain SELECT COUNT(*) of the same table timed in
// the same run, in turn with it so that both see the same load (best of
// several runs each).
func BenchmarkCount(b *testing.B) {
	n := storagetest.BenchCountObjects(b, benchObjects)
	const runs, slow = 5, 10 * time.Second
	for _, be := range storagetest.Backends() {
		b.Run(be.Name, func(b *testing.B) {
			opts := be.Options(b)
			s := storagetest.OpenStore(b, opts)
			ctx := context.Background()
			storagetest.IngestPods(b, be.Name, s, n)
			if err := sqlstore.RefreshStatistics(s); err != nil {
				b.Fatal(err)
			}
			plain := storagetest.PlainCount(b, opts, n)
			for _, c := range storagetest.BenchCounts(b) {
				var best, bestPlain time.Duration
				var res *storage.CountResult
				// A count of more than slow is timed once: the rows' GROUP
				// BY under a selector takes minutes at 1M rows on MariaDB.
				for r := 0; r < runs && (r == 0 || best < slow); r++ {
					if d := plain(); bestPlain == 0 || d < bestPlain {
						bestPlain = d
					}
					start := time.Now()
					var err error
					if res, err = s.Count(ctx, &c.Query); err != nil {
						b.Fatal(err)
					}
					if d := time.Since(start); best == 0 || d < best {
						best = d
					}
				}
				var total int64
				for _, g := range res.Groups {
					total += g.Count
				}
				ratio := float64(best) / float64(bestPlain)
				b.ReportMetric(float64(best.Microseconds())/1000, c.Name+"-ms")
				b.ReportMetric(ratio, c.Name+"/count(*)")
				b.Logf("%s: %d pods by %-36s %8v (%d groups of %d), plain COUNT(*) %v, ratio %.2fx", be.Name, n, c.Name,
					best.Round(time.Microsecond), len(res.Groups), total, bestPlain.Round(time.Microsecond), ratio)
			}
		})
	}
}
