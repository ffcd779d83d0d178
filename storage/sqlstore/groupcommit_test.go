package sqlstore_test

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"gorm.io/gorm"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/panorama-io/panorama/storage"
	"github.com/panorama-io/panorama/storage/sqlstore"
	"github.com/panorama-io/panorama/storage/storagetest"
)

// loggedChange is what one change of a batch must leave in the log.
type loggedChange struct {
	typ      watch.EventType
	cluster  string
	name     string
	memberRV string // of an upsert
}

// sentBatch is a batch as its caller sent it, and what Apply answered.
type sentBatch struct {
	changes []loggedChange
	rev     int64
	err     error
}

// checkLog reads the whole log and checks that it holds exactly the
// changes of the batches that succeeded, each once: revisions 1..N, and
// each batch's changes, in order, at the revisions just up to the one its
// Apply returned.
func checkLog(t *testing.T, s storage.Interface, batches []*sentBatch) {
	t.Helper()
	events, _, err := s.Changes(context.Background(), 0, 1_000_000)
	if err != nil {
		t.Fatal(err)
	}
	byRev := map[int64]storage.LoggedChange{}
	for i, e := range events {
		if e.Revision != int64(i+1) {
			t.Fatalf("log entry %d has revision %d: not contiguous", i, e.Revision)
		}
		byRev[e.Revision] = e
	}
	total := 0
	for _, b := range batches {
		if b.err != nil {
			continue
		}
		total += len(b.changes)
		for i, c := range b.changes {
			rev := b.rev - int64(len(b.changes)-1-i)
			e, ok := byRev[rev]
			if !ok {
				t.Fatalf("batch answered revision %d, its change %d (%s %s/%s) should be at %d: not in the log", b.rev, i, c.typ, c.cluster, c.name, rev)
			}
			got := loggedChange{typ: e.Type, cluster: e.Key.Cluster, name: e.Key.Name}
			if c.typ != watch.Deleted {
				o, err := storage.DecodeStored(e.Object)
				if err != nil {
					t.Fatal(err)
				}
				got.memberRV = o.MemberResourceVersion
			}
			if got != c {
				t.Fatalf("revision %d holds %+v, want %+v (change %d of the batch answered %d)", rev, got, c, i, b.rev)
			}
		}
	}
	if len(events) != total {
		t.Fatalf("%d log entries, want the %d changes of the batches that succeeded", len(events), total)
	}
}

// TestConcurrentWritersGetOwnCommitOrderedRevisions writes from many
// goroutines at once, each its own cluster's creates, updates and deletes,
// while a tailer follows the log by "revision > last seen". Each caller's
// changes are in the log once, at the revisions its Apply returned, the
// revisions are contiguous, and the tailer sees every one of them in order:
// a group never commits before an earlier one.
func TestConcurrentWritersGetOwnCommitOrderedRevisions(t *testing.T) {
	storagetest.ForEach(t, func(t *testing.T, b storagetest.Backend) {
		s := b.Open(t)
		locks := countCounterLocks(t, s)
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		const writers, rounds = 16, 12
		results := make([][]*sentBatch, writers)
		var written atomic.Int64
		var wg sync.WaitGroup
		for w := range writers {
			wg.Go(func() {
				cluster := fmt.Sprintf("c%02d", w)
				var live []string
				for r := range rounds {
					var changes []storage.Change
					sent := &sentBatch{}
					// Create some, update one, delete one: distinct names in a batch.
					for j := range 1 + (w+r)%4 {
						name := fmt.Sprintf("p-%d-%d", r, j)
						changes = append(changes, storage.Upsert(object("Pod", "ns", name, "1")))
						sent.changes = append(sent.changes, loggedChange{watch.Added, cluster, name, "1"})
						live = append(live, name)
					}
					if r > 0 {
						name := live[0]
						rv := fmt.Sprint(10 + r)
						changes = append(changes, storage.Upsert(object("Pod", "ns", name, rv)))
						sent.changes = append(sent.changes, loggedChange{watch.Modified, cluster, name, rv})
					}
					if r > 1 {
						name := live[1]
						live = slices.Delete(live, 1, 2)
						changes = append(changes, storage.Delete("ns", name))
						sent.changes = append(sent.changes, loggedChange{typ: watch.Deleted, cluster: cluster, name: name})
					}
					sent.rev, sent.err = s.ForCluster(cluster, storage.Unfenced).Apply(ctx, podsGVR, changes)
					if sent.err != nil {
						t.Errorf("%s: %v", cluster, sent.err)
						return
					}
					written.Add(int64(len(sent.changes)))
					results[w] = append(results[w], sent)
				}
			})
		}
		var seen []int64
		tailDone := make(chan error, 1)
		writersDone := make(chan struct{})
		go func() {
			var last int64
			for {
				finished := false
				select {
				case <-writersDone:
					finished = true
				default:
				}
				events, _, err := s.Changes(ctx, last, 1000)
				if err != nil {
					tailDone <- err
					return
				}
				for _, e := range events {
					seen = append(seen, e.Revision)
					last = e.Revision
				}
				if finished && len(events) == 0 {
					tailDone <- nil
					return
				}
				time.Sleep(time.Millisecond)
			}
		}()
		wg.Wait()
		close(writersDone)
		if err := <-tailDone; err != nil {
			t.Fatal(err)
		}
		if int64(len(seen)) != written.Load() {
			t.Fatalf("the tailer saw %d revisions of %d written", len(seen), written.Load())
		}
		for i, r := range seen {
			if r != int64(i+1) {
				t.Fatalf("the tailer saw revision %d at position %d: a later revision committed first", r, i)
			}
		}
		checkLog(t, s, slices.Concat(results...))
		if n := locks.Load(); n >= writers*rounds {
			t.Errorf("%d transactions locked the counter for %d batches: no batches were grouped", n, writers*rounds)
		}
		t.Logf("%d batches of %d changes in %d transactions", writers*rounds, written.Load(), locks.Load())
	})
}

// TestFailingBatchFailsAlone lines up batches behind one that waits for
// the counter (held by a second store, as by another process), so that
// they form one group, with one in the middle that fails: its object
// cannot be encoded, or the database refuses its row when the group's rows
// are written (a trigger stands for a refusal that validation missed).
// That one gets its error; every other batch is written, each change once,
// at the revisions its caller got, and with the member's resourceVersion
// although the batches before the failing one were planned twice.
func TestFailingBatchFailsAlone(t *testing.T) {
	refuse := map[string][]string{
		"sqlite": {`CREATE TRIGGER refuse BEFORE INSERT ON resources WHEN NEW.name = 'bad' BEGIN SELECT RAISE(ABORT, 'refused by trigger'); END`},
		"mysql": {`CREATE TRIGGER refuse BEFORE INSERT ON resources FOR EACH ROW BEGIN
			IF NEW.name = 'bad' THEN SIGNAL SQLSTATE '45000' SET MESSAGE_TEXT = 'refused by trigger'; END IF; END`},
		"postgres": {`CREATE FUNCTION refuse() RETURNS trigger AS $$ BEGIN
			IF NEW.name = 'bad' THEN RAISE EXCEPTION 'refused by trigger'; END IF; RETURN NEW; END $$ LANGUAGE plpgsql`,
			`CREATE TRIGGER refuse BEFORE INSERT ON resources FOR EACH ROW EXECUTE FUNCTION refuse()`},
	}
	for _, tc := range []struct {
		name    string
		bad     *unstructured.Unstructured
		refuse  bool
		wantErr string
	}{
		{"unencodable", object("Pod", "ns", "bad", "1", func(u *unstructured.Unstructured) {
			u.Object["spec"] = map[string]any{"weight": math.NaN()}
		}), false, "NaN"},
		{"refused by the database", object("Pod", "ns", "bad", "1"), true, "refused by trigger"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			storagetest.ForEach(t, func(t *testing.T, b storagetest.Backend) {
				opts := b.Options(t)
				s := storagetest.OpenStore(t, opts)
				if tc.refuse {
					for _, stmt := range refuse[b.Name] {
						if err := sqlstore.GormDB(s).Exec(stmt).Error; err != nil {
							t.Fatal(err)
						}
					}
				}
				locks := countCounterLocks(t, s)
				release, waitBlocked := holdCounter(t, opts, s)
				ctx := context.Background()
				first := applyAsync(ctx, s, "first", storage.Unfenced, "7")
				waitBlocked(1)
				const good = 8
				var calls []<-chan *sentBatch
				for i := range good + 1 {
					if i == good/2 {
						changes := []storage.Change{storage.Upsert(tc.bad.DeepCopy()), storage.Upsert(object("Pod", "ns", "fine", "1"))}
						calls = append(calls, applyChanges(ctx, s, "bad", storage.Unfenced, changes, nil))
					} else {
						calls = append(calls, applyAsync(ctx, s, fmt.Sprintf("good-%d", i), storage.Unfenced, fmt.Sprint(20+i)))
					}
					waitQueued(t, s, i+1)
				}
				release()
				batches := []*sentBatch{<-first}
				for i, call := range calls {
					r := <-call
					if i == good/2 {
						if r.err == nil || !strings.Contains(r.err.Error(), tc.wantErr) {
							t.Fatalf("the failing batch answered %d, %v; want %q", r.rev, r.err, tc.wantErr)
						}
						continue
					}
					if r.err != nil {
						t.Fatalf("batch %d failed with the bad one: %v", i, r.err)
					}
					batches = append(batches, r)
				}
				checkLog(t, s, batches)
				if _, err := s.Get(ctx, storage.Key{Cluster: "bad", GVR: podsGVR, Namespace: "ns", Name: "fine"}); !errors.Is(err, storage.ErrNotFound) {
					t.Fatalf("the rest of the failed batch was stored: %v", err)
				}
				// A refusal when the rows are written is blamed on every
				// batch whose rows they were, which then run one by one.
				if n := locks.Load(); !tc.refuse && n >= good+2 {
					t.Errorf("%d transactions for %d batches: the batches were not grouped", n, good+2)
				}
			})
		})
	}
}

// TestGroupedWritesOfOneKey lines up, in one group, batches that change
// the same object of one cluster (a synchronizer's batch and a
// DeleteResource, say): each sees what the ones before it in the group
// wrote, so the log reads created, updated, deleted, created again.
func TestGroupedWritesOfOneKey(t *testing.T) {
	storagetest.ForEach(t, func(t *testing.T, b storagetest.Backend) {
		opts := b.Options(t)
		s := storagetest.OpenStore(t, opts)
		locks := countCounterLocks(t, s)
		release, waitBlocked := holdCounter(t, opts, s)
		ctx := context.Background()
		first := applyAsync(ctx, s, "first", storage.Unfenced, "1")
		waitBlocked(1)
		var calls []<-chan *sentBatch
		for i, c := range []struct {
			change storage.Change
			logged loggedChange
		}{
			{storage.Upsert(object("Pod", "ns", "p", "1")), loggedChange{watch.Added, "east", "p", "1"}},
			{storage.Upsert(object("Pod", "ns", "p", "2")), loggedChange{watch.Modified, "east", "p", "2"}},
			{storage.Delete("ns", "p"), loggedChange{typ: watch.Deleted, cluster: "east", name: "p"}},
			{storage.Upsert(object("Pod", "ns", "p", "3")), loggedChange{watch.Added, "east", "p", "3"}},
		} {
			calls = append(calls, applyChanges(ctx, s, "east", storage.Unfenced, []storage.Change{c.change}, []loggedChange{c.logged}))
			waitQueued(t, s, i+1)
		}
		release()
		batches := []*sentBatch{awaitResult(t, first)}
		for _, c := range calls {
			r := awaitResult(t, c)
			if r.err != nil {
				t.Fatal(r.err)
			}
			batches = append(batches, r)
		}
		checkLog(t, s, batches)
		if n := locks.Load(); n != 2 {
			t.Errorf("%d transactions for a batch and a group of four, want 2", n)
		}
	})
}

// TestCancelledWrites: a caller that gives up while its batch is queued
// returns at once and writes nothing; one that gives up while its group
// waits for the counter rolls the group back and returns, and the rest of
// the group is written without it.
func TestCancelledWrites(t *testing.T) {
	storagetest.ForEach(t, func(t *testing.T, b storagetest.Backend) {
		opts := b.Options(t)
		s := storagetest.OpenStore(t, opts)
		release, waitBlocked := holdCounter(t, opts, s)
		waiting, cancelWaiting := context.WithCancel(context.Background())
		first := applyAsync(waiting, s, "first", storage.Unfenced, "1") // its group waits for the counter
		waitBlocked(1)
		queued, cancelQueued := context.WithCancel(context.Background())
		inQueue := applyAsync(queued, s, "queued", storage.Unfenced, "1")
		waitQueued(t, s, 1)
		grouped, cancelGrouped := context.WithCancel(context.Background())
		withKept := applyAsync(grouped, s, "grouped", storage.Unfenced, "1")
		kept := applyAsync(context.Background(), s, "kept", storage.Unfenced, "1")
		waitQueued(t, s, 3)

		cancelQueued()
		if r := awaitResult(t, inQueue); !errors.Is(r.err, context.Canceled) {
			t.Fatalf("a queued write whose context ended answered %d, %v", r.rev, r.err)
		}
		cancelWaiting()
		if r := awaitResult(t, first); !errors.Is(r.err, context.Canceled) {
			t.Fatalf("a write whose group waits for the counter answered %d, %v after its context ended", r.rev, r.err)
		}
		// "grouped" and "kept" now form the next group, which waits for the counter.
		waitBlocked(2)
		waitQueued(t, s, 0)
		cancelGrouped()
		if r := awaitResult(t, withKept); !errors.Is(r.err, context.Canceled) {
			t.Fatalf("a write whose group waits for the counter answered %d, %v after its context ended", r.rev, r.err)
		}
		release()
		r := awaitResult(t, kept)
		if r.err != nil {
			t.Fatal(r.err)
		}
		checkLog(t, s, []*sentBatch{r})
	})
}

// TestCloseWritesWhatIsQueued closes a store while a group waits for the
// counter and another batch is queued: Close refuses new writes at once,
// returns once both are written, and they are in the log.
func TestCloseWritesWhatIsQueued(t *testing.T) {
	storagetest.ForEach(t, func(t *testing.T, b storagetest.Backend) {
		opts := b.Options(t)
		s := storagetest.OpenStore(t, opts)
		release, waitBlocked := holdCounter(t, opts, s)
		ctx := context.Background()
		first := applyAsync(ctx, s, "first", storage.Unfenced, "1")
		waitBlocked(1)
		second := applyAsync(ctx, s, "second", storage.Unfenced, "1")
		waitQueued(t, s, 1)
		closed := make(chan error, 1)
		go func() { closed <- s.Close() }()
		// A write queued before Close marks the store closed waits behind
		// the held group; it gives up, and is withdrawn, after 10 ms.
		for {
			probe, cancel := context.WithTimeout(ctx, 10*time.Millisecond)
			_, err := s.ForCluster("probe", storage.Unfenced).Apply(probe, podsGVR, []storage.Change{storage.Upsert(object("Pod", "ns", "p", "1"))})
			cancel()
			if err != nil && err.Error() == "storage is closed" {
				break
			}
			if !errors.Is(err, context.DeadlineExceeded) {
				t.Fatalf("a write while closing answered %v", err)
			}
		}
		release()
		if err := <-closed; err != nil {
			t.Fatal(err)
		}
		var batches []*sentBatch
		for _, c := range []<-chan *sentBatch{first, second} {
			r := awaitResult(t, c)
			if r.err != nil {
				t.Fatalf("a write queued before Close: %v", r.err)
			}
			batches = append(batches, r)
		}
		checkLog(t, storagetest.OpenStore(t, opts), batches)
	})
}

// holdCounter keeps s's writer from writing until release, as another
// process's write does: MariaDB and PostgreSQL lock the revision counter
// from a second store on the same database. SQLite would answer the writer
// "busy" at once rather than have it wait, so there the test holds the
// store's one connection instead. waitBlocked waits until n groups have
// started to wait for it.
func holdCounter(t *testing.T, opts sqlstore.Options, s *sqlstore.Store) (release func(), waitBlocked func(n int64)) {
	t.Helper()
	var once sync.Once
	var blocked func() int64
	if opts.Driver == "sqlite" {
		conn := storeConn(t, s)
		sqlDB, err := sqlstore.GormDB(s).DB()
		if err != nil {
			t.Fatal(err)
		}
		release = func() { once.Do(func() { _ = conn.Close() }) }
		blocked = func() int64 { return sqlDB.Stats().WaitCount }
	} else {
		locks := countCounterLocks(t, s)
		tx := sqlstore.GormDB(storagetest.OpenStore(t, opts)).Begin()
		if err := tx.Exec("UPDATE panorama_meta SET value = value WHERE name = 'revision'").Error; err != nil {
			t.Fatal(err)
		}
		release = func() { once.Do(func() { tx.Rollback() }) }
		blocked = locks.Load
	}
	t.Cleanup(release)
	return release, func(n int64) {
		t.Helper()
		for deadline := time.Now().Add(time.Minute); blocked() < n; time.Sleep(time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatalf("%d groups wait for the counter, want %d", blocked(), n)
			}
		}
	}
}

// countCounterLocks counts the transactions of s that started to read the
// counter to lock it: one per group.
func countCounterLocks(t *testing.T, s *sqlstore.Store) *atomic.Int64 {
	t.Helper()
	var n atomic.Int64
	err := sqlstore.GormDB(s).Callback().Row().Before("gorm:row").Register("test:count-locks-"+fmt.Sprint(rand.Int()), func(tx *gorm.DB) {
		if strings.HasPrefix(tx.Statement.SQL.String(), "SELECT value FROM panorama_meta") {
			n.Add(1)
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	return &n
}

// applyAsync upserts one pod into cluster in the background.
func applyAsync(ctx context.Context, s storage.Interface, cluster string, epoch int64, memberRV string) <-chan *sentBatch {
	return applyChanges(ctx, s, cluster, epoch, []storage.Change{storage.Upsert(object("Pod", "ns", "p", memberRV))},
		[]loggedChange{{watch.Added, cluster, "p", memberRV}})
}

func applyChanges(ctx context.Context, s storage.Interface, cluster string, epoch int64, changes []storage.Change, logged []loggedChange) <-chan *sentBatch {
	return applyResource(ctx, s, cluster, epoch, podsGVR, changes, logged)
}

func applyResource(ctx context.Context, s storage.Interface, cluster string, epoch int64, gvr schema.GroupVersionResource, changes []storage.Change, logged []loggedChange) <-chan *sentBatch {
	out := make(chan *sentBatch, 1)
	go func() {
		rev, err := s.ForCluster(cluster, epoch).Apply(ctx, gvr, changes)
		out <- &sentBatch{changes: logged, rev: rev, err: err}
	}()
	return out
}

// waitQueued waits until n writes wait for a group.
func waitQueued(t *testing.T, s *sqlstore.Store, n int) {
	t.Helper()
	for deadline := time.Now().Add(time.Minute); sqlstore.Queued(s) != n; time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("%d writes queued, want %d", sqlstore.Queued(s), n)
		}
	}
}

// awaitResult waits for an Apply in the background; the limit only keeps
// a hung write from hanging the test.
func awaitResult(t *testing.T, c <-chan *sentBatch) *sentBatch {
	t.Helper()
	select {
	case r := <-c:
		return r
	case <-time.After(time.Minute):
		t.Fatal("a write did not return")
		return nil
	}
}

// TestGroupLooksKeysUpOnce lines up, in one group, fenced writes of
// several clusters, of two resources, and of one cluster's resource twice:
// the group looks the keys up in one statement per resource, and the
// owner epochs in one, for the batches that read nothing another planned,
// and once more for the one that reads what the batch of its resource
// before it planned. Each batch finds its own rows, not another cluster's
// copy of the same name nor a like-named object of another resource: an
// unchanged object is skipped, a changed one updated, a new one created,
// each once.
func TestGroupLooksKeysUpOnce(t *testing.T) {
	storagetest.ForEach(t, func(t *testing.T, b storagetest.Backend) {
		opts := b.Options(t)
		s := storagetest.OpenStore(t, opts)
		ctx := context.Background()
		const clusters = 4
		owned := map[string]int64{}
		var batches []*sentBatch
		for c := range clusters {
			cluster := fmt.Sprint("c", c)
			epoch, err := s.Own(ctx, cluster)
			if err != nil {
				t.Fatal(err)
			}
			owned[cluster] = epoch
			batches = append(batches, awaitResult(t, applyAsync(ctx, s, cluster, owned[cluster], "1")))
		}
		rec := newQueryRecorder(t, s)
		locks := countCounterLocks(t, s)
		release, waitBlocked := holdCounter(t, opts, s)
		var calls []<-chan *sentBatch
		queue := func(c <-chan *sentBatch) {
			calls = append(calls, c)
			waitQueued(t, s, len(calls))
		}
		stmts := rec.record(func() {
			first := applyAsync(ctx, s, "first", storage.Unfenced, "1")
			waitBlocked(1)
			for c := range clusters {
				cluster := fmt.Sprint("c", c)
				if c%2 == 0 { // as stored
					queue(applyChanges(ctx, s, cluster, owned[cluster], []storage.Change{storage.Upsert(object("Pod", "ns", "p", "1"))}, nil))
					continue
				}
				queue(applyChanges(ctx, s, cluster, owned[cluster],
					[]storage.Change{storage.Upsert(object("Pod", "ns", "p", "2")), storage.Upsert(object("Pod", "ns", "q", "1"))},
					[]loggedChange{{watch.Modified, cluster, "p", "2"}, {watch.Added, cluster, "q", "1"}}))
			}
			queue(applyResource(ctx, s, "c0", owned["c0"], deploymentsGVR,
				[]storage.Change{storage.Upsert(object("Deployment", "ns", "p", "5"))},
				[]loggedChange{{watch.Added, "c0", "p", "5"}}))
			queue(applyChanges(ctx, s, "c1", owned["c1"],
				[]storage.Change{storage.Upsert(object("Pod", "ns", "p", "3")), storage.Delete("ns", "q")},
				[]loggedChange{{watch.Modified, "c1", "p", "3"}, {typ: watch.Deleted, cluster: "c1", name: "q"}}))
			release()
			batches = append(batches, awaitResult(t, first))
			for _, c := range calls {
				r := awaitResult(t, c)
				if r.err != nil {
					t.Fatal(r.err)
				}
				batches = append(batches, r)
			}
		})
		if n := locks.Load(); n != 2 {
			t.Errorf("%d transactions for a write and a group, want 2", n)
		}
		var lookups, epochs int
		for _, st := range stmts {
			if isKeyLookup(st) {
				lookups++
			}
			epochs += strings.Count(st.sql, "panorama_owners")
		}
		// "first"; the group's pods (a list of names for each cluster's
		// namespace) and deployments; c1's pods again.
		podLookups := (clusters + sqlstore.LookupLists(s) - 1) / sqlstore.LookupLists(s)
		if want := 1 + podLookups + 1 + 1; lookups != want {
			t.Errorf("%d statements looked keys up for a write and a group of %d, want %d", lookups, len(calls), want)
		}
		if epochs != 2 {
			t.Errorf("%d statements read owner epochs for a group of %d fenced writes, want 2", epochs, len(calls))
		}

		checkLog(t, s, batches)
	})
}

// TestStaleWriteAmidARunFailsAlone lines up, in one group, fenced writes
// of three clusters, whose keys and epochs the group reads at once; the
// middle one's cluster has been taken over since. It fails alone, fenced,
// and the others are written.
func TestStaleWriteAmidARunFailsAlone(t *testing.T) {
	storagetest.ForEach(t, func(t *testing.T, b storagetest.Backend) {
		opts := b.Options(t)
		s := storagetest.OpenStore(t, opts)
		ctx := context.Background()
		owned := map[string]int64{}
		for _, cluster := range []string{"c0", "c1", "c2"} {
			epoch, err := s.Own(ctx, cluster)
			if err != nil {
				t.Fatal(err)
			}
			owned[cluster] = epoch
		}
		if _, err := s.Own(ctx, "c1"); err != nil {
			t.Fatal(err)
		}
		release, waitBlocked := holdCounter(t, opts, s)
		first := applyAsync(ctx, s, "first", storage.Unfenced, "1")
		waitBlocked(1)
		var calls []<-chan *sentBatch
		for _, cluster := range []string{"c0", "c1", "c2"} {
			calls = append(calls, applyChanges(ctx, s, cluster, owned[cluster], []storage.Change{storage.Upsert(object("Pod", "ns", "p", "1"))},
				[]loggedChange{{watch.Added, cluster, "p", "1"}}))
			waitQueued(t, s, len(calls))
		}
		release()
		batches := []*sentBatch{awaitResult(t, first)}
		for i, c := range calls {
			r := awaitResult(t, c)
			switch {
			case i == 1 && !storage.IsFenced(r.err):
				t.Fatalf("the write of an epoch since taken over answered %d, %v", r.rev, r.err)
			case i != 1 && r.err != nil:
				t.Fatalf("a write beside the stale one: %v", r.err)
			case i != 1:
				batches = append(batches, r)
			}
		}
		checkLog(t, s, batches)
	})
}
