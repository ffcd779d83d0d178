package sqlstore

import (
	"context"
	"database/sql"
	"fmt"
	"strings"

	"gorm.io/gorm"

	"github.com/panorama-io/panorama/storage"
)

// dialect is what differs between the databases beyond what gorm hides:
// how to open one, column types with byte-order collation (so SQL and Go
// order strings alike, which keyset paging needs), index syntax,
// transaction modes, the errors that mean a conflict, the schema changes
// only one database makes, and how readers learn of writes. Each
// database's value is in its own file (dialect_mysql.go,
// dialect_postgres.go, dialect_sqlite.go); the rest of the package asks
// the dialect, never the database's name.
type dialect struct {
	name string
	// dsnForm shows --storage-dsn's form for the database, in its help.
	dsnForm string
	// defaultDSN is the DSN when none is given; without one, a DSN is
	// required.
	defaultDSN string
	// open returns the gorm dialector of dsn.
	open func(dsn string) (gorm.Dialector, error)
	// oneConnection: the database has one writer, and a pool would only
	// turn that into busy errors.
	oneConnection bool
	// connected, where set, returns the dialect fitted to the server db
	// reached, once connected.
	connected func(ctx context.Context, db *gorm.DB) (*dialect, error)
	// conflict reports whether err, of this database's driver, is a
	// transaction rolled back whole for conflicting with another, which
	// may simply run again (conflict.go).
	conflict func(err error) bool
	// refused says why the database refused a write's values, if err, of
	// this database's driver, is such a refusal; else "" (refusal).
	refused func(err error) string

	types map[string]string
	// tableOptions follow CREATE TABLE (...).
	tableOptions string
	// clustered follows CREATE TABLE (...) of a table kept in the order of
	// its primary key (table.clustered), where that is an option.
	clustered string
	// inlineIndexes puts indexes inside CREATE TABLE: MySQL has no
	// CREATE INDEX IF NOT EXISTS.
	inlineIndexes bool
	// prefixIndexes keeps MySQL's index key under its byte limit.
	prefixIndexes bool
	// dropIndex is the statement that drops index of table.
	dropIndex func(table, index string) string
	// rekeyAttributes adds seq to the attributes' primary key
	// (attributesKey) in one transaction (schema.go, migration 4).
	rekeyAttributes []string
	// renameColumn renames a column from to to, whose type it restates
	// where the database needs that (MySQL before 8 and MariaDB before
	// 10.5 have no RENAME COLUMN).
	renameColumn func(table, from, to, typ string) string
	// keyByObject are the statements that key resources by object_id once
	// it is filled (schema version 19, resourcesByObject), in one
	// transaction where the database's DDL is transactional.
	keyByObject func(d *dialect) []string
	// migrations are the database's own statements of a schema version,
	// run after those of every database (schema.go).
	migrations map[int64][]string
	// lockSchema takes a lock of the whole database for this session and
	// answers 1 once it is held; unlockSchema releases it. Replicas starting
	// together migrate one at a time: PostgreSQL's CREATE TABLE IF NOT
	// EXISTS is not atomic (two of them fail one with a unique violation on
	// pg_type), and MySQL's ALTERs are not either. SQLite has none: its
	// writes are serialized by the file.
	lockSchema, unlockSchema string

	// forUpdate is appended to the revision counter read that serializes
	// writers; SQLite serializes writers by itself.
	forUpdate string
	// rowValues: the planner makes an index range of a row-value
	// comparison, (a, b) > (?, ?). See seek.
	rowValues bool
	// contains is a case-sensitive substring test of a column.
	contains func(column string) string
	// readTx gives a list one snapshot for its revision and its rows.
	readTx *sql.TxOptions
	// writeTx reads the latest committed rows once the counter is locked.
	writeTx *sql.TxOptions
	// insertRows bounds the rows of one multi-row INSERT.
	insertRows int
	// insertArrays inserts rows as arrays, one a column (arrays.go).
	insertArrays bool
	// lookupKeys bounds the whole keys one statement looks up, lookupLists
	// the lists of names of one cluster's namespace they are given as
	// (lookup.go). PostgreSQL plans each list as an index scan of its own,
	// in time that grows faster than their number: the keys of many
	// clusters' churn take it far longer in statements of as many lists
	// as keys than in statements of ten lists (BenchmarkUpdateChurn).
	// Joined from arrays in one plan, the keys were each looked up by
	// whatever index a misestimate chose, again and again: through
	// resources_namespace_name every cluster's copy
	// (TestWriteReadsOnlyItsKeys, with more namespaces than clusters), and
	// early in an initial sync through resources_created all of the
	// resource's rows (BenchmarkFleet, auto_explain).
	lookupKeys, lookupLists int
	// parenthesizedUnion: each SELECT of a UNION ALL may have an ORDER BY
	// and LIMIT of its own in parentheses. Without it (SQLite) each is a
	// derived table, which MariaDB would materialize, a temporary table
	// each (laterEntries).
	parenthesizedUnion bool
	// addExcluded is the count of a summary cell that an upsert found,
	// plus the one it inserts (summary.go); keepPeriod, of a column %s of
	// its period, the one it found while the cell held objects, else the
	// one it inserts; forgetPeriod, NULL when the upsert adds objects,
	// else the one it found.
	addExcluded, keepPeriod, forgetPeriod string
	// analyze refreshes planner statistics. PostgreSQL plans a selector on
	// a table it thinks empty as a nested loop over everything, until
	// autovacuum gets to it; after a large initial sync that is minutes.
	// MariaDB, until InnoDB recounts in the background, reads a page from
	// the end of the resource's rows rather than from its cursor.
	// PostgreSQL vacuums too: an index-only scan (a count's) reads the
	// rows of every page the visibility map does not mark all-visible,
	// which no page written since the last vacuum is; the vacuum reads
	// only those pages, and skips the indexes while few rows are dead.
	analyze string
	// vacuum makes the space of the rows deleted (replaced, compacted,
	// expired: the history's too) free for new ones, more often than
	// analyze runs (see vacuumShare); estimateRows is the objects stored,
	// as the last analyze counted them.
	vacuum, estimateRows string
	// probeEstimate, where set, estimates the rows of resources from the
	// statistics, for a page to choose how it tests attributes (pagePlan):
	// MariaDB plans their subqueries without regard to the page's LIMIT.
	probeEstimate string
	// forceWalk names the index a page that seeks is to walk (walkIndex).
	forceWalk bool
	// clusterRanges names the clusters of a page that selects namespaces
	// only, for the planner to read one range of each (see clusterRanges).
	clusterRanges bool

	// notify and listen, where set, push each commit's revision to the
	// readers of other processes (notify.go): notify in the write
	// transaction, listen in the reader until ctx ends, reporting the
	// revisions it learns of to moved.
	notify func(tx *gorm.DB, rev int64) error
	listen func(ctx context.Context, db *gorm.DB, moved func(rev int64))
	// probeRevision: readers of other processes read the revision every
	// probe interval where the database does not push it.
	probeRevision bool
	// readReplicas: reads may go to a streaming replica (replica.go).
	readReplicas bool

	// textIndex renders the statements that make index, a text index of
	// table's column, where it is not inline (MySQL's FULLTEXT KEY).
	textIndex func(table, index, column string) []string
	// keywordMatch selects the resources rows whose keyword document
	// (keywords.go) has the words of keywordQuery's text query, by the
	// text index.
	keywordMatch string
	keywordQuery func(keywords []storage.Keyword) string
	// keywordFind, where a page may probe keywords (pagePlan), is true of
	// a document that has the word ? takes, with the spaces around it
	// that keywordNeedle gives.
	keywordFind string
}

// knownDialects are the databases, the default first: the one list of
// them.
var knownDialects = []*dialect{sqliteDialect, mysqlDialect(mysqlCollations[0]), postgresDialect}

// dialects are the databases by their --storage name.
var dialects = byName(knownDialects...)

// dialectNames lists the --storage names, as "a, b or c".
func dialectNames() string {
	names := make([]string, len(knownDialects))
	for i, d := range knownDialects {
		names[i] = d.name
	}
	return strings.Join(names[:len(names)-1], ", ") + " or " + names[len(names)-1]
}

// dsnForms lists each database's --storage-dsn form, for its help.
func dsnForms() string {
	forms := make([]string, len(knownDialects))
	for i, d := range knownDialects {
		forms[i] = d.name + ": " + d.dsnForm
	}
	return strings.Join(forms, "; ")
}

func byName(ds ...*dialect) map[string]*dialect {
	m := make(map[string]*dialect, len(ds))
	for _, d := range ds {
		m[d.name] = d
	}
	return m
}

// readsReplicas reports whether the database named driver may be read
// from a streaming replica.
func readsReplicas(driver string) bool {
	d, ok := dialects[driver]
	return ok && d.readReplicas
}

type column struct {
	name, typ string
	nullable  bool
}

type index struct {
	name   string
	unique bool
	// text makes it the database's text index of its one column.
	text bool
	// columns; "col:N" indexes only the first N characters on MySQL.
	columns []string
}

type table struct {
	name       string
	columns    []column
	primaryKey []string
	indexes    []index
	// clustered keeps the rows in the order of the primary key, which
	// then needs no index of its own: SQLite keeps a table by its rowid
	// unless told, InnoDB always by its primary key, PostgreSQL never.
	clustered bool
}

// ddl renders t as statements that may run again without harm.
func (d *dialect) ddl(t table) []string {
	var b strings.Builder
	fmt.Fprintf(&b, "CREATE TABLE IF NOT EXISTS %s (", t.name)
	for _, c := range t.columns {
		b.WriteString(d.columnDDL(c) + ", ")
	}
	fmt.Fprintf(&b, "PRIMARY KEY (%s)", strings.Join(t.primaryKey, ", "))
	var stmts []string
	for _, ix := range t.indexes {
		cols := d.indexColumns(ix.columns)
		switch {
		case ix.text && d.inlineIndexes:
			fmt.Fprintf(&b, ", FULLTEXT KEY %s (%s)", ix.name, cols)
		case ix.text:
			stmts = append(stmts, d.textIndex(t.name, ix.name, cols)...)
		case d.inlineIndexes && ix.unique:
			fmt.Fprintf(&b, ", UNIQUE KEY %s (%s)", ix.name, cols)
		case d.inlineIndexes:
			fmt.Fprintf(&b, ", KEY %s (%s)", ix.name, cols)
		default:
			unique := ""
			if ix.unique {
				unique = "UNIQUE "
			}
			stmts = append(stmts, fmt.Sprintf("CREATE %sINDEX IF NOT EXISTS %s ON %s (%s)", unique, ix.name, t.name, cols))
		}
	}
	b.WriteString(")" + d.tableOptions)
	if t.clustered {
		b.WriteString(d.clustered)
	}
	return append([]string{b.String()}, stmts...)
}

func (d *dialect) columnDDL(c column) string {
	null := " NOT NULL"
	if c.nullable {
		null = " NULL"
	}
	return c.name + " " + d.types[c.typ] + null
}

func (d *dialect) indexColumns(cols []string) string {
	out := make([]string, len(cols))
	for i, c := range cols {
		name, prefix, hasPrefix := strings.Cut(c, ":")
		if hasPrefix && d.prefixIndexes {
			out[i] = name + "(" + prefix + ")"
		} else {
			out[i] = name
		}
	}
	return strings.Join(out, ", ")
}
