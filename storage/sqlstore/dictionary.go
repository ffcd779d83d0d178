package sqlstore

import (
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
// (sweepDictionary, at compaction), which raises metaDictionaryEpoch, and
// a writer finding the epoch changed forgets what it cached. Readers
// resolve the ids a query needs in their own snapshot, uncached
// (resolveConds).

// dictionaryCacheValues bounds the values a store's writer caches: past
// it, the cache starts over. Values that never repeat (pod IPs, the names
// in Events) would otherwise fill it.
const dictionaryCacheValues = 200_000

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
	Revision int64 `gorm:"column:resource_revision;primaryKey;autoIncrement:false"`
	KeyID    int64 `gorm:"column:key_id;primaryKey;autoIncrement:false"`
	// Seq numbers the values of a multi-valued field.
	Seq     int   `gorm:"column:seq;primaryKey;autoIncrement:false"`
	ValueID int64 `gorm:"column:value_id"`
}

func (storedAttributeRow) TableName() string { return attributesTable }

// dictionary is a store's writer's cache of ids, as of epoch.
type dictionary struct {
	mu     sync.Mutex
	epoch  int64
	keys   map[attrKey]int64
	values map[attrValue]int64
}

// dictionaryTx assigns and looks up ids in one transaction holding the
// revision counter's lock. What it learns is the store's to cache once the
// transaction committed (dictionary.learn): ids assigned in a transaction
// that rolled back would be assigned again to something else.
type dictionaryTx struct {
	d      *dictionary
	epoch  int64
	read   bool // epoch was read
	keys   map[attrKey]int64
	values map[attrValue]int64
}

func (d *dictionary) begin() *dictionaryTx {
	return &dictionaryTx{d: d, keys: map[attrKey]int64{}, values: map[attrValue]int64{}}
}

// learn caches what dt learnt, unless the dictionary was swept since.
func (d *dictionary) learn(dt *dictionaryTx) {
	if dt == nil || !dt.read {
		return
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if dt.epoch != d.epoch || d.keys == nil {
		d.epoch, d.keys, d.values = dt.epoch, map[attrKey]int64{}, map[attrValue]int64{}
	}
	if len(d.values)+len(dt.values) > dictionaryCacheValues {
		d.values = map[attrValue]int64{}
	}
	maps.Copy(d.keys, dt.keys)
	maps.Copy(d.values, dt.values)
}

// cached looks up what the store's cache holds, as of dt's epoch.
func (dt *dictionaryTx) cached(keys []attrKey, values []attrValue) {
	dt.d.mu.Lock()
	defer dt.d.mu.Unlock()
	if dt.d.epoch != dt.epoch || dt.d.keys == nil {
		return
	}
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
		if err := tx.Model(&metaRow{}).Where("name = ?", metaDictionaryEpoch).Pluck("value", &dt.epoch).Error; err != nil {
			return nil, err
		}
		dt.read = true
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
		out[i] = storedAttributeRow{Revision: a.Revision, KeyID: key, Seq: a.Seq, ValueID: dt.values[attrValue{key, a.Value}]}
	}
	return out, nil
}

// keyIDs makes sure dt knows the ids of keys, read or assigned.
func (dt *dictionaryTx) keyIDs(tx *gorm.DB, d *dialect, keys []attrKey) error {
	dt.cached(keys, nil)
	keys = slices.DeleteFunc(keys, func(k attrKey) bool { _, ok := dt.keys[k]; return ok })
	if len(keys) == 0 {
		return nil
	}
	found, err := findKeys(tx, keys)
	if err != nil {
		return err
	}
	for _, r := range found {
		dt.keys[attrKey{r.Kind, r.Name}] = r.ID
	}
	var missing []attributeKeyRow
	for _, k := range keys {
		if _, ok := dt.keys[k]; !ok {
			missing = append(missing, attributeKeyRow{Kind: k.kind, Name: k.name})
		}
	}
	if len(missing) == 0 {
		return nil
	}
	next, err := nextID(tx, attributeKeysTable)
	if err != nil {
		return err
	}
	for i := range missing {
		missing[i].ID = next + int64(i)
		dt.keys[attrKey{missing[i].Kind, missing[i].Name}] = missing[i].ID
	}
	return insertChunked(tx, d, missing, func(r *attributeKeyRow) int { return len(r.Name) })
}

// valueIDs makes sure dt knows the ids of values, read or assigned.
func (dt *dictionaryTx) valueIDs(tx *gorm.DB, d *dialect, values []attrValue) error {
	dt.cached(nil, values)
	values = slices.DeleteFunc(values, func(v attrValue) bool { _, ok := dt.values[v]; return ok })
	if len(values) == 0 {
		return nil
	}
	byKey := map[int64][]string{}
	for _, v := range values {
		byKey[v.key] = append(byKey[v.key], v.value)
	}
	keys := slices.Sorted(maps.Keys(byKey))
	for start := 0; start < len(keys); {
		// A statement looks up some keys' values, up to d.insertRows of them.
		var terms []string
		var args []any
		n := 0
		for ; start < len(keys) && (n == 0 || n+len(byKey[keys[start]]) <= d.insertRows); start++ {
			terms = append(terms, "(key_id = ? AND value IN ?)")
			args = append(args, keys[start], byKey[keys[start]])
			n += len(byKey[keys[start]])
		}
		var found []attributeValueRow
		if err := tx.Where(strings.Join(terms, " OR "), args...).Find(&found).Error; err != nil {
			return err
		}
		for _, r := range found {
			dt.values[attrValue{r.KeyID, r.Value}] = r.ID
		}
	}
	var missing []attributeValueRow
	for _, v := range values {
		if _, ok := dt.values[v]; !ok {
			missing = append(missing, attributeValueRow{KeyID: v.key, Value: v.value})
		}
	}
	if len(missing) == 0 {
		return nil
	}
	next, err := nextID(tx, attributeValuesTable)
	if err != nil {
		return err
	}
	for i := range missing {
		missing[i].ID = next + int64(i)
		dt.values[attrValue{missing[i].KeyID, missing[i].Value}] = missing[i].ID
	}
	return insertChunked(tx, d, missing, func(r *attributeValueRow) int { return len(r.Value) })
}

// findKeys reads the dictionary's rows of keys, a list of names a kind,
// which the index of kind and name seeks.
func findKeys(tx *gorm.DB, keys []attrKey) ([]attributeKeyRow, error) {
	byKind := map[string][]string{}
	for _, k := range keys {
		byKind[k.kind] = append(byKind[k.kind], k.name)
	}
	var terms []string
	var args []any
	for _, kind := range slices.Sorted(maps.Keys(byKind)) {
		terms = append(terms, "(kind = ? AND name IN ?)")
		args = append(args, kind, byKind[kind])
	}
	var found []attributeKeyRow
	err := tx.Where(strings.Join(terms, " OR "), args...).Find(&found).Error
	return found, err
}

// nextID is the id after the largest of table's.
func nextID(tx *gorm.DB, table string) (int64, error) {
	var largest int64
	if err := tx.Raw("SELECT COALESCE(MAX(id), 0) FROM " + table).Scan(&largest).Error; err != nil {
		return 0, err
	}
	return largest + 1, nil
}

// attributesOf reads the attribute rows of the rows that where selects in
// full, their keys and values looked up (where's columns are the
// attribute rows': qualify none).
func attributesOf(tx *gorm.DB, where string, args ...any) ([]attributeRow, error) {
	var out []attributeRow
	err := tx.Table(attributesTable+" a").
		Select("a.resource_revision, a.key_id, a.seq, k.kind, k.name AS attr_key, v.value AS attr_value").
		Joins("JOIN "+attributeKeysTable+" k ON k.id = a.key_id").
		Joins("JOIN "+attributeValuesTable+" v ON v.id = a.value_id").
		Where(where, args...).Find(&out).Error
	return out, err
}

// sweepDictionary deletes the values no attribute row refers to any more,
// then the keys left without values, dictionarySweep ids a transaction,
// each holding the revision counter so that no writer assigns or uses an
// id meanwhile; a transaction that deleted any raises the epoch, which
// has writers forget the ids they cached.
func (s *Store) sweepDictionary(db *gorm.DB) error {
	for _, t := range []struct{ table, unused string }{
		{attributeValuesTable, "NOT EXISTS (SELECT 1 FROM " + attributesTable + " a WHERE a.key_id = " + attributeValuesTable + ".key_id AND a.value_id = " + attributeValuesTable + ".id)"},
		{attributeKeysTable, "NOT EXISTS (SELECT 1 FROM " + attributeValuesTable + " v WHERE v.key_id = " + attributeKeysTable + ".id)"},
	} {
		var last int64
		if err := db.Raw("SELECT COALESCE(MAX(id), 0) FROM " + t.table).Scan(&last).Error; err != nil {
			return err
		}
		for after := int64(0); after < last; after += dictionarySweep {
			err := db.Transaction(func(tx *gorm.DB) error {
				if err := barrier(tx); err != nil {
					return err
				}
				res := tx.Exec("DELETE FROM "+t.table+" WHERE id > ? AND id <= ? AND "+t.unused, after, after+dictionarySweep)
				if res.Error != nil || res.RowsAffected == 0 {
					return res.Error
				}
				return tx.Exec("UPDATE "+metaTable+" SET value = value + 1 WHERE name = ?", metaDictionaryEpoch).Error
			})
			if err != nil {
				return fmt.Errorf("sweeping %s: %w", t.table, err)
			}
		}
	}
	return nil
}

// dictionarySweep is how many ids a transaction of sweepDictionary tests.
const dictionarySweep = 10_000

// convertAttributes moves the legacy attribute rows into the dictionary's
// (migration 15), a page of objects a transaction holding the revision
// counter, then drops the legacy table. A page keeps what an earlier
// conversion, cut short, or another store's (SQLite's have no schema
// lock), converted of it.
func (s *Store) convertAttributes(db *gorm.DB) error {
	if !db.Migrator().HasTable(legacyAttributesTable) {
		return nil
	}
	const page = 5000
	for after := int64(-1); ; {
		var last int64
		dict := s.dict.begin()
		err := db.Transaction(func(tx *gorm.DB) error {
			if err := barrier(tx); err != nil {
				return err
			}
			var revs []int64
			if err := tx.Model(&resourceRow{}).Where("revision > ?", after).Order("revision").Limit(page).Pluck("revision", &revs).Error; err != nil {
				return err
			}
			if len(revs) == 0 {
				// Still holding the counter, so that a binary of before
				// writes no rows between the last page and the drop
				// (MySQL commits before a DROP: all but that instant).
				return tx.Exec("DROP TABLE " + legacyAttributesTable).Error
			}
			last = revs[len(revs)-1]
			var legacy []attributeRow
			if err := tx.Table(legacyAttributesTable).Where("resource_revision > ? AND resource_revision <= ?", after, last).Find(&legacy).Error; err != nil {
				return err
			}
			stored, err := dict.store(tx, s.dialect, legacy)
			if err != nil {
				return err
			}
			return inChunks(stored, s.dialect.insertRows, func(*storedAttributeRow) int { return 24 }, func(chunk []storedAttributeRow) error {
				return tx.Clauses(clause.OnConflict{DoNothing: true}).Create(chunk).Error
			})
		})
		if err != nil {
			return err
		}
		s.dict.learn(dict)
		if last == 0 {
			return nil
		}
		after = last
	}
}
