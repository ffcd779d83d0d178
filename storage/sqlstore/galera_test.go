package sqlstore_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/watch"

	"github.com/panorama-io/panorama/storage"
	"github.com/panorama-io/panorama/storage/sqlstore"
	"github.com/panorama-io/panorama/storage/storagetest"
	"github.com/panorama-io/panorama/test/testenv"
)

// The Galera tests run against the 3-node cluster of hack/galera.sh: one
// database, a Store on each node, as controller and API server replicas
// connected to different nodes would be.

// openGalera opens a Store on every node; the first migrates the schema,
// which reaches the others before they open.
func openGalera(t *testing.T) []*sqlstore.Store {
	t.Helper()
	opts := storagetest.Galera(t)
	stores := make([]*sqlstore.Store, len(opts))
	for i, o := range opts {
		stores[i] = storagetest.OpenStore(t, o)
	}
	return stores
}

// churner writes one cluster's pods as a synchronizer would: creates,
// updates and deletes with growing member resourceVersions, and remembers
// every change it sent, in order, by key.
type churner struct {
	cluster string
	rng     *rand.Rand
	rv      int
	live    map[string]string // name -> member resourceVersion
	sent    map[string][]loggedChange
}

func newChurner(cluster string, seed uint64) *churner {
	return &churner{cluster: cluster, rng: rand.New(rand.NewPCG(seed, 1)), live: map[string]string{}, sent: map[string][]loggedChange{}}
}

// next makes a batch of changes of distinct pods, and records them as sent
// once the caller says the batch was written.
func (c *churner) next() (changes []storage.Change, written func()) {
	var logged []loggedChange
	names := map[string]bool{}
	for range 2 + c.rng.IntN(6) {
		name := fmt.Sprintf("p-%d", c.rng.IntN(40))
		if names[name] {
			continue
		}
		names[name] = true
		c.rv++
		rv := strconv.Itoa(c.rv)
		switch _, live := c.live[name]; {
		case live && c.rng.IntN(3) == 0:
			changes = append(changes, storage.DeleteAt("ns", name, rv))
			logged = append(logged, loggedChange{typ: watch.Deleted, cluster: c.cluster, name: name})
		case live:
			changes = append(changes, storage.Upsert(object("Pod", "ns", name, rv)))
			logged = append(logged, loggedChange{watch.Modified, c.cluster, name, rv})
		default:
			changes = append(changes, storage.Upsert(object("Pod", "ns", name, rv)))
			logged = append(logged, loggedChange{watch.Added, c.cluster, name, rv})
		}
	}
	return changes, func() {
		for _, l := range logged {
			c.sent[l.name] = append(c.sent[l.name], l)
			if l.typ == watch.Deleted {
				delete(c.live, l.name)
			} else {
				c.live[l.name] = l.memberRV
			}
		}
	}
}

// checkChurn checks the log against what the churners sent: revisions
// 1..N with no gap, each change of each key logged exactly once, in the
// order sent, and the stored objects as the last changes left them.
func checkChurn(t *testing.T, s storage.Interface, churners []*churner) {
	t.Helper()
	ctx := context.Background()
	events, _, err := s.Changes(ctx, 0, 1_000_000)
	if err != nil {
		t.Fatal(err)
	}
	logged := map[string]map[string][]loggedChange{}
	revs := map[string][]int64{}
	for i, e := range events {
		if e.Revision != int64(i+1) {
			t.Fatalf("log entry %d has revision %d: not contiguous", i, e.Revision)
		}
		got := loggedChange{typ: e.Type, cluster: e.Key.Cluster, name: e.Key.Name}
		if e.Type != watch.Deleted {
			o, err := storage.DecodeStored(e.Object)
			if err != nil {
				t.Fatal(err)
			}
			got.memberRV = o.MemberResourceVersion
		}
		if logged[got.cluster] == nil {
			logged[got.cluster] = map[string][]loggedChange{}
		}
		logged[got.cluster][got.name] = append(logged[got.cluster][got.name], got)
		revs[got.cluster+"/"+got.name] = append(revs[got.cluster+"/"+got.name], e.Revision)
	}
	total := 0
	for _, c := range churners {
		for name, sent := range c.sent {
			total += len(sent)
			if got := logged[c.cluster][name]; !slices.Equal(got, sent) {
				t.Errorf("%s/%s: logged %+v at revisions %v, sent %+v", c.cluster, name, got, revs[c.cluster+"/"+name], sent)
			}
		}
		versions, err := s.MemberVersions(ctx, c.cluster, podsGVR)
		if err != nil {
			t.Fatal(err)
		}
		stored := map[string]string{}
		for k, v := range versions {
			stored[k.Name] = v
		}
		if !mapsEqual(stored, c.live) {
			t.Fatalf("%s: stored %v, want %v", c.cluster, stored, c.live)
		}
	}
	if len(events) != total {
		t.Fatalf("%d log entries for %d changes sent", len(events), total)
	}
	// The count summary, which every write group updates too, agrees.
	res, err := s.Count(ctx, &storage.CountQuery{Query: storage.ListQuery{GVR: podsGVR}, GroupBy: []storage.GroupBy{{Kind: storage.GroupCluster}}})
	if err != nil {
		t.Fatal(err)
	}
	counted := map[string]int64{}
	for _, g := range res.Groups {
		counted[*g.Values[0]] = g.Count
	}
	for _, c := range churners {
		if counted[c.cluster] != int64(len(c.live)) {
			t.Errorf("%s: counted %d pods, %d live", c.cluster, counted[c.cluster], len(c.live))
		}
	}
}

func mapsEqual(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if w, ok := b[k]; !ok || w != v {
			return false
		}
	}
	return true
}

// tail follows s's log by "revision > last seen", as the watch cache does,
// until stop is closed and the log holds no more than want revisions;
// it returns the revisions it saw, in order.
func tail(ctx context.Context, s storage.Interface, stop <-chan struct{}, want func() int64) ([]int64, error) {
	var seen []int64
	var last int64
	for {
		stopped := false
		select {
		case <-stop:
			stopped = true
		default:
		}
		events, _, err := s.Changes(ctx, last, 1000)
		if err != nil {
			return seen, err
		}
		for _, e := range events {
			seen = append(seen, e.Revision)
			last = e.Revision
		}
		if stopped && len(events) == 0 && last >= want() {
			return seen, nil
		}
		time.Sleep(time.Millisecond)
	}
}

// tailer follows one node's log (tail) while writers write, until finish
// tells it the revision they reached.
type tailer struct {
	stop   chan struct{}
	head   atomic.Int64
	tailed chan []int64
}

func startTail(ctx context.Context, t *testing.T, s storage.Interface) *tailer {
	tl := &tailer{stop: make(chan struct{}), tailed: make(chan []int64, 1)}
	go func() {
		seen, err := tail(ctx, s, tl.stop, tl.head.Load)
		if err != nil {
			t.Error(err)
		}
		tl.tailed <- seen
	}()
	return tl
}

// finish lets the tailer read up to the last revision written, checks that
// it saw every revision in order, and returns that revision: the highest of
// the writers' nodes, each of which has applied what was committed through
// it, but not yet, maybe, what was committed through another.
func (tl *tailer) finish(ctx context.Context, t *testing.T, writers ...storage.Interface) int64 {
	t.Helper()
	var rev int64
	for _, w := range writers {
		r, _, err := w.Revision(ctx)
		if err != nil {
			t.Fatal(err)
		}
		rev = max(rev, r)
	}
	tl.head.Store(rev)
	close(tl.stop)
	checkTail(t, <-tl.tailed)
	return rev
}

func checkTail(t *testing.T, seen []int64) {
	t.Helper()
	for i, r := range seen {
		if r != int64(i+1) {
			t.Fatalf("the tailer saw revision %d at position %d: a later revision committed first on its node", r, i)
		}
	}
}

// TestGaleraWritersOnEveryNode writes through two nodes at once, several
// clusters' batches on each, while a tailer reads the log through the
// third. The nodes' writers conflict on the revision counter at commit and
// write again; every change is in the log exactly once, at contiguous
// revisions, and the tailer on the third node sees them in revision order:
// commit order there is revision order.
func TestGaleraWritersOnEveryNode(t *testing.T) {
	stores := openGalera(t)
	conflictsBefore := sqlstore.WriteConflicts()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	const perNode, rounds = 4, 25
	var churners []*churner
	var wg sync.WaitGroup
	for node := range 2 {
		for w := range perNode {
			c := newChurner(fmt.Sprintf("n%d-w%d", node, w), uint64(10*node+w))
			churners = append(churners, c)
			wg.Go(func() {
				for range rounds {
					changes, written := c.next()
					if _, err := stores[node].ForCluster(c.cluster, storage.Unfenced).Apply(ctx, podsGVR, changes); err != nil {
						t.Errorf("%s through node %d: %v", c.cluster, node+1, err)
						return
					}
					written()
				}
			})
		}
	}
	tailer := startTail(ctx, t, stores[2])
	wg.Wait()
	if t.Failed() {
		t.FailNow()
	}
	rev := tailer.finish(ctx, t, stores[0], stores[1])
	for i, s := range stores {
		t.Run(fmt.Sprintf("node%d", i+1), func(t *testing.T) {
			waitRevision(t, s, rev)
			checkChurn(t, s, churners)
		})
	}
	conflicts := sqlstore.WriteConflicts() - conflictsBefore
	if conflicts == 0 {
		t.Fatal("no write conflicted: the test did not write through two nodes at once")
	}
	t.Logf("%d revisions, %.0f groups written again after a conflict", rev, conflicts)
}

// waitRevision waits until s's node has applied the cluster's writes up to
// rev; the limit only keeps a broken cluster from hanging the test.
func waitRevision(t *testing.T, s storage.Interface, rev int64) {
	t.Helper()
	testenv.Eventually(t, time.Minute, func() error {
		if got, _, err := s.Revision(context.Background()); err != nil || got < rev {
			return fmt.Errorf("the node is at revision %d (%v), want %d", got, err, rev)
		}
		return nil
	})
}

// TestGaleraNodeKilledMidChurn writes through all three nodes and kills one
// (kill -9) while they write. Writers whose node died go on through the
// next node, sending again the batch that failed, whose commit they cannot
// know: a synchronizer reconnecting does the same. Nothing is lost or
// duplicated: the log holds every change once, at contiguous revisions, a
// tailer on a surviving node saw them in order, and the killed node, once
// restarted, catches up to the same log.
func TestGaleraNodeKilledMidChurn(t *testing.T) {
	storagetest.GaleraScript(t, "start") // an earlier run may have left a node down
	stores := openGalera(t)
	const killed = 2 // node 3
	t.Cleanup(func() { storagetest.GaleraScript(t, "start-node", strconv.Itoa(killed+1)) })
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	const perNode, rounds = 3, 40
	var churners []*churner
	var wg sync.WaitGroup
	var batches, failures atomic.Int64
	for node := range stores {
		for w := range perNode {
			c := newChurner(fmt.Sprintf("n%d-w%d", node, w), uint64(10*node+w))
			churners = append(churners, c)
			wg.Go(func() {
				through := node
				for range rounds {
					changes, written := c.next()
					for attempt := 0; ; attempt++ {
						_, err := stores[through].ForCluster(c.cluster, storage.Unfenced).Apply(ctx, podsGVR, changes)
						if err == nil {
							break
						}
						failures.Add(1)
						if attempt == 20 {
							t.Errorf("%s: %v", c.cluster, err)
							return
						}
						through = (through + 1) % len(stores)
						if through == killed {
							through = (through + 1) % len(stores)
						}
					}
					written()
					batches.Add(1)
				}
			})
		}
	}
	tailer := startTail(ctx, t, stores[0])
	for batches.Load() < int64(len(churners)*rounds/3) {
		time.Sleep(time.Millisecond)
	}
	storagetest.GaleraScript(t, "kill", strconv.Itoa(killed+1))
	killedAt := batches.Load()
	wg.Wait()
	if t.Failed() {
		t.FailNow()
	}
	rev := tailer.finish(ctx, t, stores[0], stores[1])
	for _, s := range stores[:2] {
		waitRevision(t, s, rev)
		checkChurn(t, s, churners)
	}
	if failures.Load() == 0 {
		t.Fatal("no write failed: the node was not killed while written through")
	}
	storagetest.GaleraScript(t, "start-node", strconv.Itoa(killed+1))
	waitRevision(t, stores[killed], rev)
	checkChurn(t, stores[killed], churners)
	t.Logf("killed node %d after %d of %d batches; %d writes failed and were sent again; %d revisions",
		killed+1, killedAt, len(churners)*rounds, failures.Load(), rev)
}

// A write through one node that read the cluster's owner epoch before an
// Own through another node committed is fenced, not committed after the
// Own. The counter's lock is each node's own, and Galera orders
// transactions by the rows they write, not by those they read: Own writes
// the counter's row, as every write does (barrier). The stale write is
// held after its read of the epoch, at its first insert, by a row of the
// same revision that the test inserts uncommitted on the write's node,
// until the Own has been applied there: applying it needs the counter's
// row, which the held write has locked, so Galera aborts the write, which
// runs again and reads the new epoch. (An Own certified and not yet
// applied there would fail the write's certification instead.) Without
// the barrier, the Own is applied beside the held write, which then
// commits.
func TestGaleraStaleOwnerFenced(t *testing.T) {
	stores := openGalera(t)
	ctx := context.Background()
	old, err := stores[0].Own(ctx, "east")
	if err != nil {
		t.Fatal(err)
	}
	rev, err := stores[0].ForCluster("east", old).Apply(ctx, podsGVR, []storage.Change{storage.Upsert(object("Pod", "default", "a", "1"))})
	if err != nil {
		t.Fatal(err)
	}
	hold := sqlstore.GormDB(stores[0]).Begin()
	defer hold.Rollback()
	if err := hold.Exec("INSERT INTO resources (object_id, revision, cluster, api_group, version, resource, namespace, name, kind, uid, owner_uid, created_at, member_resource_version, object)"+
		" VALUES (?, ?, 'hold', '', 'v1', 'pods', 'default', 'hold', 'Pod', '', '', 0, '1', ?)", rev+1, rev+1, []byte("{}")).Error; err != nil {
		t.Fatal(err)
	}
	stale := make(chan error, 1)
	go func() {
		_, err := stores[0].ForCluster("east", old).Apply(ctx, podsGVR, []storage.Change{storage.Upsert(object("Pod", "default", "b", "2"))})
		stale <- err
	}()
	testenv.Eventually(t, time.Minute, func() error {
		var waiting int64
		err := sqlstore.GormDB(stores[0]).Raw("SELECT COUNT(*) FROM information_schema.processlist WHERE db = DATABASE() AND info LIKE 'INSERT INTO `resources`%'").Scan(&waiting).Error
		if err != nil || waiting == 0 {
			return fmt.Errorf("the stale write does not wait for the held row: %d inserts waiting (%v)", waiting, err)
		}
		return nil
	})

	epoch, err := stores[1].Own(ctx, "east")
	if err != nil || epoch != old+1 {
		t.Fatalf("Own through node 2: %d, %v; want epoch %d", epoch, err, old+1)
	}
	testenv.Eventually(t, time.Minute, func() error {
		if epochs, err := stores[0].Epochs(ctx); err != nil || epochs["east"] != epoch {
			return fmt.Errorf("node 1 has epochs %v (%v), not yet the Own's %d", epochs, err, epoch)
		}
		return nil
	})
	if err := hold.Rollback().Error; err != nil {
		t.Fatal(err)
	}
	if err := <-stale; !isFenced(err, old, epoch) {
		t.Fatalf("the stale write: %v, want fenced at epoch %d", err, epoch)
	}
	for i, s := range stores {
		waitRevision(t, s, rev)
		got, err := s.MemberVersions(ctx, "east", podsGVR)
		if err != nil || len(got) != 1 || got[storage.NamespacedName{Namespace: "default", Name: "a"}] != "1" {
			t.Errorf("node %d stores %v, %v; want only a, as the first owner wrote it", i+1, got, err)
		}
	}
}
