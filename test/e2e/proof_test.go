package e2e

import (
	"context"
	"fmt"
	"maps"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"github.com/panorama-io/panorama/controllers"
	"github.com/panorama-io/panorama/controllers/sharding"
	"github.com/panorama-io/panorama/storage"
	"github.com/panorama-io/panorama/storage/storagetest"
	"github.com/panorama-io/panorama/test/testenv"
)

// The scale-out proof's size: what two cores run next to seven control
// planes and a three-node Galera cluster in about three minutes.
const (
	scaleMembers     = 6
	scaleShards      = 6
	scaleOpsInterval = 200 * time.Millisecond // per member
	// scalePhase is how long the churn runs before, between and after the
	// faults.
	scalePhase = 8 * time.Second
	// scaleKilledNode is the Galera node killed: the third replicas' (each
	// controller manager and API server i is on node i+1).
	scaleKilledNode = 3
	// Caps that only keep a broken run from hanging, not performance bounds.
	scaleMaxFailover = time.Minute
	scaleMaxConverge = 3 * time.Minute
)

// Short shard leases, as the sharding tests use, so that failover is quick.
var scaleLeaseFlags = []string{"--shard-lease-duration=6s", "--shard-renew-deadline=4s", "--shard-retry-period=1s"}

// TestScaleOut runs Panorama scaled out as the chart installs it with
// replicas: three controller managers sharing six member clusters by
// shards, three API servers, under the chart's identities, each pair on a
// different node of a three-node Galera cluster. While pods churn in every
// member, one controller manager is killed (kill -9: its Leases stay held
// until they expire) and, once its shards are taken over, one Galera node
// is killed and brought back. Then every API server's lists equal the
// members exactly, and a watcher on each API server, which watched from
// before the churn and resumed after every disconnection without ever
// listing again, received exactly the change log's pod changes, in
// revision order, none twice, and holds what the members hold.
func TestScaleOut(t *testing.T) {
	storagetest.GaleraScript(t, "start") // an earlier run may have left a node down
	t.Cleanup(func() { storagetest.GaleraScript(t, "start-node", strconv.Itoa(scaleKilledNode)) })
	dbs := storagetest.Galera(t)
	log := storagetest.OpenStore(t, dbs[0]) // migrates the schema before the processes open it
	dir := t.TempDir()
	aggregation, err := testenv.AggregationFlags(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	host := testenv.Start(t, func(e *envtest.Environment) { testenv.SetFlags(e, aggregation) })
	hostKube := kubernetes.NewForConfigOrDie(host.Config)

	replicas := make([]string, len(dbs))
	for i := range replicas {
		replicas[i] = fmt.Sprintf("cm-%d", i)
	}
	names, owner := scaleClusterNames(replicas)
	members := make([]*testenv.Env, len(names))
	kubes := map[string]kubernetes.Interface{}
	for i, name := range names {
		members[i] = testenv.Start(t, testenv.WithoutCRDs()) // one at a time: they start faster than side by side
		cfg := rest.CopyConfig(members[i].Config)
		cfg.QPS = -1 // the churn sets its own pace
		kube := kubernetes.NewForConfigOrDie(cfg)
		kubes[name] = kube
		createNS(t, kube, "soak")
		for j := range soakPods {
			createPod(t, kube, "soak", fmt.Sprintf("%s-%d", name, j), "a")
		}
	}
	apply(t, host, dir, namedClustersManifest(t, names, members))
	controllerKC, apiserverKC := testenv.ShippedIdentities(t, host, dir)
	procs := map[string]*process{}
	cms := make([]*process, len(replicas))
	ports := make([]int, len(replicas))
	for i, id := range replicas {
		// As the chart runs them (--leader-elect, the Leases in the release's
		// namespace, --shards), compaction late enough that the log still
		// holds every change of the test when it is checked.
		cms[i] = startProcess(t, "controller-manager", append([]string{"--kubeconfig", controllerKC,
			"--storage=mysql", "--storage-dsn", dbs[i].DSN, "--metrics-bind-address=0", "--health-probe-bind-address=0",
			"--cluster-health-interval=2s", "--compaction-interval=30m", "--leader-elect",
			"--leader-election-namespace=" + testenv.ShippedNamespace, "--shards=" + strconv.Itoa(scaleShards),
			"--replica-identity=" + id}, scaleLeaseFlags...)...)
		ports[i] = freePort(t)
		api := startProcess(t, "apiserver", "--secure-port", strconv.Itoa(ports[i]), "--bind-address=127.0.0.1",
			"--cert-dir", filepath.Join(dir, fmt.Sprintf("certs-%d", i)), "--kubeconfig", apiserverKC,
			"--storage=mysql", "--storage-dsn", dbs[i].DSN)
		failIfDenied(t, cms[i], api)
		procs["controller manager "+id], procs[fmt.Sprintf("API server %d", i)] = cms[i], api
	}
	for _, port := range ports {
		waitReady(t, port)
	}
	apply(t, host, dir, rbacManifest)

	// Each replica syncs the clusters rendezvous hashing gives it.
	eventuallyT(t, func() error {
		holders, err := shardHolders(hostKube)
		if err != nil {
			return err
		}
		for _, name := range names {
			if h := holders[sharding.ShardOf(name, scaleShards)]; h != owner[name] {
				return fmt.Errorf("%s's shard is held by %q, want %s", name, h, owner[name])
			}
		}
		return nil
	})
	// Each API server's view of all clusters ("") and of each.
	clients := make([]map[string]dynamic.Interface, len(ports))
	for i, port := range ports {
		clients[i] = map[string]dynamic.Interface{}
		for _, name := range append([]string{""}, names...) {
			clients[i][name] = panoramaClient(port, aggregation, name)
		}
	}
	expect := func() map[string]string { return memberPods(t, kubes) }
	converged := func(want map[string]string, views []*orderedView) error {
		for i := range ports {
			for name, c := range clients[i] {
				if err := sameList(fmt.Sprintf("API server %d's view %q", i, name), c, 0, filterCluster(want, name)); err != nil {
					return err
				}
			}
		}
		if len(views) == 0 {
			return nil
		}
		logged, err := podRevisions(log)
		if err != nil {
			return err
		}
		for _, v := range views {
			if err := v.check(want, logged); err != nil {
				return err
			}
		}
		return nil
	}
	eventuallyT(t, func() error { return converged(expect(), nil) })

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	views := make([]*orderedView, len(ports))
	for i := range ports {
		views[i] = startOrderedView(ctx, t, fmt.Sprintf("the watcher of API server %d", i), clients[i][""])
	}
	rss := &peakRSS{}
	go rss.sample(ctx, procs)
	// A run that does not converge says where each copy of the pods stands:
	// a change missing from one API server's cache only, or from the
	// database (on every node, or on one), or never sent by a controller.
	stores := []storage.Interface{log}
	for _, db := range dbs[1:] {
		stores = append(stores, storagetest.OpenStore(t, db))
	}
	var want map[string]string
	t.Cleanup(func() {
		if t.Failed() && want != nil {
			t.Logf("where the copies stand:\n%s", divergence(want, clients, stores, views))
		}
	})

	churnCtx, stopChurn := context.WithCancel(ctx)
	defer stopChurn()
	var churn sync.WaitGroup
	var ops atomic.Int64
	churnStart := time.Now()
	for name, kube := range kubes {
		churn.Go(func() { churnPods(churnCtx, t, kube, name, scaleOpsInterval, &ops) })
	}
	time.Sleep(scalePhase)
	victim := replicas[0]
	var victimShards []int
	for _, name := range names {
		if owner[name] == victim {
			victimShards = append(victimShards, sharding.ShardOf(name, scaleShards))
		}
	}
	killed := time.Now()
	cms[0].kill()
	testenv.Eventually(t, scaleMaxFailover, func() error {
		holders, err := shardHolders(hostKube)
		if err != nil {
			return err
		}
		for _, s := range victimShards {
			if h := holders[s]; h == victim || h == "" {
				return fmt.Errorf("shard %d is held by %q", s, h)
			}
		}
		return nil
	})
	failover := time.Since(killed)
	time.Sleep(scalePhase)
	nodeKilled := time.Now()
	storagetest.GaleraScript(t, "kill", strconv.Itoa(scaleKilledNode))
	time.Sleep(scalePhase)
	storagetest.GaleraScript(t, "start-node", strconv.Itoa(scaleKilledNode))
	outage := time.Since(nodeKilled)
	time.Sleep(scalePhase)
	stopChurn()
	churn.Wait()
	churned := time.Since(churnStart)

	stopped := time.Now()
	want = expect()
	testenv.Eventually(t, scaleMaxConverge, func() error { return converged(want, views) })
	convergence := time.Since(stopped)

	var events, resumed int
	for _, v := range views {
		v.mu.Lock()
		events, resumed = max(events, len(v.revs)), resumed+v.resumed
		if len(v.problems) > 0 {
			t.Errorf("%s: %d changes out of order or twice, e.g. %v", v.name, len(v.problems), v.problems[:min(3, len(v.problems))])
		}
		v.mu.Unlock()
	}
	peaks := func(prefix string) string {
		var out []string
		for i := range replicas {
			out = append(out, strconv.FormatInt(rss.peak(fmt.Sprintf("%s%d", prefix, i))>>20, 10))
		}
		return strings.Join(out, "/")
	}
	report(t, "scale-out", fmt.Sprintf(`%d members (a kube-apiserver each), %d controller managers (--shards %d, 6 s shard leases) and %d API servers, each pair on its own node of a 3-node Galera cluster
member writes: %d over %v (%.0f/s), %d pods in all at the end
kill -9 of controller manager %s (syncing %d clusters): its shards taken over %v after
kill -9 of Galera node %d (controller manager and API server %d's): restarted and synced %v after
converged %v after the churn stopped: every API server's lists, and the state each watcher built, equal the members
watchers (one per API server, from before the churn, resuming, never relisting): %d pod changes each, exactly the log's, in order, none twice; %d watches resumed
peak RSS (MiB): controller managers %s (cm-0 until killed), API servers %s`,
		len(names), len(replicas), scaleShards, len(ports),
		ops.Load(), churned.Round(time.Second), float64(ops.Load())/churned.Seconds(), len(want),
		victim, len(victimShards), failover.Round(100*time.Millisecond),
		scaleKilledNode, scaleKilledNode-1, outage.Round(100*time.Millisecond),
		convergence.Round(100*time.Millisecond), events, resumed,
		peaks("controller manager cm-"), peaks("API server ")))
}

// scaleClusterNames picks cluster names such that rendezvous hashing gives
// each replica two of them while all are live, and says whose each is.
func scaleClusterNames(replicas []string) ([]string, map[string]string) {
	var names []string
	owner := map[string]string{}
	per := map[string]int{}
	for i := 0; len(names) < scaleMembers; i++ {
		name := fmt.Sprintf("m%d", i)
		r := sharding.Assignment(replicas, sharding.ShardOf(name, scaleShards))
		if per[r] < scaleMembers/len(replicas) {
			per[r]++
			names = append(names, name)
			owner[name] = r
		}
	}
	return names, owner
}

// shardHolders reads who holds each shard's Lease in the host.
func shardHolders(kube kubernetes.Interface) (map[int]string, error) {
	out := map[int]string{}
	for s := range scaleShards {
		l, err := kube.CoordinationV1().Leases(testenv.ShippedNamespace).Get(context.Background(),
			fmt.Sprintf("%s-shard-%d", controllers.DefaultShardLeaseName, s), metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			continue
		}
		if err != nil {
			return nil, err
		}
		if h := l.Spec.HolderIdentity; h != nil {
			out[s] = *h
		}
	}
	return out, nil
}

// podRevisions lists the revisions of every pod change in the log, in order.
func podRevisions(s storage.Interface) ([]int64, error) {
	var out []int64
	err := eachPodChange(s, func(e *storage.LoggedChange) { out = append(out, e.Revision) })
	return out, err
}

// eachPodChange calls fn with every pod change in the log, in order.
func eachPodChange(s storage.Interface, fn func(*storage.LoggedChange)) error {
	var since int64
	for {
		events, _, err := s.Changes(context.Background(), since, 10_000)
		if err != nil {
			return err
		}
		if len(events) == 0 {
			return nil
		}
		for i := range events {
			if events[i].Key.GVR == podsGVR {
				fn(&events[i])
			}
			since = events[i].Revision
		}
	}
}

// divergence describes, for a run that did not converge, how each copy of
// the pods differs from want: every view of every API server, the store
// as each Galera node has it, each watcher's state; then the log's
// changes of every pod that differs anywhere.
func divergence(want map[string]string, clients []map[string]dynamic.Interface, stores []storage.Interface, views []*orderedView) string {
	var b strings.Builder
	differing := map[string]bool{}
	compare := func(who string, got, want map[string]string, err error) {
		if err == nil {
			for _, k := range viewDiff(got, want) {
				differing[k] = true
			}
			if err = sameView(who, got, want); err == nil {
				err = fmt.Errorf("%s equals the members", who)
			}
		}
		fmt.Fprintln(&b, err)
	}
	for i, views := range clients {
		for name, c := range views {
			got, err := listAll(c, 0)
			compare(fmt.Sprintf("API server %d's view %q", i, name), got, filterCluster(want, name), err)
		}
	}
	for i, s := range stores {
		got, err := storedPods(s)
		compare(fmt.Sprintf("the store read through Galera node %d", i+1), got, want, err)
	}
	for _, v := range views {
		v.mu.Lock()
		compare(v.name, v.state, want, nil)
		v.mu.Unlock()
	}
	changes := map[string][]string{}
	err := eachPodChange(stores[0], func(e *storage.LoggedChange) {
		k := soakKey(e.Key.Cluster, e.Key.Namespace, e.Key.Name)
		if differing[k] {
			var u unstructured.Unstructured
			_ = u.UnmarshalJSON(e.Object)
			changes[k] = append(changes[k], fmt.Sprintf("%s at %d (member %s)", e.Type, e.Revision,
				u.GetAnnotations()[storage.MemberResourceVersionAnnotation]))
		}
	})
	if err != nil {
		fmt.Fprintf(&b, "reading the log: %v\n", err)
	}
	for _, k := range slices.Sorted(maps.Keys(differing)) {
		fmt.Fprintf(&b, "the log's changes of %s (member %q): %v\n", k, want[k], changes[k])
	}
	return b.String()
}

// storedPods reads every stored pod straight from the store, as key →
// member resourceVersion.
func storedPods(s storage.Interface) (map[string]string, error) {
	page, err := s.List(context.Background(), &storage.ListQuery{GVR: podsGVR})
	if err != nil {
		return nil, err
	}
	out := map[string]string{}
	for _, o := range page.Objects {
		out[soakKey(o.Cluster, o.Namespace, o.Name)] = o.MemberResourceVersion
	}
	return out, nil
}

// orderedView is a watcher that lists once, then watches from the list's
// resourceVersion and, whenever its watch ends, watches again from the
// last revision it received, as clients resume. It never lists again, so
// it must receive every change after its list exactly once, in revision
// order, to end up with what the members hold.
type orderedView struct {
	name string

	mu       sync.Mutex
	state    map[string]string // key → member resourceVersion
	from     int64             // the list's revision
	revs     []int64           // of the changes received, in order
	received map[string]bool   // type, key and member resourceVersion of each change
	problems []string
	resumed  int
}

func startOrderedView(ctx context.Context, t *testing.T, name string, c dynamic.Interface) *orderedView {
	t.Helper()
	list, err := c.Resource(podsGVR).List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	v := &orderedView{name: name, state: map[string]string{}, received: map[string]bool{}}
	v.from, err = strconv.ParseInt(list.GetResourceVersion(), 10, 64)
	if err != nil {
		t.Fatal(err)
	}
	for i := range list.Items {
		v.state[panoramaKey(&list.Items[i])] = list.Items[i].GetAnnotations()[storage.MemberResourceVersionAnnotation]
	}
	go v.run(ctx, c)
	return v
}

func (v *orderedView) run(ctx context.Context, c dynamic.Interface) {
	last := v.from
	for first := true; ctx.Err() == nil; first = false {
		if !first {
			v.mu.Lock()
			v.resumed++
			v.mu.Unlock()
		}
		w, err := c.Resource(podsGVR).Watch(ctx, metav1.ListOptions{ResourceVersion: strconv.FormatInt(last, 10), AllowWatchBookmarks: true})
		if err != nil {
			if apierrors.IsResourceExpired(err) || apierrors.IsGone(err) {
				v.problem(fmt.Sprintf("watching from %d: %v", last, err))
				return
			}
			time.Sleep(200 * time.Millisecond) // the API server or its database is down
			continue
		}
		for e := range w.ResultChan() {
			if e.Type == watch.Error {
				if err := apierrors.FromObject(e.Object); apierrors.IsResourceExpired(err) || apierrors.IsGone(err) {
					v.problem(fmt.Sprintf("watching from %d: %v", last, err))
					w.Stop()
					return
				}
				continue // the watch ends; resumed from last
			}
			u, ok := e.Object.(*unstructured.Unstructured)
			if !ok {
				continue
			}
			rev, err := strconv.ParseInt(u.GetResourceVersion(), 10, 64)
			if err != nil {
				v.problem(fmt.Sprintf("%s event with resourceVersion %q", e.Type, u.GetResourceVersion()))
				continue
			}
			if e.Type != watch.Bookmark {
				v.receive(e.Type, u, rev, last)
			}
			last = max(last, rev)
		}
		w.Stop()
	}
}

func (v *orderedView) problem(p string) {
	v.mu.Lock()
	defer v.mu.Unlock()
	v.problems = append(v.problems, p)
}

// receive applies a change, noting one not after the last revision
// received, or received before.
func (v *orderedView) receive(typ watch.EventType, u *unstructured.Unstructured, rev, last int64) {
	v.mu.Lock()
	defer v.mu.Unlock()
	key, memberRV := panoramaKey(u), u.GetAnnotations()[storage.MemberResourceVersionAnnotation]
	if rev <= last {
		v.problems = append(v.problems, fmt.Sprintf("%s %s at revision %d after revision %d", typ, key, rev, last))
	}
	change := fmt.Sprintf("%s %s at member resourceVersion %s", typ, key, memberRV)
	if v.received[change] {
		v.problems = append(v.problems, change+" twice")
	}
	v.received[change] = true
	v.revs = append(v.revs, rev)
	if typ == watch.Deleted {
		delete(v.state, key)
	} else {
		v.state[key] = memberRV
	}
}

// check compares the view with the members' pods and the revisions it
// received with the log's pod changes after its list.
func (v *orderedView) check(want map[string]string, logged []int64) error {
	v.mu.Lock()
	defer v.mu.Unlock()
	if err := sameView(v.name, v.state, want); err != nil {
		return err
	}
	first, _ := slices.BinarySearch(logged, v.from+1)
	after := logged[first:]
	if !slices.Equal(v.revs, after) {
		return fmt.Errorf("%s received %d pod changes (revisions %v...), the log holds %d after its list (%v...)",
			v.name, len(v.revs), v.revs[:min(5, len(v.revs))], len(after), after[:min(5, len(after))])
	}
	return nil
}
