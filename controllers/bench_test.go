package controllers_test

import (
	"context"
	"math"
	"os"
	"runtime"
	"runtime/metrics"
	"strconv"
	"sync"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"

	clusterv1alpha1 "github.com/panorama-io/panorama/apis/cluster/v1alpha1"
	"github.com/panorama-io/panorama/controllers/synchronizer"
	"github.com/panorama-io/panorama/storage"
	"github.com/panorama-io/panorama/storage/storagetest"
	"github.com/panorama-io/panorama/test/testenv"
)

const benchConfigMaps = 10_000

// benchPods is how many pods BenchmarkInitialSync syncs:
// PANORAMA_BENCH_SYNC_PODS when set, else a number that two cores create
// in a minute or two; issue 35 measured 20,000.
func benchPods(b *testing.B) int {
	v := os.Getenv("PANORAMA_BENCH_SYNC_PODS")
	if v == "" {
		return 5_000
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 1 {
		b.Fatalf("PANORAMA_BENCH_SYNC_PODS=%q: want a positive integer", v)
	}
	return n
}

// BenchmarkInitialSync measures the initial sync of a real member's
// objects into each backend, of each kind: benchConfigMaps small
// ConfigMaps, and benchPods pods as a member serves them (testenv's
// CreatePods), its bulk. Each is a ratio to the baseline of a plain paged
// list of the same objects (what any sync costs at least), measured in
// the same run, and to the member's serving of that list (items left as
// JSON): decoding the items, which client-go's dynamic client does over
// and over, is most of a list of pods. Each is the fastest of syncRuns:
// on a loaded machine of two cores one list or sync may take half as long
// again.
func BenchmarkInitialSync(b *testing.B) {
	const syncRuns = 3
	member := testenv.Start(b, testenv.WithoutCRDs())
	kube := kubernetes.NewForConfigOrDie(member.Config)
	dyn := dynamic.NewForConfigOrDie(member.Config)
	// The synchronizer's client is the controller's.
	client, err := synchronizer.NewClient(member.Config)
	if err != nil {
		b.Fatal(err)
	}
	kinds := []struct {
		resource storage.Resource
		create   func()
	}{
		{storage.Resource{GVR: schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}, Kind: "ConfigMap", Namespaced: true},
			func() { testenv.CreateConfigMaps(b, kube, benchConfigMaps) }},
		{storage.Resource{GVR: schema.GroupVersionResource{Version: "v1", Resource: "pods"}, Kind: "Pod", Namespaced: true},
			func() { testenv.CreatePods(b, kube, benchPods(b)) }},
	}
	for _, kind := range kinds {
		b.Run(kind.resource.GVR.Resource, func(b *testing.B) {
			created := time.Now()
			kind.create()
			n, baseline := fastestList(b, dyn, syncRuns, kind.resource.GVR)
			_, served := fastest(syncRuns, func() int {
				return testenv.CountAllUndecoded(b, member.Config, kind.resource.GVR, metav1.ListOptions{Limit: 500})
			})
			b.Logf("baseline: paged list of %d %s (%d bytes of JSON each as stored) in %v (%.0f objects/s), of which the member's serving, items left as JSON, %v; the fastest of %d; created in %v",
				n, kind.resource.GVR.Resource, storedBytes(b, dyn, kind.resource.GVR), baseline.Round(time.Millisecond), float64(n)/baseline.Seconds(),
				served.Round(time.Millisecond), syncRuns, time.Since(created).Round(time.Second))
			for _, be := range storagetest.Backends() {
				b.Run(be.Name, func(b *testing.B) {
					took, peakGrowth := time.Duration(math.MaxInt64), 0.0
					for range syncRuns {
						t, peak := initialSync(b, be, client, kind.resource, n)
						took, peakGrowth = min(took, t), max(peakGrowth, peak)
					}
					b.ReportMetric(float64(n)/took.Seconds(), "objects/s")
					b.ReportMetric(float64(took)/float64(baseline), "x-list")
					b.ReportMetric(float64(took)/float64(served), "x-served")
					b.ReportMetric(peakGrowth, "peak-heap-MiB")
					b.Logf("%s: initial sync of %d %s in %v (the fastest of %d): %.0f objects/s, %.2fx the plain list, %.2fx the member's serving; peak heap %.1f MiB above the start",
						be.Name, n, kind.resource.GVR.Resource, took.Round(time.Millisecond), syncRuns, float64(n)/took.Seconds(), float64(took)/float64(baseline),
						float64(took)/float64(served), peakGrowth)
				})
			}
		})
	}
}

// initialSync syncs r's n objects into a new store of be, and returns how
// long that took and the peak heap growth meanwhile, in MiB.
func initialSync(b *testing.B, be storagetest.Backend, dyn dynamic.Interface, r storage.Resource, n int) (time.Duration, float64) {
	ctx := context.Background()
	store := be.Open(b)
	done := make(chan struct{})
	var once sync.Once
	var s *synchronizer.Synchronizer
	s = synchronizer.New("bench", storage.Unfenced, synchronizer.Resource{Resource: r}, dyn, store,
		synchronizer.Options{}, func() {
			if s.Status().State == clusterv1alpha1.SyncStateSynced {
				once.Do(func() { close(done) })
			}
		})
	runCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	runtime.GC()
	heapBefore := heapInUse()
	peak := peakMemory(done)
	start := time.Now()
	go s.Run(runCtx)
	<-done
	took := time.Since(start)
	cancel()
	peakGrowth := mib((<-peak).heap - heapBefore)
	versions, err := store.MemberVersions(ctx, "bench", r.GVR)
	if err != nil || len(versions) != n {
		b.Fatalf("stored %d of %d (%v)", len(versions), n, err)
	}
	return took, peakGrowth
}

// storedBytes is the size of the compact JSON of one of gvr's objects as
// the synchronizer stores it, without managed fields: what its rows hold.
func storedBytes(b *testing.B, dyn dynamic.Interface, gvr schema.GroupVersionResource) int {
	page, err := dyn.Resource(gvr).List(context.Background(), metav1.ListOptions{Limit: 1})
	if err != nil || len(page.Items) == 0 {
		b.Fatalf("listing one of %s: %d items (%v)", gvr.Resource, len(page.Items), err)
	}
	page.Items[0].SetManagedFields(nil)
	data, err := page.Items[0].MarshalJSON()
	if err != nil {
		b.Fatal(err)
	}
	return len(data)
}

const heapObjects = "/memory/classes/heap/objects:bytes"

// heapInUse is the heap's objects, live or not yet swept: what the
// process's memory follows.
func heapInUse() uint64 {
	sample := []metrics.Sample{{Name: heapObjects}}
	metrics.Read(sample)
	return sample[0].Value.Uint64()
}

// fastestList lists gvrs from the member in pages of 500, runs times, and
// returns how many objects they hold and the fastest run's time: on a
// loaded machine of two cores one list may take half as long again.
func fastestList(b *testing.B, dyn dynamic.Interface, runs int, gvrs ...schema.GroupVersionResource) (int, time.Duration) {
	return fastest(runs, func() int {
		n := 0
		for _, gvr := range gvrs {
			n += testenv.CountAll(b, dyn, gvr, metav1.ListOptions{Limit: 500})
		}
		return n
	})
}

// fastest calls list runs times, and returns what it counted and the
// fastest call's time.
func fastest(runs int, list func() int) (int, time.Duration) {
	n, fastest := 0, time.Duration(math.MaxInt64)
	for range runs {
		t0 := time.Now()
		n = list()
		fastest = min(fastest, time.Since(t0))
	}
	return n, fastest
}

// peakMemory samples memoryNow until done is closed, then sends the peak
// of each.
func peakMemory(done <-chan struct{}) <-chan memory {
	out := make(chan memory, 1)
	go func() {
		var peak memory
		tick := time.NewTicker(5 * time.Millisecond)
		defer tick.Stop()
		for {
			now := memoryNow()
			peak = memory{heap: max(peak.heap, now.heap), rss: max(peak.rss, now.rss)}
			select {
			case <-done:
				out <- peak
				return
			case <-tick.C:
			}
		}
	}()
	return out
}
