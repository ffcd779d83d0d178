package sqlstore

import (
	"context"
	"time"

	"gorm.io/gorm"

	"github.com/panorama-io/panorama/storage"
)

// How readers in other processes learn of writes (storage.Log.Follow).
// Where the dialect pushes them (PostgreSQL, dialect_postgres.go), each
// write transaction notifies the readers, which learn of it at commit, in
// commit order. Where it cannot, a reader reads the revision counter, one
// primary-key row, every probe interval, and the log only when it moved;
// and where one process owns the database (SQLite), Changed wakes the
// reader at each write, and nothing is probed.
const (
	// revisionQuery has no parameters: MySQL's driver runs a query with
	// parameters as prepare, execute and close, three round trips.
	revisionQuery = "SELECT value FROM " + metaTable + " WHERE name = '" + metaRevision + "'"
)

var _ storage.Log = (*Store)(nil)

// pushes reports whether the database delivers notifications at commit:
// PostgreSQL does, but not to a session on a standby, which it refuses
// LISTEN.
func (s *Store) pushes() bool { return s.dialect.listen != nil && !s.standby }

// notifyInTx tells listeners, once tx commits, that the log reached rev.
// The write transaction calls it after the counter update: the counter's
// row lock orders the notifications as it orders the commits.
func (s *Store) notifyInTx(tx *gorm.DB, rev int64) error {
	if !s.pushes() {
		return nil
	}
	return s.dialect.notify(tx, rev)
}

// Follow implements storage.Log.
func (s *Store) Follow(ctx context.Context, from int64, probe time.Duration, wake func(int64)) {
	last := from
	moved := func(rev int64) {
		if rev > last {
			last = rev
			wake(rev)
		}
	}
	switch {
	case s.pushes():
		s.dialect.listen(ctx, s.db, moved)
	case probe > 0 && s.dialect.probeRevision:
		s.probe(ctx, probe, moved)
	}
}

// probe reads the revision every interval.
func (s *Store) probe(ctx context.Context, every time.Duration, moved func(int64)) {
	sqlDB, err := s.db.DB()
	if err != nil {
		return
	}
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		var rev int64
		// An error is left to the caller's poll, which reports it.
		if err := sqlDB.QueryRowContext(ctx, revisionQuery).Scan(&rev); err == nil {
			moved(rev)
		}
	}
}
