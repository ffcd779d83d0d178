package sqlstore

import (
	"context"
	"errors"
	"log"
	"strconv"
	"time"

	"github.com/jackc/pgx/v5"
	"gorm.io/driver/postgres"
	"gorm.io/gorm"

	"github.com/panorama-io/panorama/storage"
)

// How readers in other processes learn of writes (storage.Log.Follow).
// PostgreSQL pushes them: each write transaction notifies notifyChannel
// with its revision, which PostgreSQL delivers at commit, in commit order,
// to every session that listens. MySQL/MariaDB cannot push, so a reader
// reads the revision counter, one primary-key row, every probe interval,
// and the log only when it moved. SQLite is not probed: one process owns
// its file in every install (the all-in-one binary), where Changed wakes
// the reader at each write, and 40 probes a second would cost the idle
// process 2% of a core for nothing.
const (
	notifyChannel = "panorama_revision"
	// listenerName is the listening session's application_name, which
	// names it in pg_stat_activity.
	listenerName = "panorama-watch"
	// revisionQuery has no parameters: MySQL's driver runs a query with
	// parameters as prepare, execute and close, three round trips.
	revisionQuery = "SELECT value FROM " + metaTable + " WHERE name = '" + metaRevision + "'"
	// listenCheck is how long the listening session may stay silent before
	// it reads the revision, which finds a dead connection that TCP would
	// not report for minutes, and any commit it missed.
	listenCheck = 30 * time.Second
	// Reconnects of the listening session back off between these; the
	// caller's poll serves meanwhile.
	minReconnect = 250 * time.Millisecond
	maxReconnect = 10 * time.Second
)

var _ storage.Log = (*Store)(nil)

// pushes reports whether the database delivers notifications at commit:
// PostgreSQL does, but not to a session on a standby, which it refuses
// LISTEN.
func (s *Store) pushes() bool { return s.dialect.name == "postgres" && !s.standby }

// notifyInTx tells listeners, once tx commits, that the log reached rev.
// The write transaction calls it after the counter update: the counter's
// row lock orders the notifications as it orders the commits.
func (s *Store) notifyInTx(tx *gorm.DB, rev int64) error {
	if !s.pushes() {
		return nil
	}
	return tx.Exec("SELECT pg_notify(?, ?)", notifyChannel, strconv.FormatInt(rev, 10)).Error
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
		s.listen(ctx, moved)
	case probe > 0 && s.dialect.name != "sqlite":
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

// listen holds one session that listens for notifications, reconnecting
// when it fails.
func (s *Store) listen(ctx context.Context, moved func(int64)) {
	cfg, err := pgx.ParseConfig(s.db.Dialector.(*postgres.Dialector).DSN)
	if err != nil {
		log.Printf("parsing the PostgreSQL DSN for notifications: %v; polling instead", err)
		return
	}
	cfg.RuntimeParams["application_name"] = listenerName
	wait := minReconnect
	for {
		err := listenOnce(ctx, cfg, moved, func() { wait = minReconnect })
		if ctx.Err() != nil {
			return
		}
		log.Printf("listening for changes: %v; reconnecting in %s, polling meanwhile", err, wait)
		select {
		case <-ctx.Done():
			return
		case <-time.After(wait):
		}
		wait = min(2*wait, maxReconnect)
	}
}

// listenOnce connects, listens, and reports notifications until the
// session fails or ctx ends. Commits while no session listened are found
// by reading the revision once listening.
func listenOnce(ctx context.Context, cfg *pgx.ConnConfig, moved func(int64), listening func()) error {
	conn, err := pgx.ConnectConfig(ctx, cfg)
	if err != nil {
		return err
	}
	defer conn.Close(context.Background())
	if _, err := conn.Exec(ctx, "LISTEN "+notifyChannel); err != nil {
		return err
	}
	listening()
	for {
		var rev int64
		if err := conn.QueryRow(ctx, revisionQuery).Scan(&rev); err != nil {
			return err
		}
		moved(rev)
		if err := waitNotifications(ctx, conn, moved); err != nil {
			return err
		}
	}
}

// waitNotifications reports notifications until listenCheck passes without
// one (nil) or the session fails.
func waitNotifications(ctx context.Context, conn *pgx.Conn, moved func(int64)) error {
	for {
		waitCtx, cancel := context.WithTimeout(ctx, listenCheck)
		n, err := conn.WaitForNotification(waitCtx)
		cancel()
		switch {
		case ctx.Err() != nil:
			return ctx.Err()
		case errors.Is(err, context.DeadlineExceeded):
			return nil
		case err != nil:
			return err
		}
		// Another payload is not ours: nothing to read.
		if rev, err := strconv.ParseInt(n.Payload, 10, 64); err == nil {
			moved(rev)
		}
	}
}
