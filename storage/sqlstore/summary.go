package sqlstore

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"slices"
	"strings"

	"gorm.io/gorm"
	"gorm.io/gorm/clause"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/panorama-io/panorama/storage"
)

// The count summary: how many objects each resource has per cluster and
// namespace, and how many of them have each value of each label and field,
// kept up to date by the transactions that write the rows, so that a count
// reads a few rows per group instead of every object (count.go).
//
// A row is a cell of one scope:
//
//   - the scope is the resource and an attribute kind and key, or no
//     attribute (kind and key ""), whose cells count the objects;
//   - the cell is a cluster, a namespace and a value: the objects with
//     that value of the key (one per attribute row, as a GROUP BY of the
//     attribute join counts them), or, NULL, the objects that have the key
//     at all, so that those lacking it are the objects' cell minus this one.
//
// Its key, id, is a hash of the scope, then of the namespace, then of the
// cluster and value: one short column whatever the values' length (MySQL's
// index key limit forbids their own), which keeps the cells of a scope, and
// within it of a namespace, together, so that a count reads one range of
// the key per scope and namespace asked for. The values are stored beside
// it and compared on read.
//
// A label or field also has rollup cells, of a scope of their own
// (summaryRollup) and namespace "": the same counts summed over the
// namespaces, which a count that neither selects nor groups by namespace
// reads instead (a key with many values, images, has that many times fewer
// of them, and grouping all of a namespaced key's cells by a long value is
// what BenchmarkCount found slow on MariaDB).
//
// A cell that falls to 0 stays (a count leaves out the groups of 0), so
// that a writer does not delete cells that the next write recreates; the
// compactor deletes them (sweepSummary).
//
// A cell keeps when its current period began (storage.HeldSince): the
// revision and time of the write that took it from 0 to more, which an
// upsert sets only when it finds the cell at 0 (or inserts it), and
// leaves as it is while the cell holds objects. A cell counted without
// knowing when has none (NULL), as if its period began before the store
// kept track: counted by fillSummary; given objects by a reindex, which
// finds new values of rows written before; or taken from 0 by objects a
// list found (storage.Change.Listed), which may have held their values
// since before.

const summaryTable = "count_summary"

type summaryRow struct {
	ID        string  `gorm:"column:id;primaryKey"`
	Group     string  `gorm:"column:api_group"`
	Version   string  `gorm:"column:version"`
	Resource  string  `gorm:"column:resource"`
	Cluster   string  `gorm:"column:cluster"`
	Namespace string  `gorm:"column:namespace"`
	Kind      string  `gorm:"column:kind"`
	Key       string  `gorm:"column:attr_key"`
	Value     *string `gorm:"column:attr_value"`
	N         int64   `gorm:"column:n"`
	// HeldSince and HeldSinceAt are the revision and time (Unix
	// microseconds) the cell's current period began at; NULL when not known.
	HeldSince   *int64 `gorm:"column:held_since"`
	HeldSinceAt *int64 `gorm:"column:held_since_at"`
}

// The summary's columns of when a cell's period began.
const (
	heldSinceColumn   = "held_since"
	heldSinceAtColumn = "held_since_at"
)

func (summaryRow) TableName() string { return summaryTable }

// summaryScope is the id prefix of the cells of a resource's attribute
// kind and key ("" and "" for the objects' cells); summaryNamespace adds
// a namespace to it. 64 bits of hash each: a collision only makes a count
// read cells it then leaves out by their values. The cell's own hash has
// 128, as two cells whose ids collide would be counted as one.
func summaryScope(group, version, resource, kind, key string) string {
	return hashHex(8, group, version, resource, kind, key)
}

// summaryRollup is the id prefix of the rollup cells of a resource's
// attribute kind and key: the scope's parts and one more, so never a scope.
func summaryRollup(group, version, resource, kind, key string) string {
	return hashHex(8, group, version, resource, kind, key, "")
}

func summaryNamespace(scope, namespace string) string { return scope + hashHex(8, namespace) }

// hashHex is the first n bytes of the SHA-256 of parts, in hex. Texts hold
// no NUL (StorableText), which makes it a separator.
func hashHex(n int, parts ...string) string {
	sum := sha256.Sum256([]byte(strings.Join(parts, "\x00")))
	return hex.EncodeToString(sum[:n])
}

// prefixRange is the range of ids that start with prefix: ids are hex
// digits, which sort before "g".
func prefixRange(prefix string) (from, to string) { return prefix, prefix + "g" }

// summaryCells selects the cells of gvr whose ids begin with one of
// prefixes, a range of the key each, of clusters if any are named.
func summaryCells(tx *gorm.DB, gvr schema.GroupVersionResource, prefixes, clusters []string) *gorm.DB {
	ranges := make([]string, len(prefixes))
	args := make([]any, 0, 2*len(prefixes))
	for i, p := range prefixes {
		from, to := prefixRange(p)
		ranges[i] = "(id >= ? AND id < ?)"
		args = append(args, from, to)
	}
	db := tx.Table(summaryTable).Where("("+strings.Join(ranges, " OR ")+")", args...).
		Where("api_group = ? AND version = ? AND resource = ?", gvr.Group, gvr.Version, gvr.Resource)
	if len(clusters) > 0 {
		db = db.Where("cluster IN ?", clusters)
	}
	return db
}

// tally adds up the changes to the summary that a transaction's writes
// make, to apply them at its end in one statement per chunk of cells. It
// hashes the ids of the cells that changed only: an update's removal of
// the old row and addition of the new one cancel out in every cell but
// those of what it changed.
type tally struct {
	cells map[cell]int64
	// at is when the writes were committed (Unix microseconds), 0 when
	// they begin no period (see above); started the earliest revision
	// that added to each cell.
	at      int64
	started map[cell]int64
	// unknown are the revisions of rows whose values may be older than
	// their write: a cell at 0 that they add to begins no known period.
	unknown map[int64]bool
	// filling the summary afresh, perhaps before it had the columns of
	// periods (fillSummary): the counts alone. reindexing: the rows added
	// held their new values since before, so the cells they add to have
	// no known period, whatever they held.
	filling, reindexing bool
}

// cell is what a summary cell's id is the hash of.
type cell struct {
	group, version, resource, cluster, namespace string
	kind, key, value                             string
	// hasValue is false in the cell of the objects that have the key.
	hasValue bool
	// rollup is set in the cell's rollup, whose namespace is "".
	rollup bool
}

// add counts n objects of k, written at rev, in the cell of value of kind
// and key, and in its rollup cell if it is an attribute's, unless the
// summary keeps no cells of the key (storage.GroupBy.Summarized).
func (t *tally) add(k *KeyColumns, rev int64, kind, key string, value *string, n int64) {
	if kind != "" && !summarized(kind, key) {
		return
	}
	if t.cells == nil {
		t.cells, t.started = map[cell]int64{}, map[cell]int64{}
	}
	if t.unknown[rev] {
		rev = 0
	}
	c := cell{group: k.Group, version: k.Version, resource: k.Resource, cluster: k.Cluster, namespace: k.Namespace, kind: kind, key: key}
	if value != nil {
		c.value, c.hasValue = *value, true
	}
	t.count(c, rev, n)
	if kind != "" {
		c.namespace, c.rollup = "", true
		t.count(c, rev, n)
	}
}

// count adds n to c, written at rev (0 when its values may be older,
// which no later revision overrides).
func (t *tally) count(c cell, rev, n int64) {
	t.cells[c] += n
	if first, ok := t.started[c]; n > 0 && (!ok || rev < first) {
		t.started[c] = rev
	}
}

// row is the summary row of c, holding n, whose period would begin at
// revision since and time at (not when at is 0).
func (c *cell) row(scopes map[[5]string][2]string, n, since, at int64) summaryRow {
	s := [5]string{c.group, c.version, c.resource, c.kind, c.key}
	scope, ok := scopes[s]
	if !ok {
		scope = [2]string{summaryScope(s[0], s[1], s[2], s[3], s[4]), summaryRollup(s[0], s[1], s[2], s[3], s[4])}
		scopes[s] = scope
	}
	v := "\x00" // no value: distinct from every value, which holds no NUL
	var value *string
	if c.hasValue {
		v, value = "="+c.value, &c.value
	}
	prefix := scope[0]
	if c.rollup {
		prefix = scope[1]
	}
	row := summaryRow{ID: summaryNamespace(prefix, c.namespace) + hashHex(16, c.cluster, v), Group: c.group, Version: c.version,
		Resource: c.resource, Cluster: c.cluster, Namespace: c.namespace, Kind: c.kind, Key: c.key, Value: value, N: n}
	if at != 0 && since != 0 {
		row.HeldSince, row.HeldSinceAt = &since, &at
	}
	return row
}

// objects counts the objects of rows sign times (1 written, -1 removed).
func (t *tally) objects(rows map[int64]counted, sign int64) {
	for _, r := range rows {
		t.add(r.key, r.rev, "", "", nil, sign)
	}
}

// counted is a row as a tally counts it: its key, and the revision that
// wrote it (0 where no period begins: a fill, a removal).
type counted struct {
	key *KeyColumns
	rev int64
}

// attributes counts attrs, the attribute rows of rows (by object id), sign
// times: each in its value's cell, and each key of an object once in the
// key's cell.
func (t *tally) attributes(rows map[int64]counted, attrs []attributeRow, sign int64) {
	type objectKey struct {
		id        int64
		kind, key string
	}
	seen := make(map[objectKey]bool, len(attrs))
	for i := range attrs {
		a := &attrs[i]
		r, ok := rows[a.ObjectID]
		if !ok {
			continue // of no row: a join from the rows would not count it either
		}
		t.add(r.key, r.rev, a.Kind, a.Key, &a.Value, sign)
		if ok := (objectKey{a.ObjectID, a.Kind, a.Key}); !seen[ok] {
			seen[ok] = true
			t.add(r.key, r.rev, a.Kind, a.Key, nil, sign)
		}
	}
}

// apply writes the changed cells in id order (writers lock them in one
// order, so never each other's in turn): one upsert that adds each change
// per chunk, and begins the period of a cell it finds at 0. Cells that
// fall to 0 stay, for sweepSummary.
func (t *tally) apply(tx *gorm.DB, d *dialect) error {
	rows := make([]summaryRow, 0, len(t.cells))
	scopes := map[[5]string][2]string{}
	for c, n := range t.cells {
		if n != 0 {
			rows = append(rows, c.row(scopes, n, t.started[c], t.at))
		}
	}
	t.cells, t.started = nil, nil
	slices.SortFunc(rows, func(a, b summaryRow) int { return strings.Compare(a.ID, b.ID) })
	// In this order: MySQL's assignments see the ones before them, so the
	// period's read the count as the upsert found it.
	updates := clause.Set{
		{Column: clause.Column{Name: heldSinceColumn}, Value: gorm.Expr(fmt.Sprintf(d.keepPeriod, heldSinceColumn))},
		{Column: clause.Column{Name: heldSinceAtColumn}, Value: gorm.Expr(fmt.Sprintf(d.keepPeriod, heldSinceAtColumn))},
		{Column: clause.Column{Name: "n"}, Value: gorm.Expr(d.addExcluded)},
	}
	omit := []string{clause.Associations}
	switch {
	case t.filling:
		updates, omit = updates[2:], append(omit, heldSinceColumn, heldSinceAtColumn)
	case t.reindexing:
		updates[0].Value = gorm.Expr(fmt.Sprintf(d.forgetPeriod, heldSinceColumn))
		updates[1].Value = gorm.Expr(fmt.Sprintf(d.forgetPeriod, heldSinceAtColumn))
	}
	upsert := tx.Clauses(clause.OnConflict{Columns: []clause.Column{{Name: "id"}}, DoUpdates: updates})
	return inChunks(rows, d.insertRows, func(*summaryRow) int { return 256 }, func(chunk []summaryRow) error {
		return upsert.Omit(omit...).Create(chunk).Error
	})
}

// summarized reports whether the summary keeps cells of an attribute
// kind's key.
func summarized(kind, key string) bool {
	g := storage.GroupBy{Kind: storage.GroupLabel, Key: key}
	if kind == attrKindField {
		g.Kind = storage.GroupField
	}
	return g.Summarized()
}

// sweepSummary deletes the cells that fell to 0, a range of ids per
// statement in id order, like writers lock them. A writer that adds to a
// cell meanwhile either commits first, and the cell is no longer 0, or
// after, and inserts it again. It deletes the cells of keys the summary
// no longer keeps too (summarized), whatever they hold: those a store of
// an earlier version wrote, before or beside this one.
func sweepSummary(db *gorm.DB) error {
	unkept, args := []string{"n = 0"}, []any{}
	for _, g := range storage.PerObjectKeys() {
		kind, _ := attrKind(g)
		unkept = append(unkept, "(kind = ? AND attr_key = ?)")
		args = append(args, kind, g.Key)
	}
	for digit := range 16 {
		from, to := prefixRange(fmt.Sprintf("%x", digit))
		if err := db.Where("id >= ? AND id < ?", from, to).Where("("+strings.Join(unkept, " OR ")+")", args...).
			Delete(&summaryRow{}).Error; err != nil {
			return err
		}
	}
	return nil
}

// fillSummary counts the rows written before the summary was, holding the
// revision counter so that no write of this version runs meanwhile. It
// starts from an empty summary, so that it may run again.
func (s *Store) fillSummary(db *gorm.DB) error {
	const page = 5000
	// Before the transaction: MySQL commits before a rename.
	if err := s.renameObjectIDs(db); err != nil {
		return err
	}
	return db.Transaction(func(tx *gorm.DB) error {
		// Writing the counter's row first holds writers off on every
		// database: SQLite has no FOR UPDATE, and its transaction, had it
		// read first, could not then write while another store had
		// (SQLITE_BUSY, which no busy timeout waits out).
		if err := tx.Exec("UPDATE "+metaTable+" SET value = value WHERE name = ?", metaRevision).Error; err != nil {
			return err
		}
		// The summary came before the dictionary: filled again
		// (operations.md), it reads the dictionary's rows, by the column
		// of resources that they are found by (rowIDColumn).
		id := rowIDColumn(tx)
		attributes := func(tx *gorm.DB, after, last int64) ([]attributeRow, error) {
			return attributesOf(tx, "object_id > ? AND object_id <= ?", after, last)
		}
		if tx.Migrator().HasTable(legacyAttributesTable) {
			attributes = legacyAttributes
		}
		if err := tx.Where("1 = 1").Delete(&summaryRow{}).Error; err != nil {
			return err
		}
		t := tally{filling: true}
		for after := int64(-1); ; {
			var rows []resourceRow
			if err := tx.Select(id+" AS object_id", "cluster", "api_group", "version", "resource", "namespace").
				Where(id+" > ?", after).Order(id).Limit(page).Find(&rows).Error; err != nil {
				return err
			}
			if len(rows) == 0 {
				break
			}
			keys := make(map[int64]counted, len(rows))
			for i := range rows {
				keys[rows[i].ObjectID] = counted{key: &rows[i].KeyColumns}
			}
			last := rows[len(rows)-1].ObjectID
			// A row's attributes go with it: the range holds those of these rows only.
			attrs, err := attributes(tx, after, last)
			if err != nil {
				return err
			}
			t.objects(keys, 1)
			t.attributes(keys, attrs, 1)
			after = last
		}
		return t.apply(tx, s.dialect)
	})
}
