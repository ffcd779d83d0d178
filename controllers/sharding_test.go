package controllers_test

import (
	"cmp"
	"context"
	"fmt"
	"net/url"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/config"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	"sigs.k8s.io/controller-runtime/pkg/metrics"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	clusterv1alpha1 "github.com/panorama-io/panorama/apis/cluster/v1alpha1"
	"github.com/panorama-io/panorama/controllers"
	"github.com/panorama-io/panorama/controllers/sharding"
	"github.com/panorama-io/panorama/controllers/synchronizer"
	"github.com/panorama-io/panorama/storage"
	"github.com/panorama-io/panorama/storage/sqlstore"
	"github.com/panorama-io/panorama/storage/storagetest"
	"github.com/panorama-io/panorama/test/testenv"
)

// Sharding timings of the test: short, so that failover is quick to see.
var shardTimings = sharding.Options{LeaseDuration: 6 * time.Second, RenewDeadline: 4 * time.Second, RetryPeriod: time.Second}

const testShards = 8

// TestShardedSync runs three controller-manager replicas in process, each
// as the shipped ServiceAccount and with a storage of its own on one
// database, as three pods would. They divide the Clusters; one cut off from
// the host has its clusters taken over and comes back to its share; one
// that stops hands its clusters over. Through it all every cluster is
// written by one owner epoch at a time, and storage holds what the member
// holds.
func TestShardedSync(t *testing.T) {
	host := testenv.Start(t)
	m := startMember(t)
	hc := hostClient(t, host)
	opts := storagetest.Backends()[2].Options(t) // PostgreSQL
	log := &writeLog{}
	replicas := []string{"r0", "r1", "r2"}

	// Two clusters for each replica while all three are up, all views of
	// the one member.
	clusters := map[string][]string{}
	var names []string
	for i := 0; len(names) < 2*len(replicas); i++ {
		name := fmt.Sprintf("c-%d", i)
		r := sharding.Assignment(replicas, sharding.ShardOf(name, testShards))
		if len(clusters[r]) < 2 {
			clusters[r] = append(clusters[r], name)
			names = append(names, name)
		}
	}
	createNamespace(t, m, "app")
	for i := range 5 {
		createPod(t, m, "app", fmt.Sprintf("p-%d", i), nil)
	}
	mustCreate(t, hc, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: controllerNamespace}})
	mustCreate(t, hc, &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: controllerNamespace, Name: "member", Annotations: map[string]string{clusterv1alpha1.AnnotationCredentialClusters: strings.Join(names, ",")}},
		Data:       map[string][]byte{"kubeconfig": kubeconfigVia(t, m)},
	})
	for _, name := range names {
		mustCreate(t, hc, &clusterv1alpha1.Cluster{
			ObjectMeta: metav1.ObjectMeta{Name: name},
			Spec: clusterv1alpha1.ClusterSpec{
				KubeconfigSecretRef: &clusterv1alpha1.SecretKeyRef{Namespace: controllerNamespace, Name: "member"},
				SyncResources:       []clusterv1alpha1.GroupResources{{Group: "", Resources: []string{"pods"}}},
			},
		})
	}

	// r0 first, so that it is the leader (compaction, imports) and stays it:
	// a leader cut off from the host would end its manager.
	stops := map[string]func(){}
	stops["r0"] = startReplica(t, host, "", "r0", opts, log, true)
	stops["r1"] = startReplica(t, host, "", "r1", opts, log, false)
	u, err := url.Parse(host.Config.Host)
	if err != nil {
		t.Fatal(err)
	}
	hostProxy := testenv.NewProxy(t, u.Host) // r2's way to the host
	stops["r2"] = startReplica(t, host, hostProxy.Addr, "r2", opts, log, false)
	check := storagetest.OpenStore(t, opts)

	converged := func(t *testing.T) {
		for _, name := range names {
			waitConverged(t, check, name, m, podsGVR)
		}
	}
	t.Run("divided", func(t *testing.T) {
		converged(t)
		waitOwners(t, names, func(owner map[string]string) error {
			for r, mine := range clusters {
				for _, name := range mine {
					if owner[name] != r {
						return fmt.Errorf("%s synced by %q, want %s", name, owner[name], r)
					}
				}
			}
			return nil
		})
	})

	t.Run("replica cut off from the host", func(t *testing.T) {
		// Each owner writes the new pod to its clusters.
		createPod(t, m, "app", "before-r2-is-cut-off", nil)
		converged(t)
		epochs := log.lastEpochs("r2")
		if len(epochs) != len(clusters["r2"]) {
			t.Fatalf("r2 wrote to %v, want its clusters %v", epochs, clusters["r2"])
		}
		start := time.Now()
		hostProxy.Down()
		createPod(t, m, "app", "while-r2-is-cut-off", nil)
		waitOwners(t, names, func(owner map[string]string) error {
			for _, name := range clusters["r2"] {
				if owner[name] == "r2" || owner[name] == "" {
					return fmt.Errorf("%s synced by %q", name, owner[name])
				}
			}
			return nil
		})
		converged(t)
		t.Logf("failover of a replica cut off from the host: %v (lease duration %v)", time.Since(start).Round(100*time.Millisecond), shardTimings.LeaseDuration)
		// Taking over fenced the old owner off: its epoch writes nothing now.
		for name, epoch := range epochs {
			_, err := check.ForCluster(name, epoch).Apply(context.Background(), podsGVR, []storage.Change{storage.Delete("app", "p-0")})
			if !storage.IsFenced(err) {
				t.Fatalf("a write of %s at r2's epoch %d: %v, want fenced", name, epoch, err)
			}
		}
	})

	t.Run("replica back", func(t *testing.T) {
		hostProxy.Up(t)
		createPod(t, m, "app", "after-r2-is-back", nil)
		waitOwners(t, names, func(owner map[string]string) error {
			for _, name := range clusters["r2"] {
				if owner[name] != "r2" {
					return fmt.Errorf("%s synced by %q, want r2", name, owner[name])
				}
			}
			return nil
		})
		converged(t)
	})

	t.Run("replica stops", func(t *testing.T) {
		start := time.Now()
		stops["r1"]()
		createPod(t, m, "app", "after-r1-stopped", nil)
		waitOwners(t, names, func(owner map[string]string) error {
			for _, name := range names {
				if owner[name] != "r0" && owner[name] != "r2" {
					return fmt.Errorf("%s synced by %q", name, owner[name])
				}
			}
			return nil
		})
		converged(t)
		t.Logf("handover of a replica that stopped: %v", time.Since(start).Round(100*time.Millisecond))
		// The status is the owners': each Cluster synced, counting the pods.
		pods, err := m.kube.CoreV1().Pods("").List(context.Background(), metav1.ListOptions{})
		if err != nil {
			t.Fatal(err)
		}
		for _, name := range names {
			waitCluster(t, hc, name, func(c *clusterv1alpha1.Cluster) error {
				if !meta.IsStatusConditionTrue(c.Status.Conditions, clusterv1alpha1.ConditionSynced) ||
					len(c.Status.SyncResources) != 1 || c.Status.SyncResources[0].Count != int64(len(pods.Items)) {
					return fmt.Errorf("%s status: %+v", name, c.Status)
				}
				return nil
			})
		}
	})

	t.Run("one epoch at a time", func(t *testing.T) {
		for _, r := range []string{"r0", "r2"} {
			stops[r]()
		}
		log.check(t, names)
	})
}

// startReplica runs one controller-manager replica, as the shipped
// ServiceAccount reaching the host directly or by the address via, on a
// storage of its own; the returned func stops it.
func startReplica(t *testing.T, host *testenv.Env, via, identity string, opts sqlstore.Options, log *writeLog, leader bool, options ...func(*controllers.Options)) func() {
	id := shippedIdentity(t, host)
	if via != "" {
		id.Host = "https://" + via
	}
	store := &recordingStore{Store: storagetest.OpenStore(t, opts), replica: identity, log: log}
	ctx, cancel := context.WithCancel(context.Background())
	lease, renew, retry := shardTimings.LeaseDuration, shardTimings.RenewDeadline, shardTimings.RetryPeriod
	mgr, err := ctrl.NewManager(id, ctrl.Options{
		Scheme:                        newScheme(),
		Metrics:                       metricsserver.Options{BindAddress: "0"},
		HealthProbeBindAddress:        "0",
		Controller:                    config.Controller{SkipNameValidation: ptr(true)},
		Logger:                        zap.New(zap.UseDevMode(true), zap.WriteTo(testWriter{t})).WithValues("replica", identity),
		LeaderElection:                true,
		LeaderElectionID:              "panorama-controller-manager",
		LeaderElectionNamespace:       controllerNamespace,
		LeaderElectionReleaseOnCancel: true,
		LeaseDuration:                 &lease,
		RenewDeadline:                 &renew,
		RetryPeriod:                   &retry,
	})
	if err != nil {
		t.Fatal(err)
	}
	sh := shardTimings
	sh.Shards, sh.Identity, sh.Namespace = testShards, identity, controllerNamespace
	o := controllers.Options{
		HealthInterval:  2 * time.Second,
		SecretNamespace: controllerNamespace,
		Sync:            synchronizer.Options{FlushInterval: 20 * time.Millisecond},
		Sharding:        sh,
	}
	for _, f := range options {
		f(&o)
	}
	if err := controllers.SetupWithManager(mgr, store, o); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- mgr.Start(ctx) }()
	if leader {
		select {
		case <-mgr.Elected():
		case <-time.After(timeout):
			t.Fatalf("%s not elected", identity)
		}
	}
	var once sync.Once
	stop := func() {
		once.Do(func() {
			cancel()
			if err := <-done; err != nil {
				t.Errorf("%s: %v", identity, err)
			}
		})
	}
	t.Cleanup(stop)
	return stop
}

// waitOwners waits until panorama_cluster_owner names one replica for each
// cluster and check accepts who.
func waitOwners(t *testing.T, clusters []string, check func(owner map[string]string) error) {
	t.Helper()
	eventually(t, func() error {
		families, err := metrics.Registry.Gather()
		if err != nil {
			return err
		}
		owners := map[string][]string{}
		for _, f := range families {
			if f.GetName() != "panorama_cluster_owner" {
				continue
			}
			for _, s := range f.GetMetric() {
				labels := map[string]string{}
				for _, l := range s.GetLabel() {
					labels[l.GetName()] = l.GetValue()
				}
				if s.GetGauge().GetValue() == 1 {
					owners[labels["cluster"]] = append(owners[labels["cluster"]], labels["replica"])
				}
			}
		}
		owner := map[string]string{}
		for _, name := range clusters {
			if len(owners[name]) > 1 {
				return fmt.Errorf("%s synced by %v at once", name, owners[name])
			}
			if len(owners[name]) == 1 {
				owner[name] = owners[name][0]
			}
		}
		return check(owner)
	})
}

// recordingStore is a replica's storage, which records the cluster writes
// it made.
type recordingStore struct {
	*sqlstore.Store
	replica string
	log     *writeLog
}

// ForCluster records the writes of the cluster writer it returns.
func (s *recordingStore) ForCluster(cluster string, epoch int64) storage.ClusterWriter {
	return &recordingWriter{ClusterWriter: s.Store.ForCluster(cluster, epoch), store: s, cluster: cluster, epoch: epoch}
}

type recordingWriter struct {
	storage.ClusterWriter
	store   *recordingStore
	cluster string
	epoch   int64
}

func (w *recordingWriter) Apply(ctx context.Context, gvr schema.GroupVersionResource, changes []storage.Change) (int64, error) {
	rev, err := w.ClusterWriter.Apply(ctx, gvr, changes)
	w.store.log.add(write{replica: w.store.replica, cluster: w.cluster, epoch: w.epoch, rev: rev}, err)
	return rev, err
}

func (w *recordingWriter) DeleteResource(ctx context.Context, gvr schema.GroupVersionResource) (int64, error) {
	rev, err := w.ClusterWriter.DeleteResource(ctx, gvr)
	w.store.log.add(write{replica: w.store.replica, cluster: w.cluster, epoch: w.epoch, rev: rev}, err)
	return rev, err
}

type write struct {
	replica, cluster string
	epoch, rev       int64
}

type writeLog struct {
	mu      sync.Mutex
	written []write
	fenced  map[string]int
}

func (l *writeLog) add(w write, err error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	switch {
	case err == nil:
		l.written = append(l.written, w)
	case storage.IsFenced(err):
		if l.fenced == nil {
			l.fenced = map[string]int{}
		}
		l.fenced[w.replica]++
	}
}

// lastEpochs maps each cluster replica wrote to the epoch it last wrote with.
func (l *writeLog) lastEpochs(replica string) map[string]int64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := map[string]int64{}
	for _, w := range l.written {
		if w.replica == replica {
			out[w.cluster] = max(out[w.cluster], w.epoch)
		}
	}
	return out
}

// check: every write carried an epoch; in revision order, a cluster's
// epochs never go back, and the writer changes only with a new epoch.
func (l *writeLog) check(t *testing.T, clusters []string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	t.Logf("%d writes; refused as fenced: %v", len(l.written), l.fenced)
	for _, name := range clusters {
		var ws []write
		for _, w := range l.written {
			if w.cluster == name {
				ws = append(ws, w)
			}
		}
		slices.SortStableFunc(ws, func(a, b write) int { return cmp.Or(cmp.Compare(a.rev, b.rev), cmp.Compare(a.epoch, b.epoch)) })
		if len(ws) == 0 {
			t.Fatalf("%s: never written", name)
		}
		var writers []string
		for i, w := range ws {
			if w.epoch == 0 {
				t.Fatalf("%s: an unfenced write by %s", name, w.replica)
			}
			if i == 0 {
				writers = append(writers, fmt.Sprintf("%s@%d", w.replica, w.epoch))
				continue
			}
			prev := ws[i-1]
			if w.epoch < prev.epoch || (w.replica != prev.replica && w.epoch == prev.epoch) {
				t.Fatalf("%s: %s wrote at epoch %d (revision %d) after %s at epoch %d (revision %d)", name, w.replica, w.epoch, w.rev, prev.replica, prev.epoch, prev.rev)
			}
			if w.epoch != prev.epoch {
				writers = append(writers, fmt.Sprintf("%s@%d", w.replica, w.epoch))
			}
		}
		t.Logf("%s: %d writes by %v", name, len(ws), writers)
	}
}
