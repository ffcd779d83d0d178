package sqlstore

import (
	"cmp"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"

	"gorm.io/gorm"
	"gorm.io/gorm/clause"
)

// The attribute dictionary stores each label or field key, with its kind,
// once in attributeKeysTable, and each value of a key once in
// attributeValuesTable; an object's attribute rows (attributesTable) name
// them by id. Most values repeat across objects (a restart policy, a node,
// an image, an app label), and the rows and their index held each key
// and value in full, several times over: the attribute rows outweighed
// the objects they index (BenchmarkBytesPerObject).
//
// Ids are assigned by writers holding the revision counter's lock, the
// next after the largest, so that assigning needs nothing any database
// lacks. A writer caches the ids it has seen; they stay valid until the
// dictionary is swept of values no row refers to any more
// (sweepDictionary, at compaction), which raises metaDictionaryEpoch, or
// holds smaller ids than those cached (restored from a backup): a writer
// finding either forgets what it cached. Readers
// resolve the ids a query needs in their own snapshot, uncached
// (resolveConds).

// dictionaryCacheBytes bounds what a store's writer caches: past it, the
// cache starts over. Values that never recur (pod IPs, the names in
// Events) would otherwise fill it.
const dictionaryCacheBytes = 16 << 20

// dictionaryEntryBytes is about what an entry of the cache takes beside
// its text: the map's slot, the string's header, the id.
const dictionaryEntryBytes = 64

// dictionaryLookup bounds the names or values one statement looks up.
const dictionaryLookup = 500

// attrKey is a label or field key as the dictionary holds it.
type attrKey struct{ kind, name string }

// attrValue is a value of a key, by the key's id.
type attrValue struct {
	key   int64
	value string
}

type attributeKeyRow struct {
	ID   int64  `gorm:"column:id;primaryKey;autoIncrement:false"`
	Kind string `gorm:"column:kind"`
	Name string `gorm:"column:name"`
}

func (attributeKeyRow) TableName() string { return attributeKeysTable }

type attributeValueRow struct {
	ID    int64  `gorm:"column:id;primaryKey;autoIncrement:false"`
	KeyID int64  `gorm:"column:key_id"`
	Value string `gorm:"column:value"`
}

func (attributeValueRow) TableName() string { return attributeValuesTable }

// storedAttributeRow is an attribute row as stored: ids of the dictionary.
type storedAttributeRow struct {
	ObjectID int64 `gorm:"column:object_id;primaryKey;autoIncrement:false"`
	KeyID    int64 `gorm:"column:key_id;primaryKey;autoIncrement:false"`
	ValueID  int64 `gorm:"column:value_id"`
	// Seq numbers the values of a multi-valued field.
	Seq int `gorm:"column:seq;primaryKey;autoIncrement:false"`
}

func (storedAttributeRow) TableName() string { return attributesTable }

// dictionary is a store's writer's cache of ids, as of a state of the
// dictionary, and where the store's sweeps go on from.
type dictionary struct {
	mu     sync.Mutex
	state  dictionaryState
	keys   map[attrKey]int64
	values map[attrValue]int64
	bytes  int
	// swept is the value id the last sweep stopped after.
	swept int64
}

// dictionaryState tells whether cached ids still hold: the sweeps so far,
// and the largest ids. A sweep raises the epoch; a database restored from
// a backup has smaller ids than those cached, which the ids assigned next
// would collide with.
type dictionaryState struct {
	Epoch    int64 `gorm:"column:epoch"`
	MaxKey   int64 `gorm:"column:max_key"`
	MaxValue int64 `gorm:"column:max_value"`
}

// holds reports whether ids cached as of c still hold in s.
func (s dictionaryState) holds(c dictionaryState) bool {
	return s.Epoch == c.Epoch && s.MaxKey >= c.MaxKey && s.MaxValue >= c.MaxValue
}

// dictionaryStateQuery reads the state, one statement.
const dictionaryStateQuery = "SELECT (SELECT value FROM " + metaTable + " WHERE name = '" + metaDictionaryEpoch + "') AS epoch, " +
	"(SELECT COALESCE(MAX(id), 0) FROM " + attributeKeysTable + ") AS max_key, " +
	"(SELECT COALESCE(MAX(id), 0) FROM " + attributeValuesTable + ") AS max_value"

// dictionaryTx assigns and looks up ids in one transaction holding the
// revision counter's lock. What it learns is the store's to cache once the
// transaction committed (dictionary.learn): ids assigned in a transaction
// that rolled back would be assigned again to something else.
type dictionaryTx struct {
	d *dictionary
	// state is the dictionary's as the transaction found it, with the ids
	// it assigned since; read once it was. warm: the store's cache holds.
	state      dictionaryState
	read, warm bool
	keys       map[attrKey]int64
	values     map[attrValue]int64
}

func (d *dictionary) begin() *dictionaryTx {
	return &dictionaryTx{d: d, keys: map[attrKey]int64{}, values: map[attrValue]int64{}}
}

// learn caches what dt learnt, beside what the cache held if it holds.
func (d *dictionary) learn(dt *dictionaryTx) {
	if dt == nil || !dt.read {
		return
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	added := 0
	for k := range dt.keys {
		added += len(k.name) + dictionaryEntryBytes
	}
	for v := range dt.values {
		added += len(v.value) + dictionaryEntryBytes
	}
	if d.keys == nil || !dt.state.holds(d.state) || d.bytes+added > dictionaryCacheBytes {
		d.keys, d.values, d.bytes = map[attrKey]int64{}, map[attrValue]int64{}, 0
	}
	d.state, d.bytes = dt.state, d.bytes+added
	maps.Copy(d.keys, dt.keys)
	maps.Copy(d.values, dt.values)
}

// cached looks up what the store's cache holds, if it holds.
func (dt *dictionaryTx) cached(keys []attrKey, values []attrValue) {
	if !dt.warm {
		return
	}
	dt.d.mu.Lock()
	defer dt.d.mu.Unlock()
	for _, k := range keys {
		if id, ok := dt.d.keys[k]; ok {
			dt.keys[k] = id
		}
	}
	for _, v := range values {
		if id, ok := dt.d.values[v]; ok {
			dt.values[v] = id
		}
	}
}

// store turns attrs into the rows that store them, assigning ids to the
// keys and values the dictionary lacks.
func (dt *dictionaryTx) store(tx *gorm.DB, d *dialect, attrs []attributeRow) ([]storedAttributeRow, error) {
	if len(attrs) == 0 {
		return nil, nil
	}
	if !dt.read {
		if err := tx.Raw(dictionaryStateQuery).Scan(&dt.state).Error; err != nil {
			return nil, err
		}
		dt.read = true
		dt.d.mu.Lock()
		dt.warm = dt.d.keys != nil && dt.state.holds(dt.d.state)
		dt.d.mu.Unlock()
	}
	keys := map[attrKey]bool{}
	for _, a := range attrs {
		keys[attrKey{a.Kind, a.Key}] = true
	}
	if err := dt.keyIDs(tx, d, slices.Collect(maps.Keys(keys))); err != nil {
		return nil, err
	}
	values := map[attrValue]bool{}
	for _, a := range attrs {
		values[attrValue{dt.keys[attrKey{a.Kind, a.Key}], a.Value}] = true
	}
	if err := dt.valueIDs(tx, d, slices.Collect(maps.Keys(values))); err != nil {
		return nil, err
	}
	out := make([]storedAttributeRow, len(attrs))
	for i, a := range attrs {
		key := dt.keys[attrKey{a.Kind, a.Key}]
		out[i] = storedAttributeRow{ObjectID: a.ObjectID, KeyID: key, Seq: a.Seq, ValueID: dt.values[attrValue{key, a.Value}]}
	}
	// In the primary key's order, InnoDB appends each row to the last page
	// and fills it before it starts the next; in the order of the labels'
	// maps, every few rows turned back and InnoDB split the page in half,
	// which left the pages half full (TestAttributeRowsFillTheirPages).
	slices.SortFunc(out, compareStoredAttributes)
	return out, nil
}

// compareStoredAttributes orders rows by the primary key of attributesTable.
func compareStoredAttributes(a, b storedAttributeRow) int {
	return cmp.Or(cmp.Compare(a.ObjectID, b.ObjectID), cmp.Compare(a.KeyID, b.KeyID), cmp.Compare(a.Seq, b.Seq))
}

// insert writes attrs as the rows that store them (store).
func (dt *dictionaryTx) insert(tx *gorm.DB, d *dialect, attrs []attributeRow) error {
	stored, err := dt.store(tx, d, attrs)
	if err != nil {
		return err
	}
	return insertChunked(tx, d, stored, storedAttributeSize)
}

// storedAttributeSize is about what a stored attribute row takes in a
// statement, for insertBytes: its four numbers.
func storedAttributeSize(*storedAttributeRow) int { return 32 }

// keyIDs makes sure dt knows the ids of keys, read or assigned.
func (dt *dictionaryTx) keyIDs(tx *gorm.DB, d *dialect, keys []attrKey) error {
	dt.cached(keys, nil)
	keys = slices.DeleteFunc(keys, func(k attrKey) bool { _, ok := dt.keys[k]; return ok })
	if len(keys) == 0 {
		return nil
	}
	if err := findKeys(tx, keys, dt.keys); err != nil {
		return err
	}
	missing := assign(dt.keys, keys, &dt.state.MaxKey, func(k attrKey, id int64) attributeKeyRow {
		return attributeKeyRow{ID: id, Kind: k.kind, Name: k.name}
	})
	return insertChunked(tx, d, missing, func(r *attributeKeyRow) int { return len(r.Name) })
}

// valueIDs makes sure dt knows the ids of values, read or assigned.
func (dt *dictionaryTx) valueIDs(tx *gorm.DB, d *dialect, values []attrValue) error {
	dt.cached(nil, values)
	values = slices.DeleteFunc(values, func(v attrValue) bool { _, ok := dt.values[v]; return ok })
	if len(values) == 0 {
		return nil
	}
	if err := findValues(tx, values, dt.values); err != nil {
		return err
	}
	missing := assign(dt.values, values, &dt.state.MaxValue, func(v attrValue, id int64) attributeValueRow {
		return attributeValueRow{ID: id, KeyID: v.key, Value: v.value}
	})
	return insertChunked(tx, d, missing, func(r *attributeValueRow) int { return len(r.Value) })
}

// assign gives those of wanted that ids lacks the ids after *largest, and
// returns their rows.
func assign[K comparable, R any](ids map[K]int64, wanted []K, largest *int64, row func(K, int64) R) []R {
	var out []R
	for _, k := range wanted {
		if _, ok := ids[k]; !ok {
			*largest++
			ids[k] = *largest
			out = append(out, row(k, *largest))
		}
	}
	return out
}

// findValues adds to ids those of values that the dictionary has,
// dictionaryLookup values a statement, of one key or more.
func findValues(tx *gorm.DB, values []attrValue, ids map[attrValue]int64) error {
	byKey := map[int64][]string{}
	for _, v := range values {
		byKey[v.key] = append(byKey[v.key], v.value)
	}
	var terms []string
	var args []any
	n := 0
	lookup := func() error {
		if n == 0 {
			return nil
		}
		var found []attributeValueRow
		if err := tx.Where(strings.Join(terms, " OR "), args...).Find(&found).Error; err != nil {
			return err
		}
		for _, r := range found {
			ids[attrValue{r.KeyID, r.Value}] = r.ID
		}
		terms, args, n = nil, nil, 0
		return nil
	}
	for _, key := range slices.Sorted(maps.Keys(byKey)) {
		for chunk := range slices.Chunk(byKey[key], dictionaryLookup) {
			if n+len(chunk) > dictionaryLookup {
				if err := lookup(); err != nil {
					return err
				}
			}
			terms = append(terms, "(key_id = ? AND value IN ?)")
			args = append(args, key, chunk)
			n += len(chunk)
		}
	}
	return lookup()
}

// findKeys adds to ids those of keys that the dictionary has, lists of
// names of a kind, which the index of kind and name seeks,
// dictionaryLookup a statement.
func findKeys(tx *gorm.DB, keys []attrKey, ids map[attrKey]int64) error {
	byKind := map[string][]string{}
	for _, k := range keys {
		byKind[k.kind] = append(byKind[k.kind], k.name)
	}
	for _, kind := range slices.Sorted(maps.Keys(byKind)) {
		for names := range slices.Chunk(byKind[kind], dictionaryLookup) {
			var found []attributeKeyRow
			if err := tx.Where("kind = ? AND name IN ?", kind, names).Find(&found).Error; err != nil {
				return err
			}
			for _, r := range found {
				ids[attrKey{r.Kind, r.Name}] = r.ID
			}
		}
	}
	return nil
}

// attributesOf reads the attribute rows of the rows that where selects in
// full, their keys and values looked up (where's columns are the
// attribute rows': qualify none).
func attributesOf(tx *gorm.DB, where string, args ...any) ([]attributeRow, error) {
	var out []attributeRow
	err := tx.Table(attributesTable+" a").
		Select("a.object_id, a.key_id, a.seq, k.kind, k.name AS attr_key, v.value AS attr_value").
		Joins("JOIN "+attributeKeysTable+" k ON k.id = a.key_id").
		Joins("JOIN "+attributeValuesTable+" v ON v.id = a.value_id").
		Where(where, args...).Find(&out).Error
	return out, err
}

// legacyAttributes reads the rows of the legacy attribute table (before
// schema version 15) of the objects at revisions in (after, last].
func legacyAttributes(tx *gorm.DB, after, last int64) ([]attributeRow, error) {
	var attrs []attributeRow
	err := tx.Table(legacyAttributesTable).Select("resource_revision AS object_id, kind, attr_key, seq, attr_value").
		Where("resource_revision > ? AND resource_revision <= ?", after, last).Find(&attrs).Error
	return attrs, err
}

// Compaction sweeps the dictionary of the values no attribute row has any
// more, dictionarySweep of its values a statement and up to
// dictionarySweepMax a compaction, going on where the last one stopped,
// so that its cost follows the values there are and is bounded; then of
// the keys left without values.
const (
	dictionarySweep    = 10_000
	dictionarySweepMax = 200_000
)

var (
	unusedValue = "NOT EXISTS (SELECT 1 FROM " + attributesTable + " a WHERE a.key_id = " + attributeValuesTable + ".key_id AND a.value_id = " + attributeValuesTable + ".id)"
	unusedKey   = "NOT EXISTS (SELECT 1 FROM " + attributeValuesTable + " v WHERE v.key_id = " + attributeKeysTable + ".id)"
)

// sweepDictionary deletes what the dictionary no longer needs. It finds
// what to delete without a lock, then deletes it, still unused, holding
// the revision counter, so that no writer assigns or uses an id meanwhile,
// and raises the epoch, which has writers forget the ids they cached.
func (s *Store) sweepDictionary(db *gorm.DB) error {
	s.dict.mu.Lock()
	after := s.dict.swept
	s.dict.mu.Unlock()
	for examined := 0; examined < dictionarySweepMax; examined += dictionarySweep {
		var ids []int64
		if err := db.Model(&attributeValueRow{}).Where("id > ?", after).Order("id").Limit(dictionarySweep).Pluck("id", &ids).Error; err != nil {
			return err
		}
		if len(ids) == 0 {
			after = 0 // from the start, the next time
			break
		}
		if err := s.sweep(db, attributeValuesTable, unusedValue, "id >= ? AND id <= ?", ids[0], ids[len(ids)-1]); err != nil {
			return err
		}
		after = ids[len(ids)-1]
	}
	s.dict.mu.Lock()
	s.dict.swept = after
	s.dict.mu.Unlock()
	return s.sweep(db, attributeKeysTable, unusedKey, "1 = 1")
}

// sweep deletes the rows of table that where selects and unused tests.
func (s *Store) sweep(db *gorm.DB, table, unused, where string, args ...any) error {
	var gone []int64
	if err := db.Table(table).Where(where, args...).Where(unused).Order("id").Limit(dictionarySweep).Pluck("id", &gone).Error; err != nil || len(gone) == 0 {
		return err
	}
	err := db.Transaction(func(tx *gorm.DB) error {
		if err := barrier(tx); err != nil {
			return err
		}
		res := tx.Exec("DELETE FROM "+table+" WHERE id IN ? AND "+unused, gone)
		if res.Error != nil || res.RowsAffected == 0 {
			return res.Error
		}
		res = tx.Exec("UPDATE "+metaTable+" SET value = value + 1 WHERE name = ?", metaDictionaryEpoch)
		if res.Error == nil && res.RowsAffected != 1 {
			return fmt.Errorf("%s has no %s", metaTable, metaDictionaryEpoch)
		}
		return res.Error
	})
	if err != nil {
		return fmt.Errorf("sweeping %s: %w", table, err)
	}
	return nil
}

// convertAttributes moves the legacy attribute rows into the dictionary's
// (migration 15), a page of objects a transaction holding the revision
// counter, then drops the legacy table, and refreshes the statistics. It
// goes on after the last object an earlier conversion, cut short,
// converted (the pages commit in order; a binary from before version 19
// named their column otherwise, renameObjectIDs), and keeps what another
// store converted meanwhile (GET_LOCK is a Galera node's own).
func (s *Store) convertAttributes(db *gorm.DB) error {
	const page = 5000
	if err := s.renameObjectIDs(db); err != nil {
		return err
	}
	var after int64
	if err := db.Raw("SELECT COALESCE(MAX(object_id), 0) FROM " + attributesTable).Scan(&after).Error; err != nil {
		return err
	}
	for {
		var last int64
		dict := s.dict.begin()
		err := db.Transaction(func(tx *gorm.DB) error {
			if err := barrier(tx); err != nil {
				return err
			}
			if !tx.Migrator().HasTable(legacyAttributesTable) {
				return nil // converted by another store
			}
			var revs []int64
			if err := tx.Model(&resourceRow{}).Where("revision > ?", after).Order("revision").Limit(page).Pluck("revision", &revs).Error; err != nil {
				return err
			}
			if len(revs) == 0 {
				// Still holding the counter, so that a binary of before
				// writes no rows between the last page and the drop
				// (MySQL commits before a DROP: all but that instant).
				return tx.Exec("DROP TABLE IF EXISTS " + legacyAttributesTable).Error
			}
			last = revs[len(revs)-1]
			legacy, err := legacyAttributes(tx, after, last)
			if err != nil {
				return err
			}
			stored, err := dict.store(tx, s.dialect, legacy)
			if err != nil {
				return err
			}
			return inChunks(stored, s.dialect.insertRows, storedAttributeSize, func(chunk []storedAttributeRow) error {
				return tx.Clauses(clause.OnConflict{DoNothing: true}).Create(chunk).Error
			})
		})
		if err != nil {
			return err
		}
		s.dict.learn(dict)
		if last == 0 {
			break
		}
		after = last
	}
	if s.dialect.analyze == "" || after == 0 {
		return nil
	}
	return db.Exec(s.dialect.analyze).Error
}
