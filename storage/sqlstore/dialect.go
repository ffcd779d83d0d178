package sqlstore

import (
	"database/sql"
	"fmt"
	"strings"
)

// dialect is what differs between the databases beyond what gorm hides:
// column types with byte-order collation (so SQL and Go order strings
// alike, which keyset paging needs), index syntax, and transaction modes.
type dialect struct {
	name  string
	types map[string]string
	// collation of MySQL's text columns; empty elsewhere.
	collation string
	// tableOptions follow CREATE TABLE (...).
	tableOptions string
	// inlineIndexes puts indexes inside CREATE TABLE: MySQL has no
	// CREATE INDEX IF NOT EXISTS.
	inlineIndexes bool
	// prefixIndexes keeps MySQL's index key under its byte limit.
	prefixIndexes bool
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
	// in time that grows faster than their number: the 10,000 keys of 50
	// clusters' churn took it 2.3 s in statements of 500 keys in as many
	// lists, 0.7 s in statements of ten lists (BenchmarkUpdateChurn).
	lookupKeys, lookupLists int
	// moveAttributes rekeys the attribute rows that an update leaves as
	// they were to its new row, rather than deleting and inserting them.
	// That is cheaper only where no index of the table holds the key:
	// SQLite's lookup index holds the rowid. InnoDB's secondary index and
	// each of PostgreSQL's get a new entry for a moved row as for a new
	// one, and the update cost them more: in BenchmarkUpdateChurn, moving
	// took MariaDB and PostgreSQL 1.3 to 1.8 times as long as deleting and
	// inserting every row, SQLite a quarter.
	moveAttributes bool
	// addExcluded is the count of a summary cell that an upsert found,
	// plus the one it inserts (summary.go).
	addExcluded string
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
	// lockSchema takes a lock of the whole database for this session and
	// answers 1 once it is held; unlockSchema releases it. Replicas starting
	// together migrate one at a time: PostgreSQL's CREATE TABLE IF NOT
	// EXISTS is not atomic (two of them fail one with a unique violation on
	// pg_type), and MySQL's ALTERs are not either. SQLite has none: its
	// writes are serialized by the file.
	lockSchema, unlockSchema string
}

// postgresMaintained are the tables PostgreSQL's analyze and vacuum cover.
const postgresMaintained = "resources, attributes, events, history, " + summaryTable

var dialects = map[string]*dialect{
	"mysql": mysqlDialect("utf8mb4_nopad_bin"),
	"postgres": {
		name: "postgres",
		types: map[string]string{
			"bigint": "BIGINT", "blob": "BYTEA", "char1": `VARCHAR(1) COLLATE "C"`,
			"s16": `VARCHAR(16) COLLATE "C"`, "s64": `VARCHAR(64) COLLATE "C"`, "s128": `VARCHAR(128) COLLATE "C"`,
			"s253": `VARCHAR(253) COLLATE "C"`, "s317": `VARCHAR(317) COLLATE "C"`, "s512": `VARCHAR(512) COLLATE "C"`,
		},
		forUpdate:    " FOR UPDATE",
		insertRows:   500,
		insertArrays: true,
		lookupKeys:   keyChunk,
		lookupLists:  10,
		addExcluded:  summaryTable + ".n + excluded.n",
		rowValues:    true,
		contains:     func(c string) string { return "STRPOS(" + c + ", ?) > 0" },
		analyze:      "VACUUM (ANALYZE) " + postgresMaintained,
		vacuum:       "VACUUM " + postgresMaintained,
		estimateRows: "SELECT GREATEST(reltuples, 0)::bigint FROM pg_class WHERE oid = 'resources'::regclass",
		lockSchema:   "SELECT 1 FROM pg_advisory_lock(hashtext('panorama_schema'))",
		unlockSchema: "SELECT pg_advisory_unlock(hashtext('panorama_schema'))",
		readTx:       &sql.TxOptions{Isolation: sql.LevelRepeatableRead, ReadOnly: true},
		writeTx:      &sql.TxOptions{Isolation: sql.LevelReadCommitted},
	},
	"sqlite": {
		name: "sqlite",
		types: map[string]string{
			"bigint": "INTEGER", "blob": "BLOB", "char1": "TEXT",
			"s16": "TEXT", "s64": "TEXT", "s128": "TEXT", "s253": "TEXT", "s317": "TEXT", "s512": "TEXT",
		},
		contains:   func(c string) string { return "INSTR(" + c + ", ?) > 0" },
		rowValues:  true,
		insertRows: 500,
		// SQLite seeks a key whole only when a statement has one list of
		// names: given two, it reads the whole resource (3.54).
		lookupKeys:     keyChunk,
		lookupLists:    1,
		addExcluded:    summaryTable + ".n + excluded.n",
		moveAttributes: true,
	},
}

// mysqlDialect compares text by bytes with collation, which must be a NO PAD
// one: under a PAD SPACE collation such as utf8mb4_bin, "a" = "a ", so a
// selector would match values it does not name and the names "a" and "a "
// would be one key. MariaDB calls it utf8mb4_nopad_bin, MySQL 8 utf8mb4_0900_bin.
func mysqlDialect(collation string) *dialect {
	varchar := func(n int) string {
		return fmt.Sprintf("VARCHAR(%d) CHARACTER SET utf8mb4 COLLATE %s", n, collation)
	}
	return &dialect{
		name:      "mysql",
		collation: collation,
		types: map[string]string{
			"bigint": "BIGINT", "blob": "LONGBLOB", "char1": "CHAR(1)",
			"s16": varchar(16), "s64": varchar(64), "s128": varchar(128),
			"s253": varchar(253), "s317": varchar(317), "s512": varchar(512),
		},
		tableOptions:  " ENGINE=InnoDB ROW_FORMAT=DYNAMIC DEFAULT CHARSET=utf8mb4 COLLATE=" + collation,
		insertRows:    500,
		lookupKeys:    keyChunk,
		lookupLists:   keyChunk,
		addExcluded:   "n + VALUES(n)",
		inlineIndexes: true,
		prefixIndexes: true,
		forUpdate:     " FOR UPDATE",
		contains:      func(c string) string { return "LOCATE(?, " + c + ") > 0" },
		analyze:       "ANALYZE TABLE resources, attributes, events, " + summaryTable,
		clusterRanges: true,
		forceWalk:     true,
		probeEstimate: "SELECT COALESCE(MAX(table_rows), 0) FROM information_schema.tables WHERE table_schema = DATABASE() AND table_name = '" + resourcesTable + "'",
		lockSchema:    "SELECT GET_LOCK('panorama_schema', 300)",
		unlockSchema:  "SELECT RELEASE_LOCK('panorama_schema')",
		readTx:        &sql.TxOptions{Isolation: sql.LevelRepeatableRead, ReadOnly: true},
		writeTx:       &sql.TxOptions{Isolation: sql.LevelReadCommitted},
	}
}

// mysqlCollations are the NO PAD binary collations, preferred first.
var mysqlCollations = []string{"utf8mb4_nopad_bin", "utf8mb4_0900_bin"}

type column struct {
	name, typ string
	nullable  bool
}

type index struct {
	name   string
	unique bool
	// columns; "col:N" indexes only the first N characters on MySQL.
	columns []string
}

type table struct {
	name       string
	columns    []column
	primaryKey []string
	indexes    []index
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
