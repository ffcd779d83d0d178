package apiserver

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"syscall"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/panorama-io/panorama/apiserver/watchcache"
	"github.com/panorama-io/panorama/storage"
	"github.com/panorama-io/panorama/storage/sqlstore"
	"github.com/panorama-io/panorama/storage/storagetest"
)

const (
	// pollSamples are few: each waits half a poll interval on average.
	pollSamples     = 20
	followedSamples = 200
	idleFor         = 10 * time.Second
)

// pollOnly hides the store's feed (storage.Log.Follow) from the watch cache,
// which then finds other processes' writes by its poll alone: the
// baseline.
type pollOnly struct{ storage.Interface }

// Follow follows nothing.
func (pollOnly) Follow(ctx context.Context, _ int64, _ time.Duration, _ func(int64)) { <-ctx.Done() }

// BenchmarkWatchLatency measures, on MariaDB and PostgreSQL, how long a
// write by one store (the controller manager's) takes to reach a watch of
// a watch cache over another store of the same database (an API server's),
// with default flags; as ratios to the same cache finding the write by
// its poll alone, measured in the same run, and beside a bare SQL round
// trip. It also measures the CPU the idle cache uses, with and without its
// feed.
func BenchmarkWatchLatency(b *testing.B) {
	for _, be := range storagetest.Backends() {
		if be.Name == "sqlite" {
			continue // one process owns a SQLite file in practice: Changed serves it
		}
		b.Run(be.Name, func(b *testing.B) {
			opts := be.Options(b)
			writer, served := openBenchStore(b, opts), openBenchStore(b, opts)
			rt := roundTrip(b, writer)
			poll, _, _ := watchLatencies(b, pollOnly{served}, writer, pollSamples, watchcache.DefaultPollInterval)
			followed, afterWrite, writes := watchLatencies(b, served, writer, followedSamples, 2*watchcache.DefaultProbeInterval)
			pollCPU, followedCPU := idleCPU(b, pollOnly{served}), idleCPU(b, served)

			b.ReportMetric(storagetest.Millis(storagetest.Quantile(followed, 0.50)), "p50-ms")
			b.ReportMetric(storagetest.Millis(storagetest.Quantile(followed, 0.99)), "p99-ms")
			b.ReportMetric(float64(storagetest.Quantile(followed, 0.99))/float64(storagetest.Quantile(poll, 0.99)), "p99/poll")
			b.ReportMetric(followedCPU*100, "idle-cpu-%")
			b.Logf("%s: SQL round trip p50 %v; with the feed, the write itself p50 %v p99 %v, from its return to the event p50 %v p99 %v",
				be.Name, rt, storagetest.Quantile(writes, 0.50).Round(10*time.Microsecond), storagetest.Quantile(writes, 0.99).Round(10*time.Microsecond),
				storagetest.Quantile(afterWrite, 0.50).Round(10*time.Microsecond), storagetest.Quantile(afterWrite, 0.99).Round(10*time.Microsecond))
			for _, c := range []struct {
				name string
				lat  []time.Duration
				cpu  float64
			}{{"poll only (baseline)", poll, pollCPU}, {"poll + feed (default)", followed, followedCPU}} {
				p50, p99 := storagetest.Quantile(c.lat, 0.50), storagetest.Quantile(c.lat, 0.99)
				b.Logf("%s: %-22s write→watch event p50 %8v (%5.1fx poll, %6.1fx round trip) p99 %8v (%5.2fx poll); idle CPU %.2f%% of a core",
					be.Name, c.name, p50.Round(10*time.Microsecond), float64(p50)/float64(storagetest.Quantile(poll, 0.50)), float64(p50)/float64(rt),
					p99.Round(10*time.Microsecond), float64(p99)/float64(storagetest.Quantile(poll, 0.99)), c.cpu*100)
			}
		})
	}
}

func openBenchStore(b *testing.B, opts sqlstore.Options) *sqlstore.Store {
	s, err := sqlstore.Open(context.Background(), opts)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = s.Close() })
	return s
}

// roundTrip is the median time of reading the revision, one primary-key row.
func roundTrip(b *testing.B, s storage.Interface) time.Duration {
	times := make([]time.Duration, 200)
	for i := range times {
		start := time.Now()
		if _, _, err := s.Revision(context.Background()); err != nil {
			b.Fatal(err)
		}
		times[i] = time.Since(start)
	}
	slices.Sort(times)
	return storagetest.Quantile(times, 0.50)
}

// watchLatencies writes n pods one at a time through writer, each a random
// time up to spread after the last one's event (so that writes fall at
// every phase of the poll or probe), and times each from the start of its
// write to its event on a watch of a cache over served. It returns them,
// the times from each write's return to its event (what is left when the
// write itself, slow on a loaded machine, is taken out), and the writes'
// own times, each sorted.
func watchLatencies(b *testing.B, served, writer storage.Interface, n int, spread time.Duration) (latencies, afterWrite, writes []time.Duration) {
	w, stop := watchPods(b, served)
	defer stop()
	// Another run's pods are in the database already: name them apart.
	prefix := fmt.Sprintf("lat-%d-", rand.Uint64())
	latencies, afterWrite, writes = make([]time.Duration, n), make([]time.Duration, n), make([]time.Duration, n)
	for i := range latencies {
		time.Sleep(time.Duration(rand.Int64N(int64(spread))))
		name := fmt.Sprintf("%s%d", prefix, i)
		start := time.Now()
		u := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "Pod",
			"metadata": map[string]any{"name": name, "namespace": "bench", "resourceVersion": "1"}}}
		if _, err := writer.ForCluster("east", storage.Unfenced).Apply(context.Background(), podsGVR, []storage.Change{storage.Upsert(u)}); err != nil {
			b.Fatal(err)
		}
		written := time.Now()
		for e := range w.ResultChan() {
			if e.Object != nil && e.Object.Name == name {
				break
			}
		}
		latencies[i], afterWrite[i], writes[i] = time.Since(start), time.Since(written), written.Sub(start)
	}
	for _, s := range [][]time.Duration{latencies, afterWrite, writes} {
		slices.Sort(s)
	}
	return latencies, afterWrite, writes
}

// idleCPU runs a cache over served, with a watch open and nothing written,
// and returns the share of one core the process used meanwhile.
func idleCPU(b *testing.B, served storage.Interface) float64 {
	_, stop := watchPods(b, served)
	defer stop()
	before, start := cpuTime(b), time.Now()
	time.Sleep(idleFor)
	return float64(cpuTime(b)-before) / float64(time.Since(start))
}

// watchPods runs a cache over served with default options, and watches
// its pods from now on, until stop.
func watchPods(b *testing.B, served storage.Interface) (w *watchcache.Watcher, stop func()) {
	ctx, cancel := context.WithCancel(log.IntoContext(context.Background(), logr.Discard()))
	cache := watchcache.New(served, watchcache.Options{})
	go func() { _ = cache.Run(ctx) }()
	w, err := cache.Watch(ctx, &storage.ListQuery{GVR: podsGVR}, watchcache.WatchOptions{})
	if err != nil {
		cancel()
		b.Fatal(err)
	}
	return w, func() { w.Stop(); cancel() }
}

// cpuTime is the user and system CPU time this process has used.
func cpuTime(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
