package controllers_test

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"runtime"
	"runtime/pprof"
	"runtime/trace"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/selection"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/log"

	clusterv1alpha1 "github.com/panorama-io/panorama/apis/cluster/v1alpha1"
	"github.com/panorama-io/panorama/apiserver/watchcache"
	"github.com/panorama-io/panorama/controllers/synchronizer"
	"github.com/panorama-io/panorama/storage"
	"github.com/panorama-io/panorama/storage/sqlstore"
	"github.com/panorama-io/panorama/storage/storagetest"
	"github.com/panorama-io/panorama/test/testenv"
)

// The fleet benchmark's targets (issue 15), each printed as the ratio of
// what was measured to it.
const (
	churnPatches = 200
	churnTarget  = 3 * time.Second
	rssTarget    = 1 << 30
	searchTarget = 50 * time.Millisecond
	searchPage   = 100
	listPage     = 500
)

var (
	secretsGVR = schema.GroupVersionResource{Version: "v1", Resource: "secrets"}
	// fleetResources are what every pretend cluster syncs.
	fleetResources = []synchronizer.Resource{
		{Resource: storage.Resource{GVR: configMapsGVR, Kind: "ConfigMap", Namespaced: true}},
		{Resource: storage.Resource{GVR: secretsGVR, Kind: "Secret", Namespaced: true}},
	}
)

// BenchmarkFleet syncs one real member through N Clusters that all point
// at it, as a fleet of N identical clusters: the synchronizer pool of the
// controller manager, one member client per cluster (as the reconciler
// makes), into each backend. The member holds PANORAMA_BENCH_FLEET_OBJECTS
// objects (default 2,500: four fifths ConfigMaps, a fifth Secrets, plus
// the few a control plane makes), and N runs through
// PANORAMA_BENCH_FLEET_CLUSTERS (default 1,10,50), each into an empty
// database. Printed, each with its baseline from the same run:
//
//   - initial sync rate per N, as a ratio to N=1's and to a bare paged
//     list of the member; the peak heap and resident memory of the process
//     (the controller's pool, and below the API server's watch cache: the
//     two components in one process), RSS as a ratio to 1 GiB; the longest
//     database lock wait (MariaDB, PostgreSQL), as a ratio to 1 s;
//
// then, at the largest N:
//
//   - churn: 200 patches in the member, the time until all N copies of
//     each are in SQL, as a ratio to 3 s and to the time the patches took
//     to send; the watch latency (member patch to event on a watch of
//     Panorama's watch cache over a second store, as an API server has)
//     p50/p99, as ratios to a watch of the member itself; where the
//     store's writer spent the time until the last copy was in SQL (the
//     stages of panorama_storage_write_seconds);
//   - a paged list (limit 500) of every ConfigMap of every cluster through
//     the storage (no HTTP), as ratios to the unpaged list of the same and
//     to kube-apiserver's paged list of the member's ConfigMaps, N times
//     (the same number of objects);
//   - search: a page of 100 by a label matching a tenth of them, p50/p99,
//     as ratios to 50 ms and to the same page from kube-apiserver.
//
// PANORAMA_BENCH_CHURN_PROFILE=<file> profiles the churn (churnProfile).
//
// make bench-1m runs it with 100,000 objects and N = 1, 10 on MariaDB and
// PostgreSQL: 1M objects stored.
func BenchmarkFleet(b *testing.B) {
	objects := storagetest.EnvInt(b, "PANORAMA_BENCH_FLEET_OBJECTS", 2500, 10)
	fleets := envInts(b, "PANORAMA_BENCH_FLEET_CLUSTERS", []int{1, 10, 50})
	member := testenv.Start(b, testenv.WithoutCRDs())
	kube := kubernetes.NewForConfigOrDie(member.Config)
	dyn := dynamic.NewForConfigOrDie(member.Config)
	ctx := log.IntoContext(context.Background(), logr.Discard())

	t0 := time.Now()
	secrets := objects / 5
	testenv.CreateConfigMaps(b, kube, objects-secrets)
	createSecrets(b, kube, secrets)
	b.Logf("member: %d objects created in %v", objects, time.Since(t0).Round(time.Second))

	// The baseline of a sync: a bare paged list of what is synced, the
	// fastest of three (as BenchmarkInitialSync's): the first list of
	// 100,000 objects right after they were created took 6.4 s, half as
	// long again as a later one.
	const baselineRuns = 3
	var synced []schema.GroupVersionResource
	for _, r := range fleetResources {
		synced = append(synced, r.GVR)
	}
	perCluster, memberList := fastestList(b, dyn, baselineRuns, synced...)
	listRate := float64(perCluster) / memberList.Seconds()
	b.Logf("baseline: the member's paged list of its %d objects in %v (%.0f objects/s), the fastest of %d", perCluster, memberList.Round(time.Millisecond), listRate, baselineRuns)

	for _, be := range storagetest.Backends() {
		b.Run(be.Name, func(b *testing.B) {
			var oneRate float64
			for i, n := range fleets {
				opts := be.Options(b)
				if opts.Driver != "sqlite" {
					opts.MaxOpenConns = 20 // the controller manager's default
				}
				store := storagetest.OpenStore(b, opts)
				f := syncFleet(b, ctx, store, opts, func(string) *rest.Config { return member.Config }, n, perCluster)
				rate := float64(n*perCluster) / f.took.Seconds()
				if i == 0 {
					oneRate = rate
				}
				b.ReportMetric(rate, fmt.Sprintf("sync-%d-objects/s", n))
				b.Logf("%s: %2d clusters: initial sync of %d objects in %v: %.0f objects/s, %.2fx the rate of %d cluster(s), %.2fx the member's paged list rate",
					be.Name, n, n*perCluster, f.took.Round(time.Millisecond), rate, rate/oneRate, fleets[0], rate/listRate)
				b.Logf("%s: %2d clusters: peak heap %.0f MiB (%.0f MiB above the start); peak RSS %.0f MiB (%.2fx 1 GiB; %.0f MiB above the start); longest lock wait %v (%.2fx 1 s), at most %d sessions waiting at once",
					be.Name, n, mib(f.peak.heap), mib(f.peak.heap-min(f.before.heap, f.peak.heap)), mib(f.peak.rss), float64(f.peak.rss)/rssTarget,
					mib(f.peak.rss-min(f.before.rss, f.peak.rss)), f.locks.Longest, f.locks.Longest.Seconds(), f.locks.MostWaiting)
				if i < len(fleets)-1 {
					f.stop()
					continue
				}
				served := store
				if opts.Driver != "sqlite" {
					served = storagetest.OpenStore(b, opts) // the API server's own
				}
				// Default options: a group of the fleet's churn publishes
				// thousands of changes at once, which the watch reads from
				// the ring past its queue.
				cache := watchcache.New(served, watchcache.Options{})
				cacheCtx, stopCache := context.WithCancel(ctx)
				go func() { _ = cache.Run(cacheCtx) }()
				churn(b, cacheCtx, store, cache, opts, kube, n, be.Name)
				paths := pagePaths(b, served, cache)
				lists(b, ctx, paths, dyn, n)
				search(b, ctx, paths, dyn)
				stopCache()
				f.stop()
			}
		})
	}
}

type memory struct{ heap, rss uint64 }

type fleetSync struct {
	took         time.Duration
	before, peak memory
	locks        storagetest.LockWaits
	stop         func()
}

// syncFleet runs a synchronizer pool syncing n clusters, each its own
// client of the member, of the config member returns for it, until every
// cluster's resources are synced, and checks that storage holds each
// cluster's objects.
func syncFleet(b *testing.B, ctx context.Context, store storage.Interface, opts sqlstore.Options, member func(cluster string) *rest.Config, n, perCluster int) fleetSync {
	var mu sync.Mutex
	synced := map[string]bool{}
	done := make(chan struct{})
	var pool *synchronizer.Pool
	pool = synchronizer.NewPool(store, synchronizer.Options{}, func(cluster string) {
		statuses := pool.Statuses(cluster)
		if len(statuses) < len(fleetResources) {
			return
		}
		for _, s := range statuses {
			if s.State != clusterv1alpha1.SyncStateSynced {
				return
			}
		}
		mu.Lock()
		defer mu.Unlock()
		if !synced[cluster] {
			synced[cluster] = true
			if len(synced) == n {
				close(done)
			}
		}
	})
	clients := make([]dynamic.Interface, n)
	for i := range clients {
		cfg := rest.CopyConfig(member(fleetCluster(i)))
		cfg.QPS, cfg.Burst = 100, 200 // memberQPS, memberBurst
		c, err := synchronizer.NewClient(cfg)
		if err != nil {
			b.Fatal(err)
		}
		clients[i] = c
	}
	f := fleetSync{before: memoryNow()}
	stopLocks := storagetest.WatchLockWaits(b, opts)
	peak := peakMemory(done)
	start := time.Now()
	for i, c := range clients {
		if err := pool.Ensure(ctx, fleetCluster(i), "bench", storage.Unfenced, c, synchronizer.Selection{Resources: fleetResources}); err != nil {
			b.Fatal(err)
		}
	}
	select {
	case <-done:
	case <-time.After(time.Hour):
		b.Fatal("the fleet did not sync within an hour")
	}
	f.took = time.Since(start)
	f.peak = <-peak
	f.locks = stopLocks()
	for _, i := range []int{0, n - 1} {
		stored := 0
		for _, r := range fleetResources {
			versions, err := store.MemberVersions(ctx, fleetCluster(i), r.GVR)
			if err != nil {
				b.Fatal(err)
			}
			stored += len(versions)
		}
		if stored != perCluster {
			b.Fatalf("%s: stored %d of %d objects", fleetCluster(i), stored, perCluster)
		}
	}
	f.stop = pool.StopAll
	return f
}

// createSecrets creates n Secrets of a token each in the member's
// namespace default.
func createSecrets(b *testing.B, kube kubernetes.Interface, n int) {
	b.Helper()
	testenv.CreateAll(b, n, func(i int) error {
		s := &corev1.Secret{
			ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: fmt.Sprintf("secret-%05d", i)},
			StringData: map[string]string{"token": fmt.Sprintf("token-%d", i)},
		}
		_, err := kube.CoreV1().Secrets("default").Create(context.Background(), s, metav1.CreateOptions{})
		return err
	})
}

func fleetCluster(i int) string { return fmt.Sprintf("fleet-%02d", i) }

// churn patches churnPatches ConfigMaps of the member and times until the
// n copies of each are in SQL (read from the change log), and the watch
// latency of cache (an API server's, over its own store) and of a watch of
// the member.
//
// Each run patches in a label of its own value (round), which changes
// the objects whatever runs came before.
func churn(b *testing.B, ctx context.Context, store storage.Interface, cache *watchcache.Cache, opts sqlstore.Options, kube kubernetes.Interface, n int, round string) {
	rev, _, err := store.Revision(ctx)
	if err != nil {
		b.Fatal(err)
	}
	runtime.GC()
	heapBefore := heapInUse()
	t0 := time.Now()
	panoramaWatch, err := cache.Watch(ctx, &storage.ListQuery{GVR: configMapsGVR}, watchcache.WatchOptions{ResourceVersion: rev})
	if err != nil {
		b.Fatal(err)
	}
	defer panoramaWatch.Stop()
	runtime.GC()
	b.Logf("watch cache: loaded %d clusters' ConfigMaps in %v, heap +%.0f MiB", n, time.Since(t0).Round(time.Millisecond), mib(heapInUse()-heapBefore))
	cms, err := kube.CoreV1().ConfigMaps("default").List(ctx, metav1.ListOptions{Limit: 1})
	if err != nil {
		b.Fatal(err)
	}
	memberWatch, err := kube.CoreV1().ConfigMaps("default").Watch(ctx, metav1.ListOptions{ResourceVersion: cms.ResourceVersion})
	if err != nil {
		b.Fatal(err)
	}
	defer memberWatch.Stop()

	want := churnPatches * n
	var sent sync.Map // name -> time its patch was sent
	panoramaSeen := make(chan []time.Duration, 1)
	go func() {
		var lat []time.Duration
		for e := range panoramaWatch.ResultChan() {
			if e.Type != watch.Modified || e.Object == nil {
				continue
			}
			if at, ok := sent.Load(e.Object.Name); ok {
				lat = append(lat, time.Since(at.(time.Time)))
				if len(lat) == want {
					break
				}
			}
		}
		panoramaSeen <- lat
	}()
	memberSeen := make(chan []time.Duration, 1)
	go func() {
		var lat []time.Duration
		for e := range memberWatch.ResultChan() {
			if cm, ok := e.Object.(*corev1.ConfigMap); ok && e.Type == watch.Modified {
				if at, ok := sent.Load(cm.Name); ok {
					lat = append(lat, time.Since(at.(time.Time)))
					if len(lat) == churnPatches {
						break
					}
				}
			}
		}
		memberSeen <- lat
	}()
	inSQL := make(chan time.Duration, 1)
	stages := storagetest.WriteStages(b)
	start := time.Now()
	go func() { inSQL <- waitLogged(b, ctx, store, rev, want, start) }()

	stopLocks := storagetest.WatchLockWaits(b, opts)
	stopProfile := cpuProfile(b, os.Getenv("PANORAMA_BENCH_CHURN_PROFILE"))
	testenv.CreateAll(b, churnPatches, func(i int) error {
		name := fmt.Sprintf("cm-%05d", i)
		sent.Store(name, time.Now())
		_, err := kube.CoreV1().ConfigMaps("default").Patch(ctx, name, types.MergePatchType, []byte(fmt.Sprintf(`{"metadata":{"labels":{"churn":%q}}}`, round)), metav1.PatchOptions{})
		return err
	})
	sending := time.Since(start)
	took := <-inSQL
	stopProfile()
	b.Logf("churn: the store's writer until then, %s", storagetest.StagesSince(b, stages))
	locks := stopLocks()
	var pLat, mLat []time.Duration
	select {
	case pLat = <-panoramaSeen:
	case <-time.After(time.Minute):
		b.Fatal("the watch cache did not deliver every churned copy within a minute of it being in SQL")
	}
	select {
	case mLat = <-memberSeen:
	case <-time.After(time.Minute):
		b.Fatal("the member's watch did not deliver every patch within a minute")
	}
	if len(pLat) != want || len(mLat) != churnPatches {
		b.Fatalf("watched %d of %d copies through Panorama, %d of %d patches of the member", len(pLat), want, len(mLat), churnPatches)
	}
	slices.Sort(pLat)
	slices.Sort(mLat)
	b.ReportMetric(took.Seconds(), "churn-s")
	b.ReportMetric(storagetest.Millis(storagetest.Quantile(pLat, 0.99)), "watch-p99-ms")
	b.Logf("churn: %d patches × %d copies in SQL %v after the first was sent (%.2fx the 3 s target; %.2fx the %v the patches took to send); longest lock wait %v, at most %d waiting",
		churnPatches, n, took.Round(time.Millisecond), took.Seconds()/churnTarget.Seconds(), float64(took)/float64(sending), sending.Round(time.Millisecond), locks.Longest, locks.MostWaiting)
	b.Logf("churn: watch latency, member patch → Panorama watch event, p50 %v p99 %v (%.1fx, %.1fx a watch of the member: p50 %v p99 %v)",
		storagetest.Quantile(pLat, 0.5).Round(time.Millisecond), storagetest.Quantile(pLat, 0.99).Round(time.Millisecond),
		float64(storagetest.Quantile(pLat, 0.5))/float64(storagetest.Quantile(mLat, 0.5)), float64(storagetest.Quantile(pLat, 0.99))/float64(storagetest.Quantile(mLat, 0.99)),
		storagetest.Quantile(mLat, 0.5).Round(time.Millisecond), storagetest.Quantile(mLat, 0.99).Round(time.Millisecond))
}

// cpuProfile records until stop, when path names a file: a CPU profile
// there and an execution trace beside it (.trace), whose blocking profiles
// (go tool trace -pprof=net, -pprof=sched) show what the store's writer
// waits on. The churn's (PANORAMA_BENCH_CHURN_PROFILE) is from the first
// patch until every copy is in SQL.
func cpuProfile(b *testing.B, path string) (stop func()) {
	if path == "" {
		return func() {}
	}
	create := func(name string) *os.File {
		f, err := os.Create(name)
		if err != nil {
			b.Fatal(err)
		}
		return f
	}
	profile, traced := create(path), create(path+".trace")
	if err := pprof.StartCPUProfile(profile); err != nil {
		b.Fatal(err)
	}
	if err := trace.Start(traced); err != nil {
		b.Fatal(err)
	}
	return func() {
		pprof.StopCPUProfile()
		trace.Stop()
		for _, f := range []*os.File{profile, traced} {
			if err := f.Close(); err != nil {
				b.Error(err)
			}
		}
	}
}

// waitLogged reads the change log after rev until it holds want entries,
// and returns how long after start the last one was read.
func waitLogged(b *testing.B, ctx context.Context, store storage.Interface, rev int64, want int, start time.Time) time.Duration {
	seen := 0
	deadline := time.Now().Add(10 * time.Minute)
	for seen < want {
		events, _, err := store.Changes(ctx, rev, 5000)
		if err != nil {
			b.Error(err)
			return 0
		}
		for _, e := range events {
			if e.Key.GVR == configMapsGVR && e.Type == watch.Modified {
				seen++
			}
			rev = e.Revision
		}
		if len(events) == 0 {
			if time.Now().After(deadline) {
				b.Errorf("%d of %d churned copies in SQL after 10 minutes", seen, want)
				return 0
			}
			time.Sleep(5 * time.Millisecond)
		}
	}
	return time.Since(start)
}

// pagePath is a way an API server reads a page: from the store, or from
// its watch cache (as it does once the cache holds the resource).
type pagePath struct {
	name, metric string
	page         func(ctx context.Context, q *storage.ListQuery) *storage.ListResult
}

// pagePaths are the store's path and the watch cache's, both over served,
// an API server's store.
func pagePaths(b *testing.B, served storage.Interface, cache *watchcache.Cache) []pagePath {
	return []pagePath{
		{"storage path", "", func(ctx context.Context, q *storage.ListQuery) *storage.ListResult {
			page, err := served.List(ctx, q)
			if err != nil {
				b.Fatal(err)
			}
			return page
		}},
		{"watch cache path", "cache-", func(ctx context.Context, q *storage.ListQuery) *storage.ListResult {
			cur, compacted, err := served.Revision(ctx)
			if err != nil {
				b.Fatal(err)
			}
			page, ok, err := cache.Page(ctx, q, cur, compacted)
			if err != nil || !ok {
				b.Fatalf("a page from the watch cache: ok %v, %v", ok, err)
			}
			return page
		}},
	}
}

// lists times a paged and an unpaged list of every cluster's ConfigMaps
// on each path, and kube-apiserver's paged list of the member's, each the
// best of three.
func lists(b *testing.B, ctx context.Context, paths []pagePath, member dynamic.Interface, n int) {
	var memberCount int
	kubePaged := storagetest.BestOf3(storagetest.Timed(func() {
		memberCount = testenv.CountAll(b, member, configMapsGVR, metav1.ListOptions{Limit: listPage})
	}))[0]
	kubeSame := kubePaged * time.Duration(n)
	for _, path := range paths {
		listAll := func(limit int64, count *int) func() {
			return func() {
				*count = 0
				q := &storage.ListQuery{GVR: configMapsGVR, Limit: limit}
				for {
					page := path.page(ctx, q)
					*count += len(page.Objects)
					if q.Continue = page.Continue; q.Continue == "" {
						return
					}
				}
			}
		}
		var pagedCount, count int
		// In turn: on MariaDB, a paged list timed three times before the
		// unpaged one, right after the churn, came out at 1.1-3.2 x it
		// from run to run.
		best := storagetest.BestOf3(storagetest.Timed(listAll(listPage, &pagedCount)), storagetest.Timed(listAll(0, &count)))
		paged, unpaged := best[0], best[1]
		if pagedCount != count || count != n*memberCount {
			b.Fatalf("%s: listed %d paged and %d unpaged, want %d × %d", path.name, pagedCount, count, n, memberCount)
		}
		b.ReportMetric(float64(paged)/float64(unpaged), path.metric+"paged/unpaged")
		b.ReportMetric(float64(paged)/float64(kubeSame), path.metric+"paged/kube")
		b.Logf("list of %d ConfigMaps across %d clusters, %s: paged (limit %d) %v, %.2fx unpaged (%v), %.2fx kube-apiserver's paged list of the member's %d × %d (%v × %d)",
			count, n, path.name, listPage, paged.Round(time.Millisecond), float64(paged)/float64(unpaged), unpaged.Round(time.Millisecond),
			float64(paged)/float64(kubeSame), memberCount, n, kubePaged.Round(time.Millisecond), n)
	}
}

// search times the first page of searchPage ConfigMaps labelled app=aK,
// a tenth of them, across every cluster, on each path, and the same page
// from the member's kube-apiserver.
func search(b *testing.B, ctx context.Context, paths []pagePath, member dynamic.Interface) {
	const samples = 200
	kube := make([]time.Duration, samples/4)
	for i := range kube {
		t0 := time.Now()
		if _, err := member.Resource(configMapsGVR).List(ctx, metav1.ListOptions{LabelSelector: fmt.Sprintf("app=a%d", i%10), Limit: searchPage}); err != nil {
			b.Fatal(err)
		}
		kube[i] = time.Since(t0)
	}
	slices.Sort(kube)
	for _, path := range paths {
		panorama := make([]time.Duration, samples)
		for i := range panorama {
			app := fmt.Sprintf("a%d", i%10)
			req, err := labels.NewRequirement("app", selection.Equals, []string{app})
			if err != nil {
				b.Fatal(err)
			}
			t0 := time.Now()
			page := path.page(ctx, &storage.ListQuery{GVR: configMapsGVR, Labels: labels.Requirements{*req}, Limit: searchPage})
			panorama[i] = time.Since(t0)
			if len(page.Objects) != searchPage || !bytes.Contains(page.Objects[searchPage-1].Data, []byte(`"app":"`+app+`"`)) {
				b.Fatalf("%s: search app=%s: %d objects, the last %s", path.name, app, len(page.Objects), page.Objects[len(page.Objects)-1].Data)
			}
		}
		slices.Sort(panorama)
		p50, p99 := storagetest.Quantile(panorama, 0.5), storagetest.Quantile(panorama, 0.99)
		b.ReportMetric(storagetest.Millis(p50), path.metric+"search-p50-ms")
		b.ReportMetric(storagetest.Millis(p99), path.metric+"search-p99-ms")
		b.Logf("search, a page of %d by label (a tenth match), %s: p50 %v (%.2fx the 50 ms target, %.2fx kube-apiserver's %v), p99 %v (%.2fx kube-apiserver's %v)",
			searchPage, path.name, p50.Round(10*time.Microsecond), float64(p50)/float64(searchTarget), float64(p50)/float64(storagetest.Quantile(kube, 0.5)), storagetest.Quantile(kube, 0.5).Round(10*time.Microsecond),
			p99.Round(10*time.Microsecond), float64(p99)/float64(storagetest.Quantile(kube, 0.99)), storagetest.Quantile(kube, 0.99).Round(10*time.Microsecond))
	}
}

func mib(bytes uint64) float64 { return float64(bytes) / (1 << 20) }

// memoryNow is the heap (as heapInUse) and the resident memory of the
// process (0 where /proc cannot tell).
func memoryNow() memory {
	rss, _ := storagetest.ResidentBytes(os.Getpid())
	return memory{heap: heapInUse(), rss: uint64(rss)}
}

func envInts(b *testing.B, name string, def []int) []int {
	v := os.Getenv(name)
	if v == "" {
		return def
	}
	var out []int
	for f := range strings.SplitSeq(v, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n < 1 {
			b.Fatalf("%s=%q: want cluster counts, comma-separated", name, v)
		}
		out = append(out, n)
	}
	return out
}
