package storagetest

import (
	"database/sql"
	"testing"
	"time"

	"github.com/panorama-io/panorama/storage/sqlstore"
)

// LockWaits is what WatchLockWaits saw: the longest a statement waited for
// a lock, and the most sessions waiting at once.
type LockWaits struct {
	Longest     time.Duration
	MostWaiting int
}

// WatchLockWaits samples, every 10 ms until the returned stop is called,
// the lock waits of the database opts reach, from a connection of its own:
// the sessions waiting for a lock, and how long the statement that waits
// has run (MariaDB: INNODB_TRX in LOCK WAIT; PostgreSQL: pg_stat_activity's
// wait event). SQLite has no such view: its figures stay zero.
func WatchLockWaits(t testing.TB, opts sqlstore.Options) (stop func() LockWaits) {
	t.Helper()
	driver := map[string]string{"mysql": "mysql", "postgres": "pgx"}[opts.Driver]
	if driver == "" {
		return func() LockWaits { return LockWaits{} }
	}
	db, err := sql.Open(driver, opts.DSN)
	if err != nil {
		t.Fatal(err)
	}
	var name, query string
	if err := db.QueryRow(map[string]string{"mysql": "SELECT DATABASE()", "postgres": "SELECT current_database()"}[opts.Driver]).Scan(&name); err != nil {
		t.Fatal(err)
	}
	switch opts.Driver {
	case "mysql":
		query = `SELECT COALESCE(MAX(p.TIME_MS), 0), COUNT(*) FROM information_schema.INNODB_TRX t
			JOIN information_schema.PROCESSLIST p ON p.ID = t.trx_mysql_thread_id WHERE t.trx_state = 'LOCK WAIT' AND p.DB = ?`
	case "postgres":
		// Not pg_locks' waitstart: a row lock's waiters all wake when it
		// is released and wait again from then on.
		query = `SELECT COALESCE(1000 * EXTRACT(EPOCH FROM MAX(clock_timestamp() - query_start)), 0), COUNT(*) FROM pg_stat_activity
			WHERE wait_event_type = 'Lock' AND datname = $1`
	}
	stopped, done := make(chan struct{}), make(chan LockWaits)
	go func() {
		defer func() { _ = db.Close() }()
		var w LockWaits
		for {
			var ms float64
			var n int
			if err := db.QueryRow(query, name).Scan(&ms, &n); err != nil {
				t.Error(err)
			}
			wait := time.Duration(ms * float64(time.Millisecond)).Round(time.Millisecond)
			w.Longest, w.MostWaiting = max(w.Longest, wait), max(w.MostWaiting, n)
			select {
			case <-stopped:
				done <- w
				return
			case <-time.After(10 * time.Millisecond):
			}
		}
	}()
	return func() LockWaits {
		close(stopped)
		return <-done
	}
}
