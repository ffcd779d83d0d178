package sqlstore_test

import (
	"context"
	"testing"
	"time"

	"github.com/panorama-io/panorama/storage"
	"github.com/panorama-io/panorama/storage/sqlstore"
	"github.com/panorama-io/panorama/storage/storagetest"
)

// TestFollow has one store follow the writes of another on the same
// database, as an API server follows the controller manager's: each write
// wakes it with its revision (PostgreSQL by notification, MySQL/MariaDB
// by the probe), and nothing wakes it while nobody writes. On PostgreSQL, a
// listening session that is killed is replaced, and wakes resume.
func TestFollow(t *testing.T) {
	storagetest.ForEach(t, func(t *testing.T, b storagetest.Backend) {
		if b.Name == "sqlite" {
			t.Skip("SQLite is not followed: one process owns its file, and Changed wakes its reader")
		}
		opts := b.Options(t)
		reader, writer := storagetest.OpenStore(t, opts), storagetest.OpenStore(t, opts)
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		wakes := make(chan int64, 100)
		done := make(chan struct{})
		go func() {
			defer close(done)
			reader.Follow(ctx, 0, 5*time.Millisecond, func(rev int64) { wakes <- rev })
		}()
		listener := int64(0)
		if b.Name == "postgres" {
			listener = waitListener(t, writer, 0)
		}

		// Many probes pass, or the listener checks in, with no write.
		select {
		case rev := <-wakes:
			t.Fatalf("woken with revision %d before any write", rev)
		case <-time.After(300 * time.Millisecond):
		}
		expectWake(t, wakes, writeOne(t, writer, "a"))
		expectWake(t, wakes, writeOne(t, writer, "b"))

		if b.Name == "postgres" {
			var killed bool
			if err := sqlstore.GormDB(writer).Raw("SELECT pg_terminate_backend(?)", listener).Scan(&killed).Error; err != nil || !killed {
				t.Fatalf("killing the listening session %d: %v (killed %v)", listener, err, killed)
			}
			waitListener(t, writer, listener)
			expectWake(t, wakes, writeOne(t, writer, "c"))
		}
		cancel()
		<-done
	})
}

// writeOne writes one new object from another connection than the
// reader's and returns its revision.
func writeOne(t *testing.T, s *sqlstore.Store, name string) int64 {
	t.Helper()
	rev, err := s.ForCluster("east", storage.Unfenced).Apply(context.Background(), podsGVR, []storage.Change{storage.Upsert(object("Pod", "ns", name, "1"))})
	if err != nil {
		t.Fatal(err)
	}
	return rev
}

func expectWake(t *testing.T, wakes <-chan int64, want int64) {
	t.Helper()
	select {
	case got := <-wakes:
		if got != want {
			t.Fatalf("woken with revision %d, want %d", got, want)
		}
	// Generous, yet under the listening session's 30 s check, whose read of
	// the revision must not stand in for a notification.
	case <-time.After(20 * time.Second):
		t.Fatalf("not woken by the write of revision %d", want)
	}
}

// waitListener waits until a listening session other than old is idle in
// this database, and returns its process id.
func waitListener(t *testing.T, s *sqlstore.Store, old int64) int64 {
	t.Helper()
	for range 300 {
		var pid int64
		err := sqlstore.GormDB(s).Raw(`SELECT pid FROM pg_stat_activity
			WHERE application_name = 'panorama-watch' AND datname = current_database() AND state = 'idle' AND pid <> ?`, old).
			Scan(&pid).Error
		if err != nil {
			t.Fatal(err)
		}
		if pid != 0 {
			return pid
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Fatal("no session listens for notifications")
	return 0
}
