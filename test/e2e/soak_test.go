package e2e

import (
	"context"
	"fmt"
	"math/rand/v2"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	searchv1alpha1 "github.com/panorama-io/panorama/apis/search/v1alpha1"
	"github.com/panorama-io/panorama/storage/storagetest"
	"github.com/panorama-io/panorama/test/testenv"
)

// The soak's size: what two cores run next to three control planes and
// PostgreSQL in about two minutes.
const (
	soakWatchers     = 200
	soakSlowWatchers = 20                     // each takes soakSlowRead per event
	soakSlowRead     = 100 * time.Millisecond // slower than the churn a watcher sees
	soakChurn        = 60 * time.Second
	soakOpsInterval  = 80 * time.Millisecond // per member
	soakPods         = 40                    // per member at the start
	// Bounds the test holds Panorama to. A fast watcher's longest silence
	// spans the API server's restart (stop, start, watch cache load, the
	// client's backoff); the RSS bounds are several times what was measured.
	soakMaxStall = 45 * time.Second
	soakMaxRSS   = 768 << 20
)

var podsGVR = schema.GroupVersionResource{Version: "v1", Resource: "pods"}

// TestSoak runs Panorama as installed (controller manager and API server as
// processes under the chart's identities, PostgreSQL) under continuous churn
// in two members, with 200 watches through its API (some reading slowly),
// paged lists, and a restart of each component in the middle. At the end
// every watcher's view and Panorama's lists equal the members exactly, no
// fast watcher went silent longer than soakMaxStall, and neither
// component's RSS went over soakMaxRSS.
func TestSoak(t *testing.T) {
	dir := t.TempDir()
	aggregation, err := testenv.AggregationFlags(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	host := testenv.Start(t, func(e *envtest.Environment) { testenv.SetFlags(e, aggregation) })
	members := map[string]*testenv.Env{"east": testenv.Start(t, testenv.WithoutCRDs()), "west": testenv.Start(t, testenv.WithoutCRDs())}
	kubes := map[string]kubernetes.Interface{}
	for name, m := range members {
		cfg := rest.CopyConfig(m.Config)
		cfg.QPS = -1 // the churn sets its own pace
		kube := kubernetes.NewForConfigOrDie(cfg)
		kubes[name] = kube
		createNS(t, kube, "soak")
		for i := range soakPods {
			createPod(t, kube, "soak", fmt.Sprintf("%s-%d", name, i), "a")
		}
	}
	db := storagetest.Backends()[2].Options(t) // PostgreSQL: TestAPIServer runs on MariaDB

	apply(t, host, dir, clustersManifest(t, members["east"], members["west"]))
	controllerKC, apiserverKC := testenv.ShippedIdentities(t, host, dir)
	cm := startProcess(t, "controller-manager", "--kubeconfig", controllerKC, "--storage=postgres", "--storage-dsn", db.DSN,
		"--metrics-bind-address=0", "--health-probe-bind-address=0", "--cluster-health-interval=2s")
	port := freePort(t)
	api := startProcess(t, "apiserver", "--secure-port", strconv.Itoa(port), "--bind-address=127.0.0.1",
		"--cert-dir", filepath.Join(dir, "certs"), "--kubeconfig", apiserverKC,
		"--storage=postgres", "--storage-dsn", db.DSN)
	failIfDenied(t, cm, api)
	waitReady(t, port)
	apply(t, host, dir, rbacManifest)

	client := func(cluster string) dynamic.Interface { return panoramaClient(port, aggregation, cluster) }
	all := client("")
	expect := func() map[string]string { return memberPods(t, kubes) }
	eventuallyT(t, func() error { return sameList("panorama", all, 0, expect()) })

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	views := make([]*soakView, soakWatchers)
	for i := range views {
		cluster := [...]string{"", "east", "west"}[i%3]
		views[i] = newSoakView(cluster, i < soakSlowWatchers)
		go views[i].run(ctx, client(cluster))
	}
	eventuallyT(t, func() error {
		for _, v := range views {
			if err := v.check(expect()); err != nil {
				return err
			}
		}
		return nil
	})

	rss := &peakRSS{}
	go rss.sample(ctx, map[string]*process{"controller-manager": cm, "apiserver": api})
	churnCtx, stopChurn := context.WithTimeout(ctx, soakChurn)
	defer stopChurn()
	var churn sync.WaitGroup
	ops := map[string]*atomic.Int64{}
	for name, kube := range kubes {
		ops[name] = &atomic.Int64{}
		churn.Go(func() { churnPods(churnCtx, t, kube, name, soakOpsInterval, ops[name]) })
	}
	lists := &pagedLists{}
	churn.Go(func() { lists.run(churnCtx, t, all) })
	for _, v := range views {
		v.measureFrom(time.Now())
	}
	time.Sleep(soakChurn / 3)
	api.restart()
	waitReady(t, port)
	time.Sleep(soakChurn / 3)
	cm.restart()
	churn.Wait()
	for _, v := range views {
		v.measureUntil(time.Now())
	}

	started := time.Now()
	want := expect()
	eventuallyT(t, func() error {
		if err := sameList("panorama (paged)", all, 7, want); err != nil {
			return err
		}
		for name := range members {
			if err := sameList("panorama "+name, client(name), 0, filterCluster(want, name)); err != nil {
				return err
			}
		}
		for _, v := range views {
			if err := v.check(want); err != nil {
				return err
			}
		}
		return nil
	})
	converged := time.Since(started)

	var stall time.Duration
	var resumed int64
	for _, v := range views {
		resumed += v.watches.Load() - 1
		if !v.slow {
			stall = max(stall, v.maxGap())
		}
	}
	report(t, "soak", fmt.Sprintf(`member writes: east %d, west %d over %v (API server restarted at 1/3, controller manager at 2/3)
watchers: %d (%d slow), converged %v after the churn stopped; %d watches ended and were resumed
longest silence of a fast watcher during the churn: %v (bound %v)
paged lists during the churn: %d complete, %d pages, %d failed requests (restart windows)
peak RSS: controller manager %d MiB, API server %d MiB (bound %d MiB each)`,
		ops["east"].Load(), ops["west"].Load(), soakChurn, soakWatchers, soakSlowWatchers, converged.Round(time.Millisecond), resumed,
		stall.Round(time.Millisecond), soakMaxStall, lists.complete.Load(), lists.pages.Load(), lists.failed.Load(),
		rss.peak("controller-manager")>>20, rss.peak("apiserver")>>20, soakMaxRSS>>20))
	if stall > soakMaxStall {
		t.Errorf("a fast watcher received nothing for %v during the churn", stall)
	}
	for name := range rss.peaks {
		if p := rss.peak(name); p > soakMaxRSS {
			t.Errorf("%s peak RSS %d MiB, bound %d MiB", name, p>>20, soakMaxRSS>>20)
		}
	}
	if lists.complete.Load() == 0 {
		t.Error("no paged list completed during the churn")
	}
	if msg := lists.inconsistent.Load(); msg != nil {
		t.Errorf("a paged list was inconsistent: %s", *msg)
	}
}

// panoramaClient talks to the API server on port as the host's aggregator
// does: its front-proxy certificate, user alice in X-Remote-User, a view of
// cluster ("" for all). The host's own request timeout would otherwise cut
// every watch after a minute.
func panoramaClient(port int, aggregation map[string]string, cluster string) dynamic.Interface {
	cfg := &rest.Config{
		Host:  fmt.Sprintf("https://127.0.0.1:%d%s", port, searchv1alpha1.ViewPath(cluster)),
		QPS:   -1,
		Burst: -1,
		TLSClientConfig: rest.TLSClientConfig{
			Insecure: true, CertFile: aggregation["proxy-client-cert-file"], KeyFile: aggregation["proxy-client-key-file"],
			NextProtos: []string{"http/1.1"}, // a connection per watch, as many clients have
		},
		WrapTransport: func(rt http.RoundTripper) http.RoundTripper { return asUser{rt, "alice"} },
	}
	return dynamic.NewForConfigOrDie(cfg)
}

// asUser sends the user as the front proxy (the host's aggregator) does.
type asUser struct {
	rt   http.RoundTripper
	user string
}

func (a asUser) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("X-Remote-User", a.user)
	r.Header.Set("X-Remote-Group", "system:authenticated")
	return a.rt.RoundTrip(r)
}

// soakKey names an object across clusters: cluster/namespace/name.
func soakKey(cluster, namespace, name string) string { return cluster + "/" + namespace + "/" + name }

func panoramaKey(u *unstructured.Unstructured) string {
	return soakKey(u.GetAnnotations()["panorama.io/cluster"], u.GetNamespace(), u.GetName())
}

// memberPods is what the members hold: key → member resourceVersion.
func memberPods(t *testing.T, kubes map[string]kubernetes.Interface) map[string]string {
	t.Helper()
	out := map[string]string{}
	for name, kube := range kubes {
		pods, err := kube.CoreV1().Pods("").List(context.Background(), metav1.ListOptions{})
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range pods.Items {
			out[soakKey(name, p.Namespace, p.Name)] = p.ResourceVersion
		}
	}
	return out
}

// filterCluster keeps the keys of cluster; "", the view of all clusters,
// keeps them all.
func filterCluster(m map[string]string, cluster string) map[string]string {
	if cluster == "" {
		return m
	}
	out := map[string]string{}
	for k, v := range m {
		if strings.HasPrefix(k, cluster+"/") {
			out[k] = v
		}
	}
	return out
}

// listAll lists every pod through Panorama, in pages of limit (0: one
// request), as key → member resourceVersion.
func listAll(c dynamic.Interface, limit int64) (map[string]string, error) {
	out := map[string]string{}
	opts := metav1.ListOptions{Limit: limit}
	for {
		page, err := c.Resource(podsGVR).List(context.Background(), opts)
		if err != nil {
			return nil, fmt.Errorf("listing through Panorama: %w", err)
		}
		for i := range page.Items {
			out[panoramaKey(&page.Items[i])] = page.Items[i].GetAnnotations()["panorama.io/member-resource-version"]
		}
		if opts.Continue = page.GetContinue(); opts.Continue == "" {
			return out, nil
		}
	}
}

// sameList says how a list through Panorama differs from want.
func sameList(who string, c dynamic.Interface, limit int64, want map[string]string) error {
	got, err := listAll(c, limit)
	if err != nil {
		return err
	}
	return sameView(who, got, want)
}

// sameView says how got differs from want (nil when equal).
func sameView(who string, got, want map[string]string) error {
	keys := viewDiff(got, want)
	if len(keys) == 0 {
		return nil
	}
	diff := make([]string, 0, 3)
	for _, k := range keys[:min(3, len(keys))] {
		if v, ok := want[k]; ok {
			diff = append(diff, fmt.Sprintf("%s: %q, member %q", k, got[k], v))
		} else {
			diff = append(diff, k+": not in the member")
		}
	}
	return fmt.Errorf("%s differs from the members in %d objects, e.g. %v", who, len(keys), diff)
}

// viewDiff lists, sorted, the keys whose member resourceVersion got and
// want disagree on, those that only one of them has included.
func viewDiff(got, want map[string]string) []string {
	var keys []string
	for k, v := range want {
		if got[k] != v {
			keys = append(keys, k)
		}
	}
	for k := range got {
		if _, ok := want[k]; !ok {
			keys = append(keys, k)
		}
	}
	slices.Sort(keys)
	return keys
}

// churnPods creates, relabels and deletes pods in namespace soak of one
// member, one every interval, until ctx ends, keeping about soakPods of them.
func churnPods(ctx context.Context, t *testing.T, kube kubernetes.Interface, cluster string, interval time.Duration, ops *atomic.Int64) {
	pods := kube.CoreV1().Pods("soak")
	names := make([]string, soakPods)
	for i := range names {
		names[i] = fmt.Sprintf("%s-%d", cluster, i)
	}
	next := soakPods
	zero := int64(0)
	tick := time.NewTicker(interval)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		var err error
		switch n := rand.IntN(3); {
		case n == 0 || len(names) < soakPods/2:
			name := fmt.Sprintf("%s-%d", cluster, next)
			next++
			_, err = pods.Create(ctx, &corev1.Pod{
				ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"app": "a"}},
				Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "nginx"}}},
			}, metav1.CreateOptions{})
			names = append(names, name)
		case n == 1:
			patch := fmt.Sprintf(`{"metadata":{"labels":{"gen":"%d"}}}`, ops.Load())
			_, err = pods.Patch(ctx, names[rand.IntN(len(names))], "application/merge-patch+json", []byte(patch), metav1.PatchOptions{})
		default:
			i := rand.IntN(len(names))
			err = pods.Delete(ctx, names[i], metav1.DeleteOptions{GracePeriodSeconds: &zero})
			names = slices.Delete(names, i, i+1)
		}
		if err != nil && ctx.Err() == nil {
			t.Errorf("churn in %s: %v", cluster, err)
			return
		}
		ops.Add(1)
	}
}

// soakView is one watcher: a client-go reflector (list, watch, resume,
// relist on 410) into a store of its own. A slow one takes soakSlowRead
// per event, so Panorama closes its watch and it resumes.
type soakView struct {
	cluster string
	slow    bool
	store   cache.Store

	watches atomic.Int64 // started: the first, and each resumption
	mu      sync.Mutex
	from    time.Time // measuring gaps from; zero: not measuring
	until   time.Time
	last    time.Time
	gap     time.Duration
}

func newSoakView(cluster string, slow bool) *soakView {
	return &soakView{cluster: cluster, slow: slow, store: cache.NewStore(func(obj any) (string, error) {
		return panoramaKey(obj.(*unstructured.Unstructured)), nil
	})}
}

func (v *soakView) run(ctx context.Context, c dynamic.Interface) {
	lw := &cache.ListWatch{
		ListWithContextFunc: func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
			return c.Resource(podsGVR).List(ctx, o)
		},
		WatchFuncWithContext: func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
			w, err := c.Resource(podsGVR).Watch(ctx, o)
			if err == nil {
				v.watches.Add(1)
			}
			return w, err
		},
	}
	r := cache.NewReflectorWithOptions(lw, &unstructured.Unstructured{}, (*timedStore)(v), cache.ReflectorOptions{})
	r.RunWithContext(ctx)
}

// measureFrom and measureUntil bound the window in which gaps count.
func (v *soakView) measureFrom(t time.Time) {
	v.mu.Lock()
	defer v.mu.Unlock()
	v.from, v.last = t, t
}

func (v *soakView) measureUntil(t time.Time) {
	v.mu.Lock()
	defer v.mu.Unlock()
	v.until = t
	v.gap = max(v.gap, t.Sub(v.last))
}

func (v *soakView) maxGap() time.Duration {
	v.mu.Lock()
	defer v.mu.Unlock()
	return v.gap
}

// received notes a delivery. A slow view reads slowly until the churn
// ends, then catches up: what is measured after is Panorama, not the reader.
func (v *soakView) received() {
	v.mu.Lock()
	churning := v.until.IsZero()
	v.mu.Unlock()
	if v.slow && churning {
		time.Sleep(soakSlowRead)
	}
	now := time.Now()
	v.mu.Lock()
	defer v.mu.Unlock()
	if !v.from.IsZero() && v.until.IsZero() {
		v.gap = max(v.gap, now.Sub(v.last))
		v.last = now
	}
}

// check compares the view with the members' pods (of its cluster).
func (v *soakView) check(want map[string]string) error {
	want = filterCluster(want, v.cluster)
	got := map[string]string{}
	for _, obj := range v.store.List() {
		u := obj.(*unstructured.Unstructured)
		got[panoramaKey(u)] = u.GetAnnotations()["panorama.io/member-resource-version"]
	}
	who := "a watcher across clusters"
	if v.cluster != "" {
		who = "a watcher of " + v.cluster
	}
	return sameView(who, got, want)
}

// timedStore is the reflector's store: the view's, noting each delivery.
type timedStore soakView

func (s *timedStore) Add(obj any) error    { (*soakView)(s).received(); return s.store.Add(obj) }
func (s *timedStore) Update(obj any) error { (*soakView)(s).received(); return s.store.Update(obj) }
func (s *timedStore) Delete(obj any) error { (*soakView)(s).received(); return s.store.Delete(obj) }
func (s *timedStore) List() []any          { return s.store.List() }
func (s *timedStore) ListKeys() []string   { return s.store.ListKeys() }
func (s *timedStore) Get(obj any) (any, bool, error) {
	return s.store.Get(obj)
}
func (s *timedStore) GetByKey(key string) (any, bool, error) { return s.store.GetByKey(key) }
func (s *timedStore) Replace(items []any, rv string) error {
	(*soakView)(s).received()
	return s.store.Replace(items, rv)
}
func (s *timedStore) Resync() error { return nil }

// pagedLists lists every pod in pages of 10 over and over, and checks each
// list is one snapshot: no object twice, none newer than the list.
type pagedLists struct {
	complete, pages, failed atomic.Int64
	inconsistent            atomic.Pointer[string]
}

func (l *pagedLists) run(ctx context.Context, t *testing.T, c dynamic.Interface) {
	for ctx.Err() == nil {
		seen := map[string]bool{}
		opts := metav1.ListOptions{Limit: 10}
		var listRV int64
		for {
			page, err := c.Resource(podsGVR).List(ctx, opts)
			if err != nil {
				if ctx.Err() == nil {
					l.failed.Add(1)
					if apierrors.IsInternalError(err) {
						t.Errorf("paged list: %v", err)
					}
					time.Sleep(200 * time.Millisecond)
				}
				break
			}
			l.pages.Add(1)
			if listRV == 0 {
				listRV, _ = strconv.ParseInt(page.GetResourceVersion(), 10, 64)
			}
			for i := range page.Items {
				key := panoramaKey(&page.Items[i])
				rv, _ := strconv.ParseInt(page.Items[i].GetResourceVersion(), 10, 64)
				if seen[key] || rv > listRV {
					msg := fmt.Sprintf("%s twice or newer (%d) than the list (%d)", key, rv, listRV)
					l.inconsistent.Store(&msg)
				}
				seen[key] = true
			}
			if opts.Continue = page.GetContinue(); opts.Continue == "" {
				l.complete.Add(1)
				break
			}
		}
	}
}

// peakRSS samples the resident set of processes.
type peakRSS struct {
	mu    sync.Mutex
	peaks map[string]int64
}

func (p *peakRSS) sample(ctx context.Context, procs map[string]*process) {
	p.mu.Lock()
	p.peaks = map[string]int64{}
	p.mu.Unlock()
	tick := time.NewTicker(250 * time.Millisecond)
	defer tick.Stop()
	for {
		for name, proc := range procs {
			if rss, err := storagetest.ResidentBytes(proc.pid()); err == nil {
				p.mu.Lock()
				p.peaks[name] = max(p.peaks[name], rss)
				p.mu.Unlock()
			}
		}
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
	}
}

func (p *peakRSS) peak(name string) int64 {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.peaks[name]
}

// report logs a test's figures and, when PANORAMA_REPORT_DIR is set (CI
// sets it), writes them to a file there, since go test shows the logs of
// passing tests only with -v.
func report(t *testing.T, name, figures string) {
	t.Helper()
	t.Log(figures)
	if d := os.Getenv("PANORAMA_REPORT_DIR"); d != "" {
		err := os.MkdirAll(d, 0o755)
		if err == nil {
			err = os.WriteFile(filepath.Join(d, name+".txt"), []byte(figures+"\n"), 0o644)
		}
		if err != nil {
			t.Errorf("writing the report: %v", err)
		}
	}
}
