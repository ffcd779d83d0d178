package sqlstore

import (
	"context"
	"fmt"
	"slices"

	"gorm.io/gorm"
	"gorm.io/gorm/clause"
)

// Column sizes bound what a write may hold. MySQL's index key limit (3072
// bytes, 4 bytes a character) is what makes the unique key fit.
const (
	maxClusterLen   = 128
	maxGroupLen     = 128
	maxVersionLen   = 64
	maxResourceLen  = 128
	maxNamespaceLen = 64
	maxNameLen      = 253
	maxAttrKeyLen   = 317
	maxAttrValueLen = 512
	maxMemberRVLen  = 253
	maxUIDLen       = 64
	maxKindLen      = 128
	metaRevision    = "revision"
	metaCompacted   = "compacted"
	// metaFieldsDeclared is the version of the field declarations writes
	// index with; metaFieldsIndexed the version every row is indexed with,
	// which reads select by (see fields.go).
	metaFieldsDeclared = "fields_declared"
	metaFieldsIndexed  = "fields_indexed"
	// metaHistoryExpired is the revision up to which the history was
	// dropped: history reads below it answer TooOld (history.go).
	metaHistoryExpired = "history_expired"
	fieldsTable        = "panorama_fields"
	attrKindLabel      = "l"
	attrKindField      = "f"
	resourcesTable     = "resources"
	// legacyAttributesTable held the attribute rows, keys and values in
	// full, until migration 15 (dictionary.go).
	legacyAttributesTable = "attributes"
	attributesTable       = "object_attributes"
	attributeKeysTable    = "attribute_keys"
	attributeValuesTable  = "attribute_values"
	// metaDictionaryEpoch counts the sweeps of the dictionary that
	// deleted ids (sweepDictionary).
	metaDictionaryEpoch = "dictionary_epoch"
	eventsTable         = "events"
	metaTable           = "panorama_meta"
	historyTable        = "history"
	revisionTimesTable  = "revision_times"
	migrationsTable     = "panorama_schema_migrations"
)

var keyColumns = []column{
	{name: "cluster", typ: "s128"},
	{name: "api_group", typ: "s128"},
	{name: "version", typ: "s64"},
	{name: "resource", typ: "s128"},
	{name: "namespace", typ: "s64"},
	{name: "name", typ: "s253"},
}

// migrations are applied in order, once each; every statement is safe to
// run twice, so replicas starting together need no lock.
var migrations = []struct {
	version int64
	tables  []table
	// statements are further DDL of every database; each dialect's own
	// follow (dialect.migrations).
	statements []string
	// alterations add columns and indexes to existing tables.
	alterations []alteration
	// run, when set, is a step in Go, after the others.
	run func(s *Store, db *gorm.DB) error
}{{
	version: 1,
	tables: []table{
		resourcesV1,
		{
			// Labels and selectable fields, one row each, so selectors are
			// index lookups rather than scans of JSON.
			name: legacyAttributesTable,
			columns: []column{
				{name: "resource_revision", typ: "bigint"},
				{name: "kind", typ: "char1"},
				{name: "attr_key", typ: "s317"},
				{name: "attr_value", typ: "s512"},
			},
			primaryKey: []string{"resource_revision", "kind", "attr_key"},
			indexes: []index{
				{name: "attributes_lookup", columns: []string{"kind", "attr_key:190", "attr_value:190"}},
			},
		},
		{
			// The change log: the resourceVersion clients see is its revision.
			// prev_object is the state before the change, which lets a list be
			// served as of an older revision.
			name: eventsTable,
			columns: append(append([]column{{name: "revision", typ: "bigint"}, {name: "type", typ: "s16"}}, keyColumns...),
				column{name: "object", typ: "blob"},
				column{name: "prev_object", typ: "blob", nullable: true},
			),
			primaryKey: []string{"revision"},
			indexes: []index{
				{name: "events_resource", columns: []string{"api_group", "version", "resource", "revision"}},
			},
		},
		{
			name:       metaTable,
			columns:    []column{{name: "name", typ: "s64"}, {name: "value", typ: "bigint"}},
			primaryKey: []string{"name"},
		},
	},
}, {
	// MySQL's text compared by a NO PAD collation (dialect_mysql.go).
	version: 2,
}, {
	// A page at an older revision reads the log of its own key range only
	// (changedSince): by key, or by creation time for lists ordered by it,
	// which is the object's (its pre-image's, when there is one). Entries
	// logged before this version have none, and are read by every page
	// until compaction drops them.
	version: 3,
	alterations: []alteration{
		{table: eventsTable, column: &column{name: "created_at", typ: "bigint", nullable: true}},
		{table: eventsTable, index: &index{name: "events_key", columns: []string{"api_group", "version", "resource", "cluster", "namespace", "name", "revision"}}},
		{table: eventsTable, index: &index{name: "events_created", columns: []string{"api_group", "version", "resource", "created_at", "cluster", "namespace", "name"}}},
	},
}, {
	// A multi-valued field (images) has several rows of one key: seq
	// numbers them. The primary key cannot hold the value instead: with it,
	// MySQL's key would pass its 3072-byte limit.
	version: 4,
	tables: []table{{
		// The field declarations, one row a version (fields.go).
		name:       fieldsTable,
		columns:    []column{{name: "version", typ: "bigint"}, {name: "declarations", typ: "blob"}},
		primaryKey: []string{"version"},
	}},
	run: (*Store).rekeyAttributes,
}, {
	// The history of changes (history.go), kept past the log's compaction.
	version: 5,
	tables: []table{
		{
			// One row per compacted change: what turns the object after it
			// back into the one before (historyRow.Patch; for DELETED the
			// last state; nothing for ADDED), so that states are rebuilt
			// backwards from the current row or the log.
			name: historyTable,
			columns: append(append([]column{{name: "revision", typ: "bigint"}, {name: "type", typ: "s16"}}, keyColumns...),
				column{name: "created_at", typ: "bigint"},
				column{name: "committed_at", typ: "bigint"},
				column{name: "member_resource_version", typ: "s253"},
				column{name: "patch", typ: "blob", nullable: true},
			),
			primaryKey: []string{"revision"},
			indexes: []index{
				{name: "history_key", columns: []string{"api_group", "version", "resource", "cluster", "namespace", "name", "revision"}},
				{name: "history_created", columns: []string{"api_group", "version", "resource", "created_at", "cluster", "namespace", "name"}},
			},
		},
		{
			// One row per write group: its first revision and the wall
			// time it was written at (microseconds), which maps times to
			// revisions and back.
			name:       revisionTimesTable,
			columns:    []column{{name: "revision", typ: "bigint"}, {name: "committed_at", typ: "bigint"}},
			primaryKey: []string{"revision"},
			indexes:    []index{{name: "revision_times_committed", columns: []string{"committed_at"}}},
		},
	},
	// What was compacted before has no history: it starts at the mark.
	statements: []string{"INSERT INTO " + metaTable + " (name, value) SELECT '" + metaHistoryExpired + "', value FROM " + metaTable +
		" WHERE name = '" + metaCompacted + "' AND NOT EXISTS (SELECT 1 FROM " + metaTable + " WHERE name = '" + metaHistoryExpired + "')"},
}, {
	// The owner epoch of each cluster whose writes are fenced (fence.go).
	version: 8,
	tables: []table{{
		name:       ownersTable,
		columns:    []column{{name: "cluster", typ: "s128"}, {name: "epoch", typ: "bigint"}},
		primaryKey: []string{"cluster"},
	}},
}, {
	// The count summary (summary.go), filled from the rows there are.
	version: 9,
	tables: []table{{
		name: summaryTable,
		columns: []column{
			{name: "id", typ: "s64"},
			{name: "api_group", typ: "s128"},
			{name: "version", typ: "s64"},
			{name: "resource", typ: "s128"},
			{name: "cluster", typ: "s128"},
			{name: "namespace", typ: "s64"},
			{name: "kind", typ: "char1"},
			{name: "attr_key", typ: "s317"},
			{name: "attr_value", typ: "s512", nullable: true},
			{name: "n", typ: "bigint"},
		},
		primaryKey: []string{"id"},
	}},
	run: (*Store).fillSummary,
}, {
	// PostgreSQL's statistics of namespaces and names (dialect_postgres.go).
	version: 10,
}, {
	// PostgreSQL's objects kept in their rows (dialect_postgres.go).
	version: 11,
}, {
	// Version 1 indexed resources by uid, which no read looks up: the
	// owner filter goes from names to uids and from owner_uid to rows. A
	// member's uids are random, so each write of a row touched a page of
	// that index anywhere in it, a good share of the time of inserting a
	// row on PostgreSQL. Stores made since never had it.
	version:     12,
	alterations: []alteration{{table: resourcesTable, index: &index{name: "resources_uid"}, drop: true}},
}, {
	// PostgreSQL's statistics of attribute values (dialect_postgres.go).
	version: 13,
}, {
	// Per cluster, how far its history is forgotten and its Secrets'
	// states are rid of their contents (forget.go).
	version: 14,
	tables: []table{{
		name: clusterHistoryTable,
		columns: []column{
			{name: "cluster", typ: "s128"},
			{name: markForgotten, typ: "bigint"},
			{name: markSecretDataDropped, typ: "bigint"},
		},
		primaryKey: []string{"cluster"},
	}},
}, {
	// The attribute dictionary (dictionary.go): the attribute rows name
	// keys and values by id, and the legacy ones are converted.
	version: 15,
	tables: []table{
		{
			name:       attributeKeysTable,
			columns:    []column{{name: "id", typ: "bigint"}, {name: "kind", typ: "char1"}, {name: "name", typ: "s317"}},
			primaryKey: []string{"id"},
			indexes:    []index{{name: "attribute_keys_name", unique: true, columns: []string{"kind", "name"}}},
		},
		{
			name:       attributeValuesTable,
			columns:    []column{{name: "id", typ: "bigint"}, {name: "key_id", typ: "bigint"}, {name: "value", typ: "s512"}},
			primaryKey: []string{"id"},
			indexes:    []index{{name: "attribute_values_value", unique: true, columns: []string{"key_id", "value"}}},
		},
		{
			// A row's attributes are found by its object's id (named
			// resource_revision, the row's revision, until version 19), the
			// rows that have a key's values by the index. InnoDB's and
			// SQLite's entries end with the primary key, so that a
			// semi-join reads the index alone; PostgreSQL's, without the
			// object's id, deduplicate a common value's entries, a good
			// share of the attribute rows' bytes (BenchmarkBytesPerObject).
			name: attributesTable,
			// Ids are never assigned again, and values that never recur
			// (an Event's) take one each: a 32-bit id would run out.
			columns: []column{
				{name: "object_id", typ: "bigint"},
				{name: "key_id", typ: "bigint"},
				{name: "value_id", typ: "bigint"},
				{name: "seq", typ: "int"},
			},
			primaryKey: []string{"object_id", "key_id", "seq"},
			indexes:    []index{{name: "object_attributes_lookup", columns: []string{"key_id", "value_id"}}},
			clustered:  true,
		},
	},
	// Seeded here too for the sweeps of a store that migrates, then runs,
	// beside one that does not seed it yet.
	statements: []string{"INSERT INTO " + metaTable + " (name, value) SELECT '" + metaDictionaryEpoch + "', 0 FROM " + metaTable +
		" WHERE name = '" + metaRevision + "' AND NOT EXISTS (SELECT 1 FROM " + metaTable + " WHERE name = '" + metaDictionaryEpoch + "')"},
	run: (*Store).convertAttributes,
}, {
	// The log keeps pre-images against the next state, a bounded number of
	// a key's in a row, which each row counts (log.go).
	version:     16,
	alterations: []alteration{{table: resourcesTable, column: &deltaChainColumn}},
}, {
	// Keyword search (keywords.go). Stores made before fill it as they
	// reindex for the built-in fields' revision that came with it. Its
	// rows are found by their object's id (resource_revision, the row's
	// revision, until version 19).
	version: 17,
	tables: []table{{
		name:       keywordsTable,
		columns:    []column{{name: "object_id", typ: "bigint"}, {name: "words", typ: "text"}},
		primaryKey: []string{"object_id"},
		indexes:    []index{{name: keywordsIndex, text: true, columns: []string{"words"}}},
	}},
}, {
	// When each count summary cell's current period began (summary.go).
	// The cells there are have none: theirs began before.
	version: 18,
	alterations: []alteration{
		{table: summaryTable, column: &column{name: heldSinceColumn, typ: "bigint", nullable: true}},
		{table: summaryTable, column: &column{name: heldSinceAtColumn, typ: "bigint", nullable: true}},
	},
}, {
	// Rows keyed by their object (keyRowsByObject).
	version:     19,
	alterations: []alteration{{table: resourcesTable, column: &column{name: "object_id", typ: "bigint", nullable: true}}},
	run:         (*Store).keyRowsByObject,
}}

// resourcesV1 is the table of objects as version 1 made it: one row per
// live object, keyed by the revision that wrote it, until version 19
// keyed it by the object (resourcesByObject).
var resourcesV1 = table{
	name: resourcesTable,
	columns: append(append([]column{{name: "revision", typ: "bigint"}}, keyColumns...),
		column{name: "kind", typ: "s128"},
		column{name: "uid", typ: "s64"},
		column{name: "owner_uid", typ: "s64"},
		column{name: "created_at", typ: "bigint"},
		column{name: "member_resource_version", typ: "s253"},
		column{name: "object", typ: "blob"},
	),
	primaryKey: []string{"revision"},
	indexes: []index{
		{name: "resources_key", unique: true, columns: []string{"api_group", "version", "resource", "cluster", "namespace", "name"}},
		{name: "resources_namespace_name", columns: []string{"api_group", "version", "resource", "namespace", "name"}},
		{name: "resources_created", columns: []string{"api_group", "version", "resource", "created_at", "cluster", "namespace", "name"}},
		{name: "resources_name", columns: []string{"name"}},
		{name: "resources_owner", columns: []string{"owner_uid"}},
	},
}

// deltaChainColumn is the count of pre-images kept against the next state
// in a row (version 16, log.go).
var deltaChainColumn = column{name: "delta_chain", typ: "int", nullable: true}

// resourcesRevisionIndex finds a row by the revision that wrote it, as
// the log does (log.go), since rows are keyed by the object.
const resourcesRevisionIndex = "resources_revision"

// resourcesByObject is the table of objects as version 19 keys it: by
// the object's id, with a unique index of the revision that wrote the
// row, and the columns added since version 1.
func resourcesByObject() table {
	t := resourcesV1
	t.columns = append(append([]column{{name: "object_id", typ: "bigint"}}, resourcesV1.columns...), deltaChainColumn)
	t.primaryKey = []string{"object_id"}
	t.indexes = append(slices.Clone(resourcesV1.indexes), index{name: resourcesRevisionIndex, unique: true, columns: []string{"revision"}})
	return t
}

// attributesKey is the legacy attributes' primary key since migration 4.
const attributesKey = "PRIMARY KEY (resource_revision, kind, attr_key, seq)"

// rekeyAttributes adds seq to the attributes' primary key, unless that was
// done, by the dialect's statements in one transaction. Without the table,
// another store has gone on to the dictionary.
func (s *Store) rekeyAttributes(db *gorm.DB) error {
	return db.Transaction(func(tx *gorm.DB) error {
		if m := tx.Migrator(); !m.HasTable(legacyAttributesTable) || m.HasColumn(legacyAttributesTable, "seq") {
			return nil
		}
		for _, stmt := range s.dialect.rekeyAttributes {
			if err := tx.Exec(stmt).Error; err != nil {
				return err
			}
		}
		return nil
	})
}

// keyRowsByObject moves the stored rows from keys of the revision that
// wrote them to keys of their object (schema version 19): an update
// rewrote a row whole, its indexes' entries and its attribute and keyword
// rows, where now it rewrites what changed (BenchmarkUpdateChurn). Each
// row's object id is its revision, so the attribute and keyword rows keep
// their values; their column is renamed last, since that is what stops
// binaries of before. Each step is skipped once done, for a migration cut
// short, or made meanwhile by a replica on another Galera node.
func (s *Store) keyRowsByObject(db *gorm.DB) error {
	m := db.Migrator()
	if !m.HasIndex(resourcesTable, resourcesRevisionIndex) {
		filled, err := fillObjectIDs(db)
		if err != nil {
			return err
		}
		err = db.Transaction(func(tx *gorm.DB) error {
			// Holding the revision counter, where DDL is transactional, so
			// that a writer from before leaves no row without its id: those
			// it wrote since the fill, by the revision key, not a scan.
			if err := barrier(tx); err != nil {
				return err
			}
			if err := tx.Exec("UPDATE "+resourcesTable+" SET object_id = revision WHERE revision > ? AND object_id IS NULL", filled).Error; err != nil {
				return err
			}
			for _, stmt := range s.dialect.keyByObject(s.dialect) {
				if err := tx.Exec(stmt).Error; err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil && !m.HasIndex(resourcesTable, resourcesRevisionIndex) {
			return err
		}
	}
	return s.renameObjectIDs(db)
}

// fillObjectIDs sets each row's object id to its revision, a page of rows
// a statement, so that no transaction holds every row of a large table
// (a Galera node refuses a write set past 2 GB), and returns the last
// revision it filled: a row written later has a later one, since writers
// take revisions in the order they commit.
func fillObjectIDs(db *gorm.DB) (int64, error) {
	const page = 5000
	for after := int64(0); ; {
		var revs []int64
		if err := db.Table(resourcesTable).Where("revision > ?", after).Order("revision").Limit(page).Pluck("revision", &revs).Error; err != nil {
			return 0, err
		}
		if len(revs) == 0 {
			return after, nil
		}
		last := revs[len(revs)-1]
		if err := db.Exec("UPDATE "+resourcesTable+" SET object_id = revision WHERE revision > ? AND revision <= ? AND object_id IS NULL", after, last).Error; err != nil {
			return 0, err
		}
		after = last
	}
}

// renameObjectIDs names object_id the column of the attribute and keyword
// tables that a binary from before version 19 made, which named it
// resource_revision: migrations 9 and 15, run again or cut short by such
// a binary, find it under its new name too.
func (s *Store) renameObjectIDs(db *gorm.DB) error {
	m := db.Migrator()
	for _, t := range []string{attributesTable, keywordsTable} {
		if !m.HasTable(t) || !m.HasColumn(t, "resource_revision") {
			continue
		}
		stmt := s.dialect.renameColumn(t, "resource_revision", "object_id", s.dialect.types["bigint"])
		if err := db.Exec(stmt).Error; err != nil && m.HasColumn(t, "resource_revision") {
			return err
		}
	}
	return nil
}

// rowIDColumn is the column of resources whose values the attribute and
// keyword rows' object_id holds: the revision, until version 19 keyed the
// rows by object, when the two were one.
func rowIDColumn(db *gorm.DB) string {
	if db.Migrator().HasIndex(resourcesTable, resourcesRevisionIndex) {
		return "object_id"
	}
	return "revision"
}

// renameColumn is RENAME COLUMN, where the database has it.
func renameColumn(table, from, to, _ string) string {
	return "ALTER TABLE " + table + " RENAME COLUMN " + from + " TO " + to
}

// alteration adds a column or an index to an existing table, or drops an
// index.
type alteration struct {
	table  string
	column *column
	index  *index
	drop   bool
}

// alter makes a unless it was made before: MySQL and SQLite have no ADD
// COLUMN IF NOT EXISTS, nor MySQL DROP INDEX IF EXISTS. A replica making
// it at the same time fails ours, after which it is made.
func (s *Store) alter(db *gorm.DB, a alteration) error {
	m := db.Migrator()
	var made func() bool
	var stmt string
	switch c := a.column; {
	case a.drop:
		made = func() bool { return !m.HasIndex(a.table, a.index.name) }
		stmt = s.dialect.dropIndex(a.table, a.index.name)
	case c != nil:
		made = func() bool { return m.HasColumn(a.table, c.name) }
		stmt = "ALTER TABLE " + a.table + " ADD COLUMN " + s.dialect.columnDDL(*c)
	default:
		made = func() bool { return m.HasIndex(a.table, a.index.name) }
		stmt = fmt.Sprintf("CREATE INDEX %s ON %s (%s)", a.index.name, a.table, s.dialect.indexColumns(a.index.columns))
	}
	if made() {
		return nil
	}
	if err := db.Exec(stmt).Error; err != nil && !made() {
		return err
	}
	return nil
}

type metaRow struct {
	Name  string `gorm:"column:name;primaryKey"`
	Value int64  `gorm:"column:value"`
}

func (metaRow) TableName() string { return metaTable }

type migrationRow struct {
	Version int64 `gorm:"column:version;primaryKey;autoIncrement:false"`
}

func (migrationRow) TableName() string { return migrationsTable }

// migrate brings the schema up to date, holding the dialect's schema lock
// on one connection so that replicas starting together migrate in turn.
func (s *Store) migrate(ctx context.Context) error {
	return s.db.WithContext(ctx).Connection(func(conn *gorm.DB) error {
		db := conn.Session(&gorm.Session{}) // each statement on its own: conn is not a new session
		if s.dialect.lockSchema == "" {
			// SQLite has no lock to take: one transaction, whose first
			// statement writes, and so takes the file's write lock (or
			// waits for another store's, within the busy timeout), has
			// stores opening together migrate in turn. A migration that
			// drops a table (15) would otherwise fail another's statements
			// of it in between.
			if err := s.createMigrationsTable(db); err != nil {
				return err
			}
			return db.Transaction(func(tx *gorm.DB) error {
				if err := tx.Exec("DELETE FROM " + migrationsTable + " WHERE version < 0").Error; err != nil {
					return err
				}
				return s.migrateLocked(tx)
			})
		}
		var held int
		if err := db.Raw(s.dialect.lockSchema).Scan(&held).Error; err != nil || held != 1 {
			return fmt.Errorf("locking the schema for migration (held %d): %w", held, err)
		}
		defer db.Exec(s.dialect.unlockSchema)
		return s.migrateLocked(db)
	})
}

func (s *Store) createMigrationsTable(db *gorm.DB) error {
	for _, stmt := range s.dialect.ddl(table{name: migrationsTable, columns: []column{{name: "version", typ: "bigint"}}, primaryKey: []string{"version"}}) {
		if err := db.Exec(stmt).Error; err != nil {
			return fmt.Errorf("creating %s: %w", migrationsTable, err)
		}
	}
	return nil
}

func (s *Store) migrateLocked(db *gorm.DB) error {
	if err := s.createMigrationsTable(db); err != nil {
		return err
	}
	var applied []int64
	if err := db.Model(&migrationRow{}).Pluck("version", &applied).Error; err != nil {
		return err
	}
	done := map[int64]bool{}
	for _, v := range applied {
		done[v] = true
	}
	for _, m := range migrations {
		if done[m.version] {
			continue
		}
		var stmts []string
		for _, t := range m.tables {
			stmts = append(stmts, s.dialect.ddl(t)...)
		}
		stmts = append(stmts, m.statements...)
		stmts = append(stmts, s.dialect.migrations[m.version]...)
		for _, stmt := range stmts {
			if err := db.Exec(stmt).Error; err != nil {
				return fmt.Errorf("migration %d: %w", m.version, err)
			}
		}
		for _, a := range m.alterations {
			if err := s.alter(db, a); err != nil {
				return fmt.Errorf("migration %d: %w", m.version, err)
			}
		}
		if m.run != nil {
			if err := m.run(s, db); err != nil {
				return fmt.Errorf("migration %d: %w", m.version, err)
			}
		}
		if err := db.Clauses(clause.OnConflict{DoNothing: true}).Create(&migrationRow{Version: m.version}).Error; err != nil {
			return err
		}
	}
	seed := []metaRow{{Name: metaRevision}, {Name: metaCompacted}, {Name: metaFieldsDeclared}, {Name: metaFieldsIndexed}, {Name: metaHistoryExpired},
		{Name: metaSecretsRewritten}, {Name: metaDictionaryEpoch}}
	return db.Clauses(clause.OnConflict{DoNothing: true}).Create(&seed).Error
}
