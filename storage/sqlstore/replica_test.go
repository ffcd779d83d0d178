package sqlstore_test

import (
	"context"
	"database/sql"
	"slices"
	"testing"
	"time"

	"github.com/panorama-io/panorama/storage"
	"github.com/panorama-io/panorama/storage/sqlstore"
	"github.com/panorama-io/panorama/storage/storagetest"
)

// openReplicated opens what an API server with --storage-read-dsn reads
// through, and a Store on the primary that writes, as the controller
// manager does; and a session on the standby to pause its replay.
func openReplicated(t *testing.T) (*sqlstore.Replicated, *sqlstore.Store, func(paused bool)) {
	t.Helper()
	opts := storagetest.PostgresReplica(t)
	writer := storagetest.OpenStore(t, sqlstore.Options{Driver: opts.Driver, DSN: opts.DSN, MaxOpenConns: opts.MaxOpenConns})
	st, err := sqlstore.OpenForReads(context.Background(), opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = st.Close() })
	r, ok := st.(*sqlstore.Replicated)
	if !ok {
		t.Fatalf("OpenForReads with a read DSN returned a %T", st)
	}
	standby, err := sql.Open("pgx", opts.ReadDSN)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = standby.Close() })
	replay := func(paused bool) {
		t.Helper()
		fn := "pg_wal_replay_resume"
		if paused {
			fn = "pg_wal_replay_pause"
		}
		if _, err := standby.Exec("SELECT " + fn + "()"); err != nil {
			t.Fatal(err)
		}
	}
	t.Cleanup(func() { replay(false) })
	return r, writer, replay
}

// TestReplicaReadsNeverOlderThanSeen writes through the primary and reads
// through a Replicated while the standby replays and while its replay is
// paused: a read never shows a state older than the primary's when it
// began (it waits for the standby, or reads the primary), a list pinned to
// a revision the standby has not reached falls back too, the log is the
// standby's, in order, and the lag is measured.
func TestReplicaReadsNeverOlderThanSeen(t *testing.T) {
	r, writer, replay := openReplicated(t)
	ctx := context.Background()
	write := func(names ...string) int64 {
		t.Helper()
		var changes []storage.Change
		for _, n := range names {
			changes = append(changes, storage.Upsert(object("Pod", "ns", n, "1")))
		}
		rev, err := writer.ForCluster("east", storage.Unfenced).Apply(ctx, podsGVR, changes)
		if err != nil {
			t.Fatal(err)
		}
		return rev
	}
	rev1 := write("a", "b", "c")
	// Replaying: the read waits for the standby, which soon has it all.
	got, at := namesAt(t, r, storage.ListQuery{GVR: podsGVR})
	if !slices.Equal(got, []string{"a", "b", "c"}) || at < rev1 {
		t.Fatalf("listed %v at %d after a write at %d", got, at, rev1)
	}
	page, err := r.List(ctx, &storage.ListQuery{GVR: podsGVR, Limit: 1})
	if err != nil || page.Continue == "" {
		t.Fatalf("first page: %v, continue %q", err, page.Continue)
	}

	replay(true)
	fallbacks := r.Fallbacks()
	rev2 := write("d")
	got, at = namesAt(t, r, storage.ListQuery{GVR: podsGVR})
	if !slices.Equal(got, []string{"a", "b", "c", "d"}) || at < rev2 {
		t.Fatalf("replay paused: listed %v at %d after a write at %d", got, at, rev2)
	}
	if _, err := r.Get(ctx, storage.Key{Cluster: "east", GVR: podsGVR, Namespace: "ns", Name: "d"}); err != nil {
		t.Fatalf("replay paused: get of the new pod: %v", err)
	}
	if n := r.Fallbacks() - fallbacks; n != 2 {
		t.Fatalf("replay paused: %d reads fell back to the primary, want the list and the get", n)
	}
	// The log and its revision are the standby's: behind, never out of order.
	cur, _, err := r.Revision(ctx)
	if err != nil || cur != rev1 {
		t.Fatalf("replay paused: revision %d (%v), want the standby's %d", cur, err, rev1)
	}
	events, _, err := r.Changes(ctx, 0, 100)
	if err != nil {
		t.Fatal(err)
	}
	for i, e := range events {
		if e.Revision != int64(i+1) {
			t.Fatalf("the standby's log has revision %d at %d", e.Revision, i)
		}
	}
	if int64(len(events)) != rev1 {
		t.Fatalf("the standby's log has %d entries, want %d", len(events), rev1)
	}
	if err := sqlstore.MeasureLag(ctx, r); err != nil {
		t.Fatal(err)
	}
	if revs, secs := r.ReplicaLag(); revs != rev2-rev1 || secs <= 0 {
		t.Fatalf("replay paused: lag %d revisions, %gs; want %d revisions and some seconds", revs, secs, rev2-rev1)
	}
	readable, err := r.ReadableRevision(ctx, rev2)
	if err != nil || readable < rev2 {
		t.Fatalf("a NotOlderThan check at %d would see %d (%v)", rev2, readable, err)
	}

	replay(false)
	// A continue token pinned to rev1 the standby has: read there.
	before := r.Fallbacks()
	rest, err := r.List(ctx, &storage.ListQuery{GVR: podsGVR, Continue: page.Continue})
	if err != nil {
		t.Fatal(err)
	}
	if len(rest.Objects) != 2 || rest.Revision != page.Revision {
		t.Fatalf("the rest of the pages at %d: %d objects at %d", page.Revision, len(rest.Objects), rest.Revision)
	}
	if n := r.Fallbacks(); n != before {
		t.Fatalf("a page pinned to a revision the standby has fell back to the primary")
	}
	if err := sqlstore.MeasureLag(ctx, r); err != nil {
		t.Fatal(err)
	}
	// Replay resumed: the standby catches up, and follows new writes.
	woke := make(chan int64, 16)
	fctx, cancel := context.WithCancel(ctx)
	defer cancel()
	go r.Follow(fctx, rev2, 5*time.Millisecond, func(rev int64) { woke <- rev })
	rev3 := write("e")
	for rev := int64(0); rev < rev3; {
		select {
		case rev = <-woke:
		case <-time.After(time.Minute):
			t.Fatalf("following the standby: woke at %d, never at %d", rev, rev3)
		}
	}
	if err := sqlstore.MeasureLag(ctx, r); err != nil {
		t.Fatal(err)
	}
	if revs, secs := r.ReplicaLag(); revs != 0 || secs != 0 {
		t.Fatalf("caught up: lag %d revisions, %gs", revs, secs)
	}
	t.Logf("revisions %d, %d, %d", rev1, rev2, rev3)
}
