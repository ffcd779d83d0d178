package controllers_test

import (
	"context"
	"fmt"
	"maps"
	"math"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/config"
	"sigs.k8s.io/controller-runtime/pkg/metrics"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	clusterv1alpha1 "github.com/panorama-io/panorama/apis/cluster/v1alpha1"
	"github.com/panorama-io/panorama/controllers"
	"github.com/panorama-io/panorama/storage/storagetest"
	"github.com/panorama-io/panorama/test/testenv"
)

// reconcileWaitTarget is issue 35's bound on the 99th percentile of the
// time a Cluster waits in the reconcile queue.
const reconcileWaitTarget = time.Second

// BenchmarkFleetReconcile runs the controller manager (the Cluster
// reconciler, its synchronizers and storage, at their default options) on
// a real host where N Clusters, created at once, all point at one real
// member of PANORAMA_BENCH_RECONCILE_OBJECTS ConfigMaps (default 500),
// which each syncs. N runs through PANORAMA_BENCH_RECONCILE_CLUSTERS
// (default 1,100), each on a new host and an empty database. Printed per
// N, each with its baseline from the same run:
//
//   - the time until every Cluster is Ready and Synced, and the rate of
//     objects stored meanwhile, as a ratio to N=1's;
//   - the reconcile queue's wait (controller-runtime's workqueue metrics
//     of the controller "cluster"): the share of waits within 1 s, and the
//     99th percentile's bucket, as a ratio to 1 s, both of the classic
//     buckets (decades) and of the native ones (a few per octave);
//     reconciles and their mean time;
//   - the process's peak resident memory, as a ratio to 1 GiB.
//
// Run with -cpuprofile to see where a reconcile spends its CPU.
func BenchmarkFleetReconcile(b *testing.B) {
	objects := storagetest.EnvInt(b, "PANORAMA_BENCH_RECONCILE_OBJECTS", 500, 10)
	fleets := envInts(b, "PANORAMA_BENCH_RECONCILE_CLUSTERS", []int{1, 100})
	member := testenv.Start(b, testenv.WithoutCRDs())
	testenv.CreateConfigMaps(b, kubernetes.NewForConfigOrDie(member.Config), objects)
	kc, err := clientcmd.LoadFromFile(member.Kubeconfig)
	if err != nil {
		b.Fatal(err)
	}
	kubeconfig, err := clientcmd.Write(*kc)
	if err != nil {
		b.Fatal(err)
	}
	for _, be := range storagetest.Backends() {
		b.Run(be.Name, func(b *testing.B) {
			var oneRate float64
			for i, n := range fleets {
				r := reconcileFleet(b, be, kubeconfig, n)
				rate := float64(n*objects) / r.took.Seconds()
				if i == 0 {
					oneRate = rate
				}
				b.ReportMetric(rate, fmt.Sprintf("sync-%d-objects/s", n))
				b.ReportMetric(r.waitP99.Seconds(), fmt.Sprintf("wait-p99-%d-s", n))
				b.ReportMetric(r.waitP99Native.Seconds(), fmt.Sprintf("wait-p99-native-%d-s", n))
				b.Logf("%s: %3d clusters Ready and Synced in %v: %.0f objects/s, %.2fx the rate of %d cluster(s)",
					be.Name, n, r.took.Round(time.Millisecond), rate, rate/oneRate, fleets[0])
				b.Logf("%s: %3d clusters: %d reconciles, mean %v; queue wait: %.1f%% within 1 s, p99 in the bucket up to %v (%.2fx the 1 s target), mean %v; peak RSS %.0f MiB (%.2fx 1 GiB)",
					be.Name, n, r.reconciles, r.reconcileMean.Round(time.Millisecond), 100*r.waitWithinTarget, r.waitP99, r.waitP99.Seconds()/reconcileWaitTarget.Seconds(),
					r.waitMean.Round(time.Millisecond), mib(r.peak.rss), float64(r.peak.rss)/rssTarget)
				b.Logf("%s: %3d clusters: queue wait p99 in the native bucket up to %v (%.2fx the 1 s target; its buckets %.0f%% wide)",
					be.Name, n, r.waitP99Native.Round(time.Microsecond), r.waitP99Native.Seconds()/reconcileWaitTarget.Seconds(), 100*r.nativeWidth)
			}
		})
	}
}

type fleetReconcile struct {
	took                    time.Duration
	reconciles              uint64
	reconcileMean, waitMean time.Duration
	waitP99                 time.Duration
	waitWithinTarget        float64
	peak                    memory
	// waitP99Native is the 99th percentile's bucket among the native
	// buckets, whose upper bounds are 1+nativeWidth times their lower.
	waitP99Native time.Duration
	nativeWidth   float64
}

// reconcileFleet creates n Clusters of the member at once in a new host,
// runs a controller manager over a new store of be until every one is
// Ready and Synced, and stops it.
func reconcileFleet(b *testing.B, be storagetest.Backend, kubeconfig []byte, n int) fleetReconcile {
	ctx := context.Background()
	host := testenv.Start(b)
	hc := hostClient(b, host)
	opts := be.Options(b)
	if opts.Driver != "sqlite" {
		opts.MaxOpenConns = 20 // the controller manager's default
	}
	store := storagetest.OpenStore(b, opts)
	names := make([]string, n)
	for i := range names {
		names[i] = fmt.Sprintf("fleet-%03d", i)
	}
	if err := hc.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: controllerNamespace}}); err != nil {
		b.Fatal(err)
	}
	if err := hc.Create(ctx, &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: controllerNamespace, Name: "member",
			Annotations: map[string]string{clusterv1alpha1.AnnotationCredentialClusters: strings.Join(names, ",")}},
		Data: map[string][]byte{"kubeconfig": kubeconfig},
	}); err != nil {
		b.Fatal(err)
	}

	mgr, err := ctrl.NewManager(host.Config, ctrl.Options{
		Scheme:                 newScheme(),
		Metrics:                metricsserver.Options{BindAddress: "0"},
		HealthProbeBindAddress: "0",
		Controller:             config.Controller{SkipNameValidation: ptr(true)},
		Logger:                 logr.Discard(),
	})
	if err != nil {
		b.Fatal(err)
	}
	if err := controllers.SetupWithManager(mgr, store, controllers.Options{HealthInterval: 30 * time.Second, SecretNamespace: controllerNamespace}); err != nil {
		b.Fatal(err)
	}
	mgrCtx, stop := context.WithCancel(ctx)
	stopped := make(chan error, 1)
	go func() { stopped <- mgr.Start(mgrCtx) }()
	defer func() {
		stop()
		if err := <-stopped; err != nil {
			b.Error(err)
		}
	}()
	if !mgr.GetCache().WaitForCacheSync(mgrCtx) {
		b.Fatal("the manager's cache did not sync")
	}

	waitsBefore, reconcilesBefore := clusterQueueMetrics(b)
	done := make(chan struct{})
	peak := peakMemory(done)
	start := time.Now()
	testenv.CreateAll(b, n, func(i int) error {
		return hc.Create(ctx, &clusterv1alpha1.Cluster{
			ObjectMeta: metav1.ObjectMeta{Name: names[i]},
			Spec: clusterv1alpha1.ClusterSpec{
				KubeconfigSecretRef: &clusterv1alpha1.SecretKeyRef{Namespace: controllerNamespace, Name: "member"},
				SyncResources:       []clusterv1alpha1.GroupResources{{Resources: []string{"configmaps"}}},
			},
		})
	})
	deadline := time.Now().Add(30 * time.Minute)
	for {
		var list clusterv1alpha1.ClusterList
		if err := hc.List(ctx, &list); err != nil {
			b.Fatal(err)
		}
		ready := 0
		for _, c := range list.Items {
			if meta.IsStatusConditionTrue(c.Status.Conditions, clusterv1alpha1.ConditionReady) && meta.IsStatusConditionTrue(c.Status.Conditions, clusterv1alpha1.ConditionSynced) {
				ready++
			}
		}
		if ready == n {
			break
		}
		if time.Now().After(deadline) {
			b.Fatalf("%d of %d Clusters Ready and Synced after 30 minutes", ready, n)
		}
		time.Sleep(100 * time.Millisecond)
	}
	r := fleetReconcile{took: time.Since(start)}
	close(done)
	r.peak = <-peak
	for _, name := range []string{names[0], names[n-1]} {
		if v, err := store.MemberVersions(ctx, name, configMapsGVR); err != nil || len(v) == 0 {
			b.Fatalf("%s: %d ConfigMaps stored (%v)", name, len(v), err)
		}
	}
	waits, reconciles := clusterQueueMetrics(b)
	r.reconciles = reconciles.GetSampleCount() - reconcilesBefore.GetSampleCount()
	r.reconcileMean = meanOf(reconcilesBefore, reconciles)
	r.waitMean = meanOf(waitsBefore, waits)
	r.waitP99, r.waitWithinTarget = bucketQuantile(waitsBefore, waits, 0.99, reconcileWaitTarget)
	r.waitP99Native, r.nativeWidth = nativeQuantile(b, waitsBefore, waits, 0.99)
	return r
}

// clusterQueueMetrics are controller-runtime's histograms of the Cluster
// controller: its queue's waits and its reconciles' times.
func clusterQueueMetrics(b *testing.B) (waits, reconciles *dto.Histogram) {
	families, err := metrics.Registry.Gather()
	if err != nil {
		b.Fatal(err)
	}
	waits, reconciles = &dto.Histogram{}, &dto.Histogram{}
	for _, f := range families {
		for _, m := range f.GetMetric() {
			labels := map[string]string{}
			for _, l := range m.GetLabel() {
				labels[l.GetName()] = l.GetValue()
			}
			switch {
			case f.GetName() == "workqueue_queue_duration_seconds" && labels["name"] == "cluster":
				waits = m.GetHistogram()
			case f.GetName() == "controller_runtime_reconcile_time_seconds" && labels["controller"] == "cluster":
				reconciles = m.GetHistogram()
			}
		}
	}
	return waits, reconciles
}

func meanOf(before, after *dto.Histogram) time.Duration {
	n := after.GetSampleCount() - before.GetSampleCount()
	if n == 0 {
		return 0
	}
	return time.Duration((after.GetSampleSum() - before.GetSampleSum()) / float64(n) * float64(time.Second))
}

// bucketQuantile is the upper bound of the bucket holding quantile q of
// what after observed beyond before, and the share observed within
// target (a bucket's bound).
func bucketQuantile(before, after *dto.Histogram, q float64, target time.Duration) (time.Duration, float64) {
	total := float64(after.GetSampleCount() - before.GetSampleCount())
	if total == 0 {
		return 0, 1
	}
	var bound time.Duration = math.MaxInt64
	within := 0.0
	for i, bk := range after.GetBucket() {
		count := float64(bk.GetCumulativeCount())
		if i < len(before.GetBucket()) {
			count -= float64(before.GetBucket()[i].GetCumulativeCount())
		}
		upper := time.Duration(bk.GetUpperBound() * float64(time.Second))
		if upper <= target {
			within = count / total
		}
		if count >= q*total && bound == math.MaxInt64 {
			bound = upper
		}
	}
	return bound, within
}

// nativeQuantile is the upper bound of the native bucket holding quantile
// q of what after observed beyond before, and the buckets' relative width.
// controller-runtime keeps its workqueue histograms native too, in buckets
// a few per octave (fewer as the observations spread), where the classic
// buckets are decades. Bucket i of schema s holds the observations in
// (2^((i-1)/2^s), 2^(i/2^s)]; before, older, may be of a finer schema.
func nativeQuantile(tb testing.TB, before, after *dto.Histogram, q float64) (time.Duration, float64) {
	total := after.GetSampleCount() - before.GetSampleCount()
	if total == 0 {
		return 0, 0
	}
	if len(after.GetPositiveSpan()) == 0 {
		tb.Fatal("the queue wait histogram has no native buckets")
	}
	schema := after.GetSchema()
	if before.GetSampleCount() > 0 { // else it may be a histogram not yet made, of no schema
		schema = min(schema, before.GetSchema())
	}
	counts := nativeCounts(after, schema)
	for i, n := range nativeCounts(before, schema) {
		counts[i] -= n
	}
	base := math.Exp2(math.Exp2(-float64(schema)))
	seen := after.GetZeroCount() - before.GetZeroCount()
	if float64(seen) >= q*float64(total) {
		return time.Duration(after.GetZeroThreshold() * float64(time.Second)), base - 1
	}
	for _, i := range slices.Sorted(maps.Keys(counts)) {
		seen += counts[i]
		if float64(seen) >= q*float64(total) {
			return time.Duration(math.Pow(base, float64(i)) * float64(time.Second)), base - 1
		}
	}
	return math.MaxInt64, base - 1
}

// nativeCounts are the counts of h's positive native buckets, by their
// index at schema (at most h's): a bucket of a coarser schema holds 2^d
// of a schema d finer.
func nativeCounts(h *dto.Histogram, schema int32) map[int]uint64 {
	shift := h.GetSchema() - schema
	counts := map[int]uint64{}
	deltas := h.GetPositiveDelta()
	i, count, d := 0, int64(0), 0
	for _, span := range h.GetPositiveSpan() {
		i += int(span.GetOffset())
		for range span.GetLength() {
			count += deltas[d] // each count is given as its change from the previous
			d++
			counts[(i+1<<shift-1)>>shift] += uint64(count)
			i++
		}
	}
	return counts
}

// TestNativeQuantile checks the benchmark's reading of native buckets,
// across a change of schema: the later observations fall in more buckets
// than a native histogram keeps, which makes its buckets coarser.
func TestNativeQuantile(t *testing.T) {
	h := prometheus.NewHistogram(prometheus.HistogramOpts{Name: "waits", Buckets: prometheus.DefBuckets,
		NativeHistogramBucketFactor: 1.1, NativeHistogramMaxBucketNumber: 100, NativeHistogramMinResetDuration: time.Hour})
	snapshot := func() *dto.Histogram {
		var m dto.Metric
		if err := h.Write(&m); err != nil {
			t.Fatal(err)
		}
		return m.GetHistogram()
	}
	for range 50 {
		h.Observe(1e-7) // before: below every later one, which it would move were it counted
	}
	before := snapshot()
	var observed []float64
	for k := range 200 {
		v := 1e-6 * math.Pow(1.1, float64(k)) // a bucket each, at the finest schema
		observed = append(observed, v)
		h.Observe(v)
	}
	after := snapshot()
	if after.GetSchema() >= before.GetSchema() {
		t.Fatalf("schema %d after, %d before: the test wants a coarser one after", after.GetSchema(), before.GetSchema())
	}
	for _, q := range []float64{0.5, 0.99} {
		want := observed[int(math.Ceil(q*float64(len(observed))))-1]
		got, width := nativeQuantile(t, before, after, q)
		if got.Seconds() < want || got.Seconds() > want*(1+width) {
			t.Errorf("quantile %v: bound %v (buckets %.2f wide), want that of the bucket of %.3gs", q, got, width, want)
		}
	}
	// Before the first observation, the histogram may not be there yet.
	if _, width := nativeQuantile(t, &dto.Histogram{}, before, 0.99); width > 0.1 {
		t.Errorf("from no histogram: buckets %.2f wide, want those of the histogram's schema %d", width, before.GetSchema())
	}
}
