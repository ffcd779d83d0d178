package watchcache_test

import (
	"context"
	"math/rand/v2"
	"os"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"runtime/pprof"
	"testing"
	"time"

	"github.com/panorama-io/panorama/apiserver/watchcache"
	"github.com/panorama-io/panorama/storage"
	"github.com/panorama-io/panorama/storage/storagetest"
)

// BenchmarkCachedObjectMemory loads 10,000 pods as a member serves them
// into a cache and prints what the cache holds per object, its heap and
// the process's resident memory, as ratios to the objects' JSON measured
// in the same run: once synced (the ring then holds their creations), and
// once every pod changed (the ring holds the changes and their
// pre-images), on every database: on SQLite the resident memory also
// holds its page cache, in the same process.
func BenchmarkCachedObjectMemory(b *testing.B) {
	for _, backend := range storagetest.Backends() {
		b.Run(backend.Name, func(b *testing.B) { benchmarkCachedObjectMemory(b, backend.Open(b)) })
	}
}

func benchmarkCachedObjectMemory(b *testing.B, s storage.Interface) {
	const n = 10_000
	ctx := context.Background()
	for round := range 2 {
		storagetest.StoreRealisticPods(b, s, pods, rand.New(rand.NewPCG(11, 11)), n, round, storagetest.InCluster("east"))
		heapBefore, rssBefore := memory(b)
		cctx, cancel := context.WithCancel(ctx)
		c := watchcache.New(s, watchcache.Options{})
		done := make(chan struct{})
		go func() { _ = c.Run(cctx); close(done) }()
		objs, _, err := c.List(ctx, &storage.ListQuery{GVR: pods})
		if err != nil || len(objs) != n {
			b.Fatalf("listed %d pods, %v", len(objs), err)
		}
		var jsonBytes int
		for _, o := range objs {
			jsonBytes += len(o.Data)
		}
		objs = nil
		heap, rss := memory(b)
		perHeap, perRSS := float64(heap-heapBefore)/n, float64(rss-rssBefore)/n
		phase := map[int]string{0: "synced", 1: "changed"}[round]
		b.ReportMetric(perHeap*n/float64(jsonBytes), phase+"-heap/json")
		b.ReportMetric(perRSS*n/float64(jsonBytes), phase+"-rss/json")
		b.Logf("%s: %.0f B of JSON per pod; the cache holds %.0f B of heap per pod (%.2fx), the process %.0f B more resident (%.2fx)",
			phase, float64(jsonBytes)/n, perHeap, perHeap*n/float64(jsonBytes), perRSS, perRSS*n/float64(jsonBytes))
		runtime.KeepAlive(c)
		cancel()
		<-done
	}
}

// memory returns the live heap and the resident set, after a collection
// that returns what it freed to the system.
func memory(b *testing.B) (heap, rss int64) {
	runtime.GC()
	debug.FreeOSMemory()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	rss, err := storagetest.ResidentBytes(os.Getpid())
	if err != nil {
		b.Fatal(err)
	}
	return int64(m.HeapAlloc), rss
}

// peaks samples the live heap (as the last collection found it) and the
// resident set until the returned stop, which returns the most each grew
// over what it was when peaks was called. When
// PANORAMA_BENCH_PEAK_PROFILE names a file, the heap profile at the live
// heap's peak is written to it, to tell what holds the bytes then.
func peaks(b *testing.B) (stop func() (heap, rss int64)) {
	sample := []metrics.Sample{{Name: "/gc/heap/live:bytes"}}
	live := func() int64 {
		metrics.Read(sample)
		return int64(sample[0].Value.Uint64())
	}
	profile := os.Getenv("PANORAMA_BENCH_PEAK_PROFILE")
	_, rssBefore := memory(b)
	heapBefore := live()
	var heapMost, rssMost, profiled int64
	done, stopped := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(stopped)
		tick := time.NewTicker(5 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-done:
				return
			case <-tick.C:
			}
			heap := live() - heapBefore
			if rss, err := storagetest.ResidentBytes(os.Getpid()); err == nil {
				rssMost = max(rssMost, rss-rssBefore)
			}
			if heap <= heapMost {
				continue
			}
			heapMost = heap
			if profile != "" && heap > profiled+profiled/20 {
				profiled = heap
				if f, err := os.Create(profile); err == nil {
					_ = pprof.WriteHeapProfile(f)
					_ = f.Close()
				}
			}
		}
	}()
	return func() (int64, int64) {
		close(done)
		<-stopped
		return heapMost, rssMost
	}
}
