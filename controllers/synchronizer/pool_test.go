package synchronizer

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	clusterv1alpha1 "github.com/panorama-io/panorama/apis/cluster/v1alpha1"
	"github.com/panorama-io/panorama/storage"
	"github.com/panorama-io/panorama/storage/storagetest"
	"github.com/panorama-io/panorama/test/testenv"
)

var configMaps = Resource{Resource: storage.Resource{GVR: schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}, Kind: "ConfigMap", Namespaced: true}}

// stopBound is how long a stop may take in these tests: far more than a
// prompt stop needs, far less than the hang (or the 30 s final write) that
// a stalled storage used to cause.
const stopBound = 10 * time.Second

// stallingStore is a real store whose writes can be held, as a database
// waiting on a lock holds them. It logs the storage calls it sees.
type stallingStore struct {
	storage.Interface

	mu sync.Mutex
	// stall, while not nil, holds every Apply until it is closed.
	stall chan struct{}
	// pastCancel: a held Apply lands once released even if its context ended
	// meanwhile, as a commit already sent does; otherwise it ends with it.
	pastCancel bool
	held       int
	log        []string
}

func newStallingStore(t *testing.T) *stallingStore {
	s := &stallingStore{Interface: storagetest.Backends()[0].Open(t)}
	t.Cleanup(s.release) // before the store closes
	return s
}

// hold makes the next Applies wait until release.
func (s *stallingStore) hold(pastCancel bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.stall, s.pastCancel = make(chan struct{}), pastCancel
}

// admit lets the Applies to come through, and returns the release of
// those held.
func (s *stallingStore) admit() (release func()) {
	s.mu.Lock()
	defer s.mu.Unlock()
	stall := s.stall
	s.stall = nil
	return sync.OnceFunc(func() { close(stall) })
}

func (s *stallingStore) release() {
	if s.stalled() {
		s.admit()()
	}
}

func (s *stallingStore) stalled() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.stall != nil
}

func (s *stallingStore) record(entry string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.log = append(s.log, entry)
	return len(s.log)
}

func (s *stallingStore) entries() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.log)
}

// waitHeld waits until storage holds one write, what, and returns its
// place in the log: the last call.
func (s *stallingStore) waitHeld(t *testing.T, what string) int {
	t.Helper()
	testenv.Eventually(t, time.Minute, func() error {
		if held := s.heldCount(); held != 1 {
			return fmt.Errorf("%d writes held, want %s", held, what)
		}
		return nil
	})
	return len(s.entries())
}

func (s *stallingStore) heldCount() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.held
}

// ForCluster writes through s's Apply.
func (s *stallingStore) ForCluster(cluster string, epoch int64) storage.ClusterWriter {
	return storagetest.HookApply(s.Interface.ForCluster(cluster, epoch), s.apply)
}

func (s *stallingStore) apply(ctx context.Context, gvr schema.GroupVersionResource, changes []storage.Change, next storagetest.ApplyFunc) (int64, error) {
	n := s.record(fmt.Sprintf("apply %d", len(changes)))
	defer s.record(fmt.Sprintf("end %d", n))
	s.mu.Lock()
	stall, pastCancel := s.stall, s.pastCancel
	if stall != nil {
		s.held++
	}
	s.mu.Unlock()
	if stall != nil {
		var cancelled <-chan struct{}
		if !pastCancel {
			cancelled = ctx.Done()
		}
		select {
		case <-stall:
		case <-cancelled:
		}
		s.mu.Lock()
		s.held--
		s.mu.Unlock()
		if pastCancel {
			ctx = context.WithoutCancel(ctx)
		}
		if err := ctx.Err(); err != nil {
			return 0, err
		}
	}
	return next(ctx, gvr, changes)
}

func (s *stallingStore) MemberVersions(ctx context.Context, cluster string, gvr schema.GroupVersionResource) (map[storage.NamespacedName]string, error) {
	n := s.record("versions")
	defer s.record(fmt.Sprintf("end %d", n))
	return s.Interface.MemberVersions(ctx, cluster, gvr)
}

type member struct {
	dyn  dynamic.Interface
	kube kubernetes.Interface
}

// startMember starts a member, reached as the controller reaches one.
func startMember(t *testing.T) *member {
	env := testenv.Start(t, testenv.WithoutCRDs())
	dyn, err := NewClient(env.Config)
	if err != nil {
		t.Fatal(err)
	}
	return &member{dyn: dyn, kube: kubernetes.NewForConfigOrDie(env.Config)}
}

func (m *member) createConfigMap(t *testing.T, name string) {
	t.Helper()
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name}, Data: map[string]string{"k": "v"}}
	if _, err := m.kube.CoreV1().ConfigMaps("default").Create(context.Background(), cm, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
}

// waitConverged waits until storage holds the member's config maps at the
// member's resourceVersions, as the cluster's.
func waitConverged(t *testing.T, store storage.Interface, cluster string, m *member) {
	t.Helper()
	testenv.Eventually(t, time.Minute, func() error {
		list, err := m.dyn.Resource(configMaps.GVR).List(context.Background(), metav1.ListOptions{})
		if err != nil {
			return err
		}
		want := map[storage.NamespacedName]string{}
		for _, o := range list.Items {
			want[storage.NamespacedName{Namespace: o.GetNamespace(), Name: o.GetName()}] = o.GetResourceVersion()
		}
		got, err := store.MemberVersions(context.Background(), cluster, configMaps.GVR)
		if err != nil {
			return err
		}
		if !maps.Equal(want, got) {
			return fmt.Errorf("member has %v, storage %v", want, got)
		}
		return nil
	})
}

func (p *Pool) synchronizer(cluster string, gvr schema.GroupVersionResource) *Synchronizer {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.clusters[cluster].syncs[gvr].sync
}

func (s *Synchronizer) pendingCount() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.pending)
}

// returnsPromptly fails t unless f returns within stopBound.
func returnsPromptly(t *testing.T, what string, f func()) {
	t.Helper()
	done := make(chan struct{})
	go func() {
		defer close(done)
		f()
	}()
	select {
	case <-done:
	case <-time.After(stopBound):
		t.Fatalf("%s did not return within %v while storage stalls", what, stopBound)
	}
}

// TestStopWhileStorageStalls: however storage stalls, stopping or
// restarting a synchronizer returns as soon as its storage calls end with
// their context: with the watch held by a full queue of pending changes,
// and with the initial list's write held.
func TestStopWhileStorageStalls(t *testing.T) {
	m := startMember(t)
	m.createConfigMap(t, "first")
	sel := Selection{Resources: []Resource{configMaps}}
	ctx := context.Background()

	t.Run("watch held by a full queue", func(t *testing.T) {
		store := newStallingStore(t)
		opts := Options{BatchSize: 1, MaxPending: 2, FlushInterval: 10 * time.Millisecond}
		p := NewPool(store, opts, func(string) {})
		t.Cleanup(p.StopAll)
		if err := p.Ensure(ctx, "east", "id", storage.Unfenced, m.dyn, sel); err != nil {
			t.Fatal(err)
		}
		waitConverged(t, store, "east", m)
		store.hold(false)
		for i := range 10 {
			m.createConfigMap(t, fmt.Sprintf("watched-%d", i))
		}
		s := p.synchronizer("east", configMaps.GVR)
		testenv.Eventually(t, time.Minute, func() error {
			if held, pending := store.heldCount(), s.pendingCount(); held != 1 || pending != opts.MaxPending {
				return fmt.Errorf("%d writes held, %d changes pending; want 1 and %d", held, pending, opts.MaxPending)
			}
			return nil
		})
		returnsPromptly(t, "Stop", func() { p.Stop("east") })
	})

	t.Run("initial list held", func(t *testing.T) {
		store := newStallingStore(t)
		p := NewPool(store, Options{}, func(string) {})
		store.hold(false)
		if err := p.Ensure(ctx, "east", "id", storage.Unfenced, m.dyn, sel); err != nil {
			t.Fatal(err)
		}
		testenv.Eventually(t, time.Minute, func() error {
			if held := store.heldCount(); held != 1 {
				return fmt.Errorf("%d writes held, want the list's", held)
			}
			return nil
		})
		returnsPromptly(t, "a restart (Ensure with a new connection)", func() {
			if err := p.Ensure(ctx, "east", "rotated", storage.Unfenced, m.dyn, sel); err != nil {
				t.Error(err)
			}
		})
		returnsPromptly(t, "StopAll", p.StopAll)
	})
}

// TestRestartStopsTheOldFirst: a restart (here a new connection, as a token
// rotation makes) while the old synchronizer has a write in flight, which
// lands even though the old one is cancelled, as a commit already sent
// does. No storage call of the new synchronizer may begin before that write
// has ended: otherwise the late write of the old one lands after the new one
// has deleted the object, and brings it back.
func TestRestartStopsTheOldFirst(t *testing.T) {
	m := startMember(t)
	m.createConfigMap(t, "kept")
	m.createConfigMap(t, "x")
	store := newStallingStore(t)
	p := syncConfigMaps(t, store, m)
	ctx := context.Background()
	waitConverged(t, store, "east", m)

	// The old synchronizer's write of x's update is held in flight.
	store.hold(true)
	if _, err := m.kube.CoreV1().ConfigMaps("default").Patch(ctx, "x", "application/merge-patch+json",
		[]byte(`{"data":{"k":"updated"}}`), metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	inFlight := store.waitHeld(t, "x's update")
	release := store.admit()
	if err := m.kube.CoreV1().ConfigMaps("default").Delete(ctx, "x", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}

	restartWhileWriting(t, p, store, m, inFlight, release)
}

// syncConfigMaps starts a pool that syncs m's config maps into store as
// cluster east.
func syncConfigMaps(t *testing.T, store storage.Interface, m *member) *Pool {
	t.Helper()
	p := NewPool(store, Options{}, func(string) {})
	t.Cleanup(p.StopAll)
	if err := ensureConfigMaps(p, m, "id"); err != nil {
		t.Fatal(err)
	}
	return p
}

// ensureConfigMaps has p sync m's config maps as cluster east, reached
// with the credentials identity names.
func ensureConfigMaps(p *Pool, m *member, identity string) error {
	return p.Ensure(context.Background(), "east", identity, storage.Unfenced, m.dyn, Selection{Resources: []Resource{configMaps}})
}

// restartWhileWriting restarts the synchronizer of p's cluster east while
// storage holds its write inFlight (the last call), and fails t if the new
// one calls storage before that write has landed; release lets it land.
func restartWhileWriting(t *testing.T, p *Pool, store *stallingStore, m *member, inFlight int, release func()) {
	t.Helper()
	restarted := make(chan error, 1)
	go func() { restarted <- ensureConfigMaps(p, m, "rotated") }()
	// A new synchronizer started too early would call storage at once; give
	// it the time to, then let the old write land.
	poll(3*time.Second, func() bool { return len(store.entries()) > inFlight })
	release()
	select {
	case err := <-restarted:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(time.Minute):
		t.Fatal("the restart did not return once the old write landed")
	}
	if log := store.entries(); len(log) <= inFlight || log[inFlight] != fmt.Sprintf("end %d", inFlight) {
		t.Fatalf("storage calls began while the old synchronizer's write was in flight (call %d): %v", inFlight, log)
	}
	waitConverged(t, store, "east", m)
}

// poll waits until cond holds, or d has passed.
func poll(d time.Duration, cond func() bool) {
	for deadline := time.Now().Add(d); time.Now().Before(deadline) && !cond(); {
		time.Sleep(10 * time.Millisecond)
	}
}

// TestSweepOrphans: a sweep removes the resources of clusters that do not
// exist and the resources a resolved cluster does not sync, and keeps
// everything of clusters whose resources are not known in full: not
// running (paused, unreachable) or last resolved partially.
func TestSweepOrphans(t *testing.T) {
	m := startMember(t)
	m.createConfigMap(t, "cm")
	store := storagetest.Backends()[0].Open(t)
	ctx := context.Background()
	pods := schema.GroupVersionResource{Version: "v1", Resource: "pods"}
	for _, cluster := range []string{"east", "partial", "paused", "gone"} {
		if _, err := store.ForCluster(cluster, storage.Unfenced).Apply(ctx, pods, []storage.Change{storage.Upsert(object("Pod", "p"))}); err != nil {
			t.Fatal(err)
		}
	}
	// The OpenAPI documents the reconciler stores beside what it syncs.
	openAPIIndex, err := storage.OpenAPIIndexObject(storage.OpenAPIIndex{})
	if err != nil {
		t.Fatal(err)
	}
	for _, cluster := range []string{"east", "gone"} {
		if _, err := store.ForCluster(cluster, storage.Unfenced).Apply(ctx, storage.OpenAPIResource, []storage.Change{storage.Upsert(openAPIIndex.DeepCopy())}); err != nil {
			t.Fatal(err)
		}
	}
	p := NewPool(store, Options{}, func(string) {})
	t.Cleanup(p.StopAll)
	// Concurrently, as reconciles of different clusters run.
	var wg sync.WaitGroup
	for cluster, sel := range map[string]Selection{
		"east":    {Resources: []Resource{configMaps}},
		"partial": {Resources: []Resource{configMaps}, Partial: true},
	} {
		wg.Go(func() {
			if err := p.Ensure(ctx, cluster, "id", storage.Unfenced, m.dyn, sel); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	existing := func(context.Context) ([]string, error) { return []string{"east", "partial", "paused"}, nil }
	if err := p.sweep(ctx, existing); err != nil {
		t.Fatal(err)
	}
	for cluster, kept := range map[string]bool{"east": false, "partial": true, "paused": true, "gone": false} {
		if _, err := store.Get(ctx, storage.Key{Cluster: cluster, GVR: pods, Namespace: "ns", Name: "p"}); kept != (err == nil) {
			t.Errorf("%s pods: want kept %v, got %v", cluster, kept, err)
		}
	}
	for cluster, kept := range map[string]bool{"east": true, "gone": false} {
		if _, err := store.Get(ctx, storage.Key{Cluster: cluster, GVR: storage.OpenAPIResource, Name: storage.OpenAPIIndexName}); kept != (err == nil) {
			t.Errorf("%s OpenAPI index: want kept %v, got %v", cluster, kept, err)
		}
	}
	waitConverged(t, store, "east", m)
	waitConverged(t, store, "partial", m)
	// A full selection of "partial" resolves it: its pods are orphans now.
	if err := p.Ensure(ctx, "partial", "id", storage.Unfenced, m.dyn, Selection{Resources: []Resource{configMaps}}); err != nil {
		t.Fatal(err)
	}
	if err := p.sweep(ctx, existing); err != nil {
		t.Fatal(err)
	}
	if _, err := store.Get(ctx, storage.Key{Cluster: "partial", GVR: pods, Namespace: "ns", Name: "p"}); err == nil {
		t.Error("partial pods kept once the cluster is resolved")
	}
	waitConverged(t, store, "partial", m)
}

// TestSweepFencedOff: clusters change owners before this pool has noticed,
// or while a sweep runs, between its list of the clusters that exist and
// its deletes, as another replica takes them over. What their new owners
// wrote stays: the pods of clusters this pool synced without them (a stale
// view of its own clusters), and those of a cluster created meanwhile. What
// is still orphaned goes: the pods of a cluster this pool still owns, and
// those of one that is gone.
func TestSweepFencedOff(t *testing.T) {
	m := startMember(t)
	m.createConfigMap(t, "cm")
	opts := storagetest.Backends()[0].Options(t)
	store, other := storagetest.OpenStore(t, opts), storagetest.OpenStore(t, opts)
	ctx := context.Background()
	pods := schema.GroupVersionResource{Version: "v1", Resource: "pods"}
	put := func(epoch int64, cluster string) {
		t.Helper()
		if _, err := other.ForCluster(cluster, epoch).Apply(ctx, pods, []storage.Change{storage.Upsert(object("Pod", "p"))}); err != nil {
			t.Fatal(err)
		}
	}
	p := NewPool(store, Options{}, func(string) {})
	t.Cleanup(p.StopAll)
	for _, cluster := range []string{"east", "lost", "stale"} {
		epoch := storagetest.Owned(t, ctx, store, cluster)
		put(epoch, cluster) // deselected since
		if err := p.Ensure(ctx, cluster, "id", epoch, m.dyn, Selection{Resources: []Resource{configMaps}}); err != nil {
			t.Fatal(err)
		}
		waitConverged(t, store, cluster, m)
	}
	put(storage.Unfenced, "gone")
	put(storagetest.Owned(t, ctx, other, "stale"), "stale")
	existing := func(context.Context) ([]string, error) {
		// Taken over, or created, and written by the new owner.
		put(storagetest.Owned(t, ctx, other, "lost"), "lost")
		put(storagetest.Owned(t, ctx, other, "new"), "new")
		return []string{"east", "lost", "stale"}, nil
	}
	if err := p.sweep(ctx, existing); err != nil {
		t.Fatal(err)
	}
	for cluster, kept := range map[string]bool{"east": false, "gone": false, "lost": true, "stale": true, "new": true} {
		if _, err := store.Get(ctx, storage.Key{Cluster: cluster, GVR: pods, Namespace: "ns", Name: "p"}); kept != (err == nil) {
			t.Errorf("%s pods: want kept %v, got %v", cluster, kept, err)
		}
	}
}

// object is a member object at member resourceVersion 1.
func object(kind, name string) *unstructured.Unstructured {
	return &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": kind,
		"metadata": map[string]any{"name": name, "namespace": "ns", "resourceVersion": "1"}}}
}

// TestListStreamsPages: the initial list is written to storage a page at a
// time as the pages arrive, never held whole: no write carries more than a
// page, whatever the batch size.
func TestListStreamsPages(t *testing.T) {
	m := startMember(t)
	for i := range 25 {
		m.createConfigMap(t, fmt.Sprintf("cm-%d", i))
	}
	store := newStallingStore(t)
	const pageSize = 10
	p := NewPool(store, Options{PageSize: pageSize, BatchSize: 500}, func(string) {})
	t.Cleanup(p.StopAll)
	if err := p.Ensure(context.Background(), "east", "id", storage.Unfenced, m.dyn, Selection{Resources: []Resource{configMaps}}); err != nil {
		t.Fatal(err)
	}
	waitConverged(t, store, "east", m)
	written := 0
	for _, e := range store.entries() {
		if n, ok := strings.CutPrefix(e, "apply "); ok {
			size, _ := strconv.Atoi(n)
			if size > pageSize {
				t.Fatalf("one write of %d objects, more than a page (%d): %v", size, pageSize, store.entries())
			}
			written += size
		}
	}
	if written < 25 {
		t.Fatalf("%d objects written, want the 25 config maps at least", written)
	}
}

// countingLists counts the member's list requests.
type countingLists struct {
	next http.RoundTripper
	n    atomic.Int32
}

func (c *countingLists) RoundTrip(r *http.Request) (*http.Response, error) {
	if r.Method == http.MethodGet && r.URL.Query().Has("limit") {
		c.n.Add(1)
	}
	return c.next.RoundTrip(r)
}

// TestListGoesOnWhileWriting: while a page is being written, the next ones
// are listed and decoded, but no more than listPagesAhead wait for
// storage, so memory stays bounded by a few pages however slow storage is.
func TestListGoesOnWhileWriting(t *testing.T) {
	env := testenv.Start(t, testenv.WithoutCRDs())
	m := &member{dyn: dynamic.NewForConfigOrDie(env.Config), kube: kubernetes.NewForConfigOrDie(env.Config)}
	for i := range 45 {
		m.createConfigMap(t, fmt.Sprintf("cm-%d", i))
	}
	lists := &countingLists{}
	cfg := rest.CopyConfig(env.Config)
	cfg.Wrap(func(rt http.RoundTripper) http.RoundTripper { lists.next = rt; return lists })
	store := newStallingStore(t)
	store.hold(false)
	p := NewPool(store, Options{PageSize: 10}, func(string) {})
	t.Cleanup(p.StopAll)
	if err := p.Ensure(context.Background(), "east", "id", storage.Unfenced, dynamic.NewForConfigOrDie(cfg), Selection{Resources: []Resource{configMaps}}); err != nil {
		t.Fatal(err)
	}
	// The first page's write is held; the second page waits for it, the
	// third is listed and waits to be queued.
	want := int32(2 + listPagesAhead)
	testenv.Eventually(t, 30*time.Second, func() error {
		if n := lists.n.Load(); store.heldCount() != 1 || n != want {
			return fmt.Errorf("%d writes held, %d pages listed; want 1 and %d", store.heldCount(), n, want)
		}
		return nil
	})
	time.Sleep(300 * time.Millisecond)
	if n := lists.n.Load(); n != want {
		t.Fatalf("%d pages listed while storage held the first, want %d", n, want)
	}
	store.admit()()
	waitConverged(t, store, "east", m)
}

// failingOnce is a store whose second Apply fails.
type failingOnce struct {
	storage.Interface
	applies atomic.Int32
}

// ForCluster writes through s's Apply.
func (s *failingOnce) ForCluster(cluster string, epoch int64) storage.ClusterWriter {
	return storagetest.HookApply(s.Interface.ForCluster(cluster, epoch), s.apply)
}

func (s *failingOnce) apply(ctx context.Context, gvr schema.GroupVersionResource, changes []storage.Change, next storagetest.ApplyFunc) (int64, error) {
	if s.applies.Add(1) == 2 {
		return 0, errors.New("connection lost")
	}
	return next(ctx, gvr, changes)
}

// TestListWriteFails: a write that fails amid the list ends it, and the
// relist writes everything.
func TestListWriteFails(t *testing.T) {
	m := startMember(t)
	for i := range 35 {
		m.createConfigMap(t, fmt.Sprintf("cm-%d", i))
	}
	store := &failingOnce{Interface: storagetest.Backends()[0].Open(t)}
	p := NewPool(store, Options{PageSize: 10}, func(string) {})
	t.Cleanup(p.StopAll)
	if err := p.Ensure(context.Background(), "east", "id", storage.Unfenced, m.dyn, Selection{Resources: []Resource{configMaps}}); err != nil {
		t.Fatal(err)
	}
	waitConverged(t, store, "east", m)
	if n := store.applies.Load(); n < 5 {
		t.Fatalf("%d writes: want the 4 pages' after the failed one", n)
	}
	all, err := m.dyn.Resource(configMaps.GVR).List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	testenv.Eventually(t, 10*time.Second, func() error {
		if st := p.synchronizer("east", configMaps.GVR).Status(); st.State != clusterv1alpha1.SyncStateSynced || st.Count != int64(len(all.Items)) {
			return fmt.Errorf("status %+v, want synced, %d objects", st, len(all.Items))
		}
		return nil
	})
}

// TestRestartWaitsForTheList: a restart waits for the old synchronizer's
// initial list, whose write in flight lands after the old one's context
// ended, before the new one calls storage: else the new one's list could
// read the stored versions before that write and miss it, leaving an
// object the member deleted meanwhile.
func TestRestartWaitsForTheList(t *testing.T) {
	m := startMember(t)
	m.createConfigMap(t, "x")
	store := newStallingStore(t)
	store.hold(true)
	p := syncConfigMaps(t, store, m)
	restartWhileWriting(t, p, store, m, store.waitHeld(t, "the list's"), store.admit())
}

// TestStartIsNoChange: a synchronizer is Syncing from its start, which it
// does not tell of; its first change is the end of its initial list. The
// reconcile that starts a Cluster's synchronizers reads their states: told
// of their start, it would have the Cluster queued again behind itself.
func TestStartIsNoChange(t *testing.T) {
	m := startMember(t)
	m.createConfigMap(t, "x")
	store := newStallingStore(t)
	store.hold(false)
	var changes atomic.Int32
	p := NewPool(store, Options{}, func(string) { changes.Add(1) })
	t.Cleanup(p.StopAll)
	if err := ensureConfigMaps(p, m, "id"); err != nil {
		t.Fatal(err)
	}
	for res, st := range p.Statuses("east") {
		if st.State != clusterv1alpha1.SyncStateSyncing {
			t.Errorf("%s: state %q at the start, want %q", res.GVR, st.State, clusterv1alpha1.SyncStateSyncing)
		}
	}
	store.waitHeld(t, "the list's")
	if n := changes.Load(); n != 0 {
		t.Fatalf("%d changes told while the initial list is written, want none", n)
	}
	store.admit()()
	testenv.Eventually(t, time.Minute, func() error {
		if st, n := p.synchronizer("east", configMaps.GVR).Status(), changes.Load(); st.State != clusterv1alpha1.SyncStateSynced || n != 1 {
			return fmt.Errorf("state %q, %d changes told; want synced, told once", st.State, n)
		}
		return nil
	})
}
