package controllers_test

import (
	"context"
	"fmt"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/go-logr/logr"
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
//     99th percentile's bucket, as a ratio to 1 s; reconciles and their
//     mean time;
//   - the process's peak resident memory, as a ratio to 1 GiB.
//
// Run with -cpuprofile to see where a reconcile spends its CPU.
func BenchmarkFleetReconcile(b *testing.B) {
	objects := envInt(b, "PANORAMA_BENCH_RECONCILE_OBJECTS", 500)
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
				b.Logf("%s: %3d clusters Ready and Synced in %v: %.0f objects/s, %.2fx the rate of %d cluster(s)",
					be.Name, n, r.took.Round(time.Millisecond), rate, rate/oneRate, fleets[0])
				b.Logf("%s: %3d clusters: %d reconciles, mean %v; queue wait: %.1f%% within 1 s, p99 in the bucket up to %v (%.2fx the 1 s target), mean %v; peak RSS %.0f MiB (%.2fx 1 GiB)",
					be.Name, n, r.reconciles, r.reconcileMean.Round(time.Millisecond), 100*r.waitWithinTarget, r.waitP99, r.waitP99.Seconds()/reconcileWaitTarget.Seconds(),
					r.waitMean.Round(time.Millisecond), mib(r.peak.rss), float64(r.peak.rss)/rssTarget)
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
