package sqlstore

import (
	"context"
	"database/sql"
	"errors"
	"strings"
	"time"

	"github.com/libtnb/sqlite"
	"gorm.io/gorm"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/panorama-io/panorama/storage"
)

// sqliteDialect is SQLite's. It is not probed for the revision: one
// process owns its file in every install (the all-in-one binary), where
// Changed wakes the reader at each write, and probing many times a second
// would cost the idle process for nothing.
var sqliteDialect = &dialect{
	name:          "sqlite",
	dsnForm:       "a file path (default " + DefaultSQLiteFile + ")",
	defaultDSN:    DefaultSQLiteFile,
	open:          openSQLite,
	oneConnection: true,
	refused:       sqliteRefused,
	types: map[string]string{
		"bigint": "INTEGER", "int": "INTEGER", "blob": "BLOB", "char1": "TEXT",
		"s16": "TEXT", "s64": "TEXT", "s128": "TEXT", "s253": "TEXT", "s317": "TEXT", "s512": "TEXT",
		"text": "TEXT",
	},
	textIndex: sqliteTextIndex,
	keywordMatch: resourcesTable + ".object_id IN (SELECT rowid FROM " + keywordsIndex +
		" WHERE " + keywordsIndex + " MATCH ?)",
	keywordQuery: func(keywords []storage.Keyword) string { return keywordTerms(keywords, "*", " ") },
	dropIndex:    func(_, index string) string { return "DROP INDEX " + index },
	// SQLite cannot change a primary key: the table is copied.
	rekeyAttributes: []string{
		"CREATE TABLE attributes_rekeyed (resource_revision INTEGER NOT NULL, kind TEXT NOT NULL, attr_key TEXT NOT NULL, " +
			"attr_value TEXT NOT NULL, seq INTEGER NOT NULL DEFAULT 0, " + attributesKey + ")",
		"INSERT INTO attributes_rekeyed (resource_revision, kind, attr_key, attr_value) SELECT resource_revision, kind, attr_key, attr_value FROM " + legacyAttributesTable,
		"DROP TABLE " + legacyAttributesTable,
		"ALTER TABLE attributes_rekeyed RENAME TO " + legacyAttributesTable,
		"CREATE INDEX attributes_lookup ON " + legacyAttributesTable + " (kind, attr_key, attr_value)",
	},
	renameColumn: renameColumn,
	keyByObject:  sqliteKeyByObject,
	contains:     func(c string) string { return "INSTR(" + c + ", ?) > 0" },
	rowValues:    true,
	insertRows:   500,
	// SQLite seeks a key whole only when a statement has one list of
	// names: given two, it reads the whole resource (3.54).
	lookupKeys:   keyChunk,
	lookupLists:  1,
	addExcluded:  summaryTable + ".n + excluded.n",
	keepPeriod:   "CASE WHEN " + summaryTable + ".n > 0 THEN " + summaryTable + ".%[1]s ELSE excluded.%[1]s END",
	forgetPeriod: "CASE WHEN excluded.n > 0 THEN NULL ELSE " + summaryTable + ".%[1]s END",
	clustered:    " WITHOUT ROWID",
}

// sqliteKeyByObject copies resources into a table keyed by object_id,
// SQLite's only way to change a primary key. The object's id becomes the
// rowid, which every index's entries end with, as they did with the
// revision: a probe of a row's attributes reads it from the index, not
// from the row, where a column added after the object lies past its
// overflow pages.
func sqliteKeyByObject(d *dialect) []string {
	const old = resourcesTable + "_by_revision"
	stmts := []string{"ALTER TABLE " + resourcesTable + " RENAME TO " + old}
	for _, ix := range resourcesV1.indexes {
		stmts = append(stmts, "DROP INDEX "+ix.name)
	}
	t := resourcesByObject()
	stmts = append(stmts, d.ddl(t)...)
	columns := make([]string, len(t.columns))
	for i, c := range t.columns {
		columns[i] = c.name
	}
	list := strings.Join(columns, ", ")
	return append(stmts, "INSERT INTO "+resourcesTable+" ("+list+") SELECT "+list+" FROM "+old, "DROP TABLE "+old)
}

// sqliteTextIndex makes index an FTS5 table of table's column that reads
// the documents from table (external content, not a copy), keyed by its
// rowid, the integer primary key, which triggers keep in step with every
// insert and delete (rows are never updated). It keeps no positions
// (detail=none): a query is words and prefixes, never a phrase.
func sqliteTextIndex(table, index, column string) []string {
	return []string{
		"CREATE VIRTUAL TABLE IF NOT EXISTS " + index + " USING fts5(" + column + ", content='" + table + "', content_rowid='rowid', detail=none)",
		"CREATE TRIGGER IF NOT EXISTS " + index + "_insert AFTER INSERT ON " + table +
			" BEGIN INSERT INTO " + index + " (rowid, " + column + ") VALUES (new.rowid, new." + column + "); END",
		"CREATE TRIGGER IF NOT EXISTS " + index + "_delete AFTER DELETE ON " + table +
			" BEGIN INSERT INTO " + index + " (" + index + ", rowid, " + column + ") VALUES ('delete', old.rowid, old." + column + "); END",
	}
}

// sqliteTooBig is SQLITE_TOOBIG, the primary result code of a string or
// blob larger than SQLite takes.
const sqliteTooBig = 18

// sqlitePrimaryCode is the primary result code of err, 0 when it is not
// SQLite's.
func sqlitePrimaryCode(err error) int {
	var lite interface{ Code() int } // modernc.org/sqlite's *Error
	if errors.As(err, &lite) {
		return lite.Code() & 0xff
	}
	return 0
}

// sqliteRefused: SQLITE_TOOBIG.
func sqliteRefused(err error) string {
	if sqlitePrimaryCode(err) == sqliteTooBig {
		return refusedSize
	}
	return ""
}

// openSQLite opens the file: WAL lets readers run beside the writer; the
// busy timeout covers another process holding the file. Text is never read
// as a time (the dialector asks for it by default): it is members' strings.
// WAL is a property of the file, so it is set once, before the pool opens.
func openSQLite(file string) (gorm.Dialector, error) {
	if err := useWAL(file); err != nil {
		return nil, err
	}
	return sqlite.Open(file + "?" + sqliteBusyTimeout + "&_pragma=synchronous(NORMAL)&_texttotime=0&_inttotime=0"), nil
}

const sqliteBusyTimeout = "_pragma=busy_timeout(10000)"

// sqliteBusy is SQLITE_BUSY.
const sqliteBusy = 5

// useWAL switches file to WAL. Switching takes the file's exclusive lock,
// and when two openers both hold the shared lock SQLite answers one of them
// "busy" at once rather than call its busy handler (it would deadlock), so
// the switch is retried for as long as the busy timeout would have waited
// (TestConcurrentMigrations).
func useWAL(file string) error {
	db, err := sql.Open(sqlite.DriverName, file+"?"+sqliteBusyTimeout)
	if err != nil {
		return err
	}
	defer func() { _ = db.Close() }()
	var busy error
	err = wait.PollUntilContextTimeout(context.Background(), 10*time.Millisecond, 10*time.Second, true, func(ctx context.Context) (bool, error) {
		_, err := db.ExecContext(ctx, "PRAGMA journal_mode=WAL")
		if sqlitePrimaryCode(err) == sqliteBusy {
			busy = err
			return false, nil
		}
		return true, err
	})
	if wait.Interrupted(err) && busy != nil {
		return busy
	}
	return err
}
