package apiserver

import (
	"context"
	"fmt"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/go-logr/logr"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/log"

	searchv1alpha1 "github.com/panorama-io/panorama/apis/search/v1alpha1"
	"github.com/panorama-io/panorama/apiserver/watchcache"
	"github.com/panorama-io/panorama/storage"
	"github.com/panorama-io/panorama/storage/storagetest"
	"github.com/panorama-io/panorama/test/testenv"
)

// BenchmarkListPaging lists PANORAMA_BENCH_PAGING_OBJECTS pods (default
// 100,000) spread over PANORAMA_BENCH_PAGING_CLUSTERS clusters (default 50)
// on each backend, across clusters, through this handler over HTTP with
// the same client BenchmarkList uses, and prints, measured in the same
// run: the paged list (limit 500) as a ratio to the unpaged one, with the
// items decoded as client-go does and left as JSON (which times the
// server: the watch cache's, once it holds the pods), and the same two
// through the store alone (no HTTP); and the store's
// paged list with one write between pages, as in a live fleet, where each
// page after the first also reads the log of its range since the list's
// revision (the writes' own time not counted). It needs no kube-apiserver:
// BenchmarkList compares a page with kube-apiserver's.
func BenchmarkListPaging(b *testing.B) {
	objects := envCount(b, "PANORAMA_BENCH_PAGING_OBJECTS", 100_000)
	clusters := envCount(b, "PANORAMA_BENCH_PAGING_CLUSTERS", 50)
	for _, backend := range storagetest.Backends() {
		b.Run(backend.Name, func(b *testing.B) {
			store := backend.Open(b)
			cfg, registry := pagingServer(b, store)
			for c := range clusters {
				registry.Set(clusterServing(pagingCluster(c), podsGVR, "Pod"))
			}
			ingestSpread(b, store, objects, clusters)
			client := func() dynamic.Interface {
				cfg := rest.CopyConfig(cfg)
				cfg.QPS, cfg.Burst = -1, 0 // no client-side throttling: time the server
				return dynamic.NewForConfigOrDie(cfg)
			}()
			touched := 0
			touch := func() { // a write between pages, as a live fleet's
				touched++
				u := storagetest.BenchPod(rand.New(rand.NewPCG(1, uint64(touched))), 0, strconv.Itoa(touched))
				if _, err := store.ForCluster(pagingCluster(0), storage.Unfenced).Apply(context.Background(), podsGVR, []storage.Change{storage.Upsert(u)}); err != nil {
					b.Fatal(err)
				}
			}
			lists := []func() (int, time.Duration){
				func() (int, time.Duration) {
					return testenv.CountAll(b, client, podsGVR, metav1.ListOptions{Limit: 500}), 0
				},
				func() (int, time.Duration) { return testenv.CountAll(b, client, podsGVR, metav1.ListOptions{}), 0 },
				func() (int, time.Duration) {
					return testenv.CountAllUndecoded(b, cfg, podsGVR, metav1.ListOptions{Limit: 500}), 0
				},
				func() (int, time.Duration) {
					return testenv.CountAllUndecoded(b, cfg, podsGVR, metav1.ListOptions{}), 0
				},
				func() (int, time.Duration) { return storeCountAll(b, store, 500, nil) },
				func() (int, time.Duration) { return storeCountAll(b, store, 0, nil) },
				func() (int, time.Duration) { return storeCountAll(b, store, 500, touch) },
			}
			var best []time.Duration
			for range b.N {
				best = bestOfEach(b, objects, lists)
			}
			apiPaged, apiUnpaged, rawPaged, rawUnpaged, storePaged, storeUnpaged, storeWritten := best[0], best[1], best[2], best[3], best[4], best[5], best[6]
			ratio := func(a, b time.Duration) float64 { return float64(a) / float64(b) }
			b.ReportMetric(ratio(apiPaged, apiUnpaged), "api-paged/unpaged")
			b.ReportMetric(ratio(rawPaged, rawUnpaged), "api-undecoded-paged/unpaged")
			b.ReportMetric(ratio(rawPaged, storePaged), "api-undecoded-paged/store-paged")
			b.ReportMetric(ratio(storePaged, storeUnpaged), "store-paged/unpaged")
			b.ReportMetric(ratio(apiPaged, storePaged), "api-paged/store-paged")
			b.ReportMetric(ratio(storeWritten, storeUnpaged), "store-paged-written/unpaged")
			b.Logf("%s: store paged while written %v, %.2fx unpaged", backend.Name, storeWritten.Round(time.Millisecond), ratio(storeWritten, storeUnpaged))
			b.Logf("%s: API, items left as JSON (the server's time, not the client's decoding): paged %v, %.2fx unpaged (%v); %.2fx the store's paged list",
				backend.Name, rawPaged.Round(time.Millisecond), ratio(rawPaged, rawUnpaged), rawUnpaged.Round(time.Millisecond), ratio(rawPaged, storePaged))
			b.Logf("%s: %d pods across %d clusters: API paged (limit 500) %v, %.2fx unpaged (%v); store paged %v, %.2fx unpaged (%v); API paged %.2fx store paged",
				backend.Name, objects, clusters, apiPaged.Round(time.Millisecond), ratio(apiPaged, apiUnpaged), apiUnpaged.Round(time.Millisecond),
				storePaged.Round(time.Millisecond), ratio(storePaged, storeUnpaged), storeUnpaged.Round(time.Millisecond), ratio(apiPaged, storePaged))
		})
	}
}

// pagingServer serves the resources path over store, as testServer does
// over SQLite.
func pagingServer(b *testing.B, store storage.Interface) (*rest.Config, *Registry) {
	ctx, cancel := context.WithCancel(log.IntoContext(context.Background(), logr.Discard()))
	b.Cleanup(cancel)
	c := watchcache.New(store, watchcache.Options{PollInterval: 100 * time.Millisecond})
	go func() { _ = c.Run(ctx) }()
	reg := NewRegistry()
	h := &Handler{registry: reg, store: store, cache: c, crds: crdColumns{store: store}, authz: testGrants}
	mux := http.NewServeMux()
	mux.Handle(searchv1alpha1.ViewsPrefix+"/", h)
	srv := httptest.NewServer(asUser(mux))
	b.Cleanup(srv.Close)
	return &rest.Config{Host: srv.URL + searchv1alpha1.ViewPath("")}, reg
}

func pagingCluster(i int) string { return fmt.Sprintf("cluster-%02d", i) }

// ingestSpread stores n BenchPods, batch by batch, each batch in the next
// of clusters, as the clusters' synchronizers would.
func ingestSpread(b *testing.B, s storage.Interface, n, clusters int) {
	rng := rand.New(rand.NewPCG(7, 7))
	start := time.Now()
	for i, batch := 0, 0; i < n; i, batch = i+storagetest.BenchBatch, batch+1 {
		changes := make([]storage.Change, 0, storagetest.BenchBatch)
		for j := i; j < min(i+storagetest.BenchBatch, n); j++ {
			changes = append(changes, storage.Upsert(storagetest.BenchPod(rng, j, "1")))
		}
		if _, err := s.ForCluster(pagingCluster(batch%clusters), storage.Unfenced).Apply(context.Background(), podsGVR, changes); err != nil {
			b.Fatal(err)
		}
	}
	b.Logf("ingested %d pods in %v", n, time.Since(start).Round(time.Millisecond))
}

// storeCountAll lists every pod through the store, limit at a time,
// calling between (when set) between pages, and returns how many it listed
// and how long between took.
func storeCountAll(b *testing.B, s storage.Interface, limit int64, between func()) (int, time.Duration) {
	n := 0
	var untimed time.Duration
	q := &storage.ListQuery{GVR: podsGVR, Limit: limit}
	for {
		page, err := s.List(context.Background(), q)
		if err != nil {
			b.Fatal(err)
		}
		n += len(page.Objects)
		if q.Continue = page.Continue; q.Continue == "" {
			return n, untimed
		}
		if between != nil {
			start := time.Now()
			between()
			untimed += time.Since(start)
		}
	}
}

// bestOfEach is the shortest of three runs of each of lists, which must
// each count want objects, less the time a list says was not its own. The
// lists take turns, so that a machine busier for a while slows them alike.
func bestOfEach(b *testing.B, want int, lists []func() (n int, untimed time.Duration)) []time.Duration {
	runs := make([]func() time.Duration, len(lists))
	for i, list := range lists {
		runs[i] = func() time.Duration {
			start := time.Now()
			got, untimed := list()
			if got != want {
				b.Fatalf("listed %d of %d", got, want)
			}
			return time.Since(start) - untimed
		}
	}
	return storagetest.BestOf3(runs...)
}

func envCount(b *testing.B, key string, def int) int {
	s := os.Getenv(key)
	if s == "" {
		return def
	}
	n, err := strconv.Atoi(s)
	if err != nil || n <= 0 {
		b.Fatalf("%s=%q: want a positive integer", key, s)
	}
	return n
}
