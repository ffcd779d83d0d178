package sqlstore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/stdlib"
	"gorm.io/driver/postgres"
	"gorm.io/gorm"
	"k8s.io/klog/v2"

	"github.com/panorama-io/panorama/storage"
)

// postgresMaintained are the tables PostgreSQL's analyze and vacuum cover.
const postgresMaintained = "resources, " + attributesTable + ", " + attributeValuesTable + ", " + keywordsTable + ", events, history, " + summaryTable

var postgresDialect = &dialect{
	name:     "postgres",
	dsnForm:  "host=... user=... dbname=... or postgres://...",
	open:     openPostgres,
	conflict: postgresConflict,
	refused:  postgresRefused,
	types: map[string]string{
		"bigint": "BIGINT", "int": "INTEGER", "blob": "BYTEA", "char1": `VARCHAR(1) COLLATE "C"`,
		"s16": `VARCHAR(16) COLLATE "C"`, "s64": `VARCHAR(64) COLLATE "C"`, "s128": `VARCHAR(128) COLLATE "C"`,
		"s253": `VARCHAR(253) COLLATE "C"`, "s317": `VARCHAR(317) COLLATE "C"`, "s512": `VARCHAR(512) COLLATE "C"`,
		"text": "TEXT",
	},
	// The simple configuration takes each word as it is: no stemming, no
	// stop words.
	textIndex: func(table, index, column string) []string {
		return []string{"CREATE INDEX IF NOT EXISTS " + index + " ON " + table + " USING gin (to_tsvector('simple', " + column + "))"}
	},
	keywordMatch: resourcesTable + ".object_id IN (SELECT object_id FROM " + keywordsTable +
		" WHERE to_tsvector('simple', words) @@ to_tsquery('simple', ?))",
	keywordQuery: func(keywords []storage.Keyword) string { return keywordTerms(keywords, ":*", " & ") },
	// Without waiting for the table's exclusive lock, behind which every
	// read and write of replicas still serving would queue.
	dropIndex: func(_, index string) string { return "DROP INDEX CONCURRENTLY IF EXISTS " + index },
	rekeyAttributes: []string{
		"ALTER TABLE " + legacyAttributesTable + " ADD COLUMN seq INTEGER NOT NULL DEFAULT 0, DROP CONSTRAINT attributes_pkey, ADD " + attributesKey,
	},
	renameColumn: renameColumn,
	keyByObject: func(*dialect) []string {
		return []string{
			"ALTER TABLE " + resourcesTable + " ALTER COLUMN object_id SET NOT NULL, DROP CONSTRAINT resources_pkey, ADD PRIMARY KEY (object_id)",
			"CREATE UNIQUE INDEX " + resourcesRevisionIndex + " ON " + resourcesTable + " (revision)",
		}
	},
	migrations: map[int64][]string{
		// PostgreSQL takes a namespace and a name for independent, so that
		// every cluster's copy of a key seems to be one row, and a write's
		// lookup of its keys (existing) reads them through
		// resources_namespace_name, all clusters' copies of each, rather
		// than its own through resources_key. Told that the name determines
		// the namespace, it estimates a key of resources_namespace_name at a
		// row per cluster. Statistics are gathered by the next ANALYZE: now,
		// so that a store already large plans by them from the start.
		10: {
			"CREATE STATISTICS IF NOT EXISTS resources_name_namespace (dependencies) ON namespace, name FROM " + resourcesTable,
			"ANALYZE " + resourcesTable,
		},
		// PostgreSQL moves a value out of its row (TOAST) once the row
		// passes 2 KB, in chunks of up to a quarter of a page: a compressed
		// pod a little over 2 KB became a full chunk and a small one, and a
		// chunk index beside. Kept in its row up to a page (rows written
		// from now on), such pods fill a page as well, with no chunk index
		// (BenchmarkBytesPerObject). The log's pre-images stay out of their
		// rows, which the watch's tail reads without them.
		11: {"ALTER TABLE " + resourcesTable + " SET (toast_tuple_target = 8160)"},
		// PostgreSQL takes an attribute row's kind, key and value for
		// independent, and multiplies their shares: it estimated a label
		// that a quarter of the pods have at a small fraction of its rows.
		// A page from the middle of the pods requiring it and another label
		// it then planned as a hash join of all their matches, sorted. Told
		// the most common values of the three together, it walks the page's
		// index and stops at its limit (BenchmarkCachedSearch).
		13: {
			"CREATE STATISTICS IF NOT EXISTS attributes_values (mcv) ON kind, attr_key, attr_value FROM " + legacyAttributesTable,
			"ANALYZE " + legacyAttributesTable,
		},
		// The same of the attribute rows by the dictionary's ids.
		15: {
			"CREATE STATISTICS IF NOT EXISTS object_attributes_values (mcv) ON key_id, value_id FROM " + attributesTable,
		},
	},
	lockSchema:         "SELECT 1 FROM pg_advisory_lock(hashtext('panorama_schema'))",
	unlockSchema:       "SELECT pg_advisory_unlock(hashtext('panorama_schema'))",
	forUpdate:          " FOR UPDATE",
	rowValues:          true,
	contains:           func(c string) string { return "STRPOS(" + c + ", ?) > 0" },
	readTx:             &sql.TxOptions{Isolation: sql.LevelRepeatableRead, ReadOnly: true},
	writeTx:            &sql.TxOptions{Isolation: sql.LevelReadCommitted},
	insertRows:         500,
	insertArrays:       true,
	lookupKeys:         keyChunk,
	lookupLists:        10,
	parenthesizedUnion: true,
	addExcluded:        summaryTable + ".n + excluded.n",
	keepPeriod:         "CASE WHEN " + summaryTable + ".n > 0 THEN " + summaryTable + ".%[1]s ELSE excluded.%[1]s END",
	forgetPeriod:       "CASE WHEN excluded.n > 0 THEN NULL ELSE " + summaryTable + ".%[1]s END",
	analyze:            "VACUUM (ANALYZE) " + postgresMaintained,
	vacuum:             "VACUUM " + postgresMaintained,
	estimateRows:       "SELECT GREATEST(reltuples, 0)::bigint FROM pg_class WHERE oid = 'resources'::regclass",
	notify:             postgresNotify,
	listen:             postgresListen,
	// A standby refuses LISTEN: its readers probe.
	probeRevision: true,
	readReplicas:  true,
}

func openPostgres(dsn string) (gorm.Dialector, error) {
	cfg, err := pgx.ParseConfig(dsn)
	if err != nil {
		return nil, fmt.Errorf("postgres: %w", err)
	}
	return postgres.New(postgres.Config{DSN: dsn, Conn: stdlib.OpenDB(*cfg, stdlib.OptionAfterConnect(customPlans))}), nil
}

// customPlans has PostgreSQL plan each execution of a statement for its
// parameters. pgx prepares every statement, and from the sixth execution
// on PostgreSQL may keep a generic plan, made for any parameters: for a
// page that requires a label on a quarter of the pods, one estimated a few
// hundred matches, read all of them and sorted them, where the plan for
// the label at hand walks the page's index and stops at its limit.
// Planning a statement costs far less.
func customPlans(ctx context.Context, conn *pgx.Conn) error {
	_, err := conn.Exec(ctx, "SET plan_cache_mode = force_custom_plan")
	return err
}

// postgresRefused: invalid byte sequence (22021) or unsupported Unicode
// escape (22P05); program_limit_exceeded (54000).
func postgresRefused(err error) string {
	var pg *pgconn.PgError
	if !errors.As(err, &pg) {
		return ""
	}
	switch pg.Code {
	case "22021", "22P05":
		return refusedText
	case "54000":
		return refusedSize
	}
	return ""
}

// postgresConflict: serialization_failure, deadlock_detected.
func postgresConflict(err error) bool {
	var pg *pgconn.PgError
	return errors.As(err, &pg) && (pg.Code == "40001" || pg.Code == "40P01")
}

// PostgreSQL pushes the revisions: each write transaction notifies
// notifyChannel with its revision, which PostgreSQL delivers at commit, in
// commit order, to every session that listens.
const (
	notifyChannel = "panorama_revision"
	// listenerName is the listening session's application_name, which
	// names it in pg_stat_activity.
	listenerName = "panorama-watch"
	// listenCheck is how long the listening session may stay silent before
	// it reads the revision, which finds a dead connection that TCP would
	// not report for minutes, and any commit it missed.
	listenCheck = 30 * time.Second
	// Reconnects of the listening session back off between these; the
	// caller's poll serves meanwhile.
	minReconnect = 250 * time.Millisecond
	maxReconnect = 10 * time.Second
)

func postgresNotify(tx *gorm.DB, rev int64) error {
	return tx.Exec("SELECT pg_notify(?, ?)", notifyChannel, strconv.FormatInt(rev, 10)).Error
}

// postgresListen holds one session that listens for notifications,
// reconnecting when it fails.
func postgresListen(ctx context.Context, db *gorm.DB, moved func(int64)) {
	logger := klog.FromContext(ctx)
	cfg, err := pgx.ParseConfig(db.Dialector.(*postgres.Dialector).DSN)
	if err != nil {
		logger.Error(err, "Parsing the DSN for notifications failed; polling instead")
		return
	}
	cfg.RuntimeParams["application_name"] = listenerName
	wait := minReconnect
	for {
		err := listenOnce(ctx, cfg, moved, func() { wait = minReconnect })
		if ctx.Err() != nil {
			return
		}
		logger.Error(err, "Listening for changes failed; polling meanwhile", "retryIn", wait)
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
