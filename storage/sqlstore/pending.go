package sqlstore

import (
	"slices"
	"strings"

	"golang.org/x/sync/errgroup"
	"gorm.io/gorm"
	"gorm.io/gorm/clause"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/panorama-io/panorama/storage"
)

// pending holds the rows that a group's batches have planned and not yet
// written. They are written together, in multi-row statements across
// batches (a group of small batches would otherwise cost six statements a
// batch), before the counter is updated, and before a batch reads rows
// that are here (holds).
type pending struct {
	// old are the rows replaced or deleted; updated are the objects of
	// those replaced, by id: their rows are rewritten in place.
	old      []*resourceRow
	updated  map[int64]bool
	rows     []resourceRow
	attrs    []attributeRow
	keywords []keywordRow
	events   []eventRow
	// clusters and resources are those that the rows are of.
	clusters  map[string]bool
	resources map[storage.ClusterResource]bool
	// fields are the declared fields new rows are indexed with.
	fields *storage.FieldSet
	// dict stores the attribute rows' keys and values (dictionary.go).
	dict *dictionaryTx
	// bytes of objects, as stored, added since the group began; replacedRows
	// counts the rows replaced or deleted since then.
	bytes, replacedRows int
	// committed is the group's time, in Unix microseconds; listed are
	// the revisions of rows whose values may be older (op.listed).
	committed int64
	listed    map[int64]bool
}

// add plans ops with revisions base+1, base+2, ...
func (p *pending) add(cluster string, gvr schema.GroupVersionResource, base int64, ops []op) error {
	made, err := newRows(p.fields, cluster, gvr, base, ops)
	if err != nil {
		return err
	}
	for i, o := range ops {
		rev := base + int64(i) + 1
		ev := eventRow{Revision: rev, Type: string(o.typ), KeyColumns: newKeyColumns(cluster, gvr, o.ns, o.nm)}
		if o.old != nil {
			// The replaced row's object moves to the log as it is stored:
			// it is the object of the key's previous entry too (log.go).
			p.old = append(p.old, o.old)
			p.replacedRows++
			if o.typ != watch.Deleted {
				if p.updated == nil {
					p.updated = map[int64]bool{}
				}
				p.updated[o.old.ObjectID] = true
			}
			ev.PrevObject, ev.Created = o.old.Object, o.old.Created
			if kept := made[i].keptPreImage; kept != nil {
				ev.PrevObject = kept
			}
		}
		if o.typ != watch.Deleted {
			row := made[i].row
			if o.old == nil {
				ev.Created = row.Created
			}
			if o.listed {
				if p.listed == nil {
					p.listed = map[int64]bool{}
				}
				p.listed[rev] = true
			}
			p.bytes += len(row.Object)
			p.rows = append(p.rows, row)
			p.attrs = append(p.attrs, made[i].attrs...)
			if made[i].hasKeywords {
				p.keywords = append(p.keywords, made[i].keywords)
			}
		}
		ev.Object = storedElsewhere
		p.bytes += len(ev.PrevObject)
		p.events = append(p.events, ev)
	}
	if p.clusters == nil {
		p.clusters, p.resources = map[string]bool{}, map[storage.ClusterResource]bool{}
	}
	p.clusters[cluster] = true
	p.resources[storage.ClusterResource{Cluster: cluster, GVR: gvr}] = true
	return nil
}

// madeRow is the stored form of an op's object, and of the object it
// replaces when that is kept against it (log.go).
type madeRow struct {
	row          resourceRow
	attrs        []attributeRow
	keywords     keywordRow
	hasKeywords  bool
	keptPreImage []byte
}

// newRows makes the rows of the ops that store an object, op i at revision
// base+i+1. Encoding and compressing objects is most of a write's CPU
// (a CPU profile of BenchmarkFleet's initial sync), spent while the write
// holds the revision counter and the database waits: a
// batch big enough is encoded by encodeWorkers goroutines.
func newRows(fs *storage.FieldSet, cluster string, gvr schema.GroupVersionResource, base int64, ops []op) ([]madeRow, error) {
	out := make([]madeRow, len(ops))
	encode := func(lo, hi int) error {
		for i := lo; i < hi; i++ {
			if ops[i].typ == watch.Deleted {
				continue
			}
			made, err := newRow(fs, cluster, gvr, base+int64(i)+1, &ops[i])
			if err != nil {
				return err
			}
			out[i] = made
		}
		return nil
	}
	workers := min(encodeWorkers, len(ops)/encodeShare)
	if workers <= 1 {
		return out, encode(0, len(ops))
	}
	var g errgroup.Group
	share := (len(ops) + workers - 1) / workers
	for lo := 0; lo < len(ops); lo += share {
		g.Go(func() error { return encode(lo, min(lo+share, len(ops))) })
	}
	return out, g.Wait()
}

// holds reports whether p has rows that b may read: of the resource of
// its keys, or, for a batch without keys, which may read any of its
// cluster's rows, of its cluster.
func (p *pending) holds(b *batch) bool {
	if b.keys != nil {
		return p.resources[storage.ClusterResource{Cluster: b.cluster, GVR: b.keys.gvr}]
	}
	return p.clusters[b.cluster]
}

// flush writes what is pending in tx, old rows out first, and forgets it.
// The count summary loses the old rows, read with their attributes (which
// may have been indexed with other fields than the new rows), and gains
// the new ones. An updated object's row is rewritten in place, and of its
// attribute and keyword rows only those that changed: an update mostly
// leaves its labels and fields as they were.
func (p *pending) flush(tx *gorm.DB, d *dialect) error {
	old, updated, rows, attrs, keywords, events := p.old, p.updated, p.rows, p.attrs, p.keywords, p.events
	p.old, p.updated, p.rows, p.attrs, p.keywords, p.events, p.clusters, p.resources = nil, nil, nil, nil, nil, nil, nil, nil
	t := tally{at: p.committed, unknown: p.listed}
	p.listed = nil
	fresh := newAttributeWrites(attrs, updated)
	words := newKeywordWrites(keywords, updated)
	for start := 0; start < len(old); start += keyChunk {
		chunk := old[start:min(start+keyChunk, len(old))]
		ids := make([]int64, len(chunk))
		var gone []int64 // objects deleted
		keys := make(map[int64]counted, len(chunk))
		for i, r := range chunk {
			ids[i], keys[r.ObjectID] = r.ObjectID, counted{key: &r.KeyColumns}
			if !updated[r.ObjectID] {
				gone = append(gone, r.ObjectID)
			}
		}
		oldAttrs, err := attributesOf(tx, "object_id IN ?", ids)
		if err != nil {
			return err
		}
		t.objects(keys, -1)
		t.attributes(keys, oldAttrs, -1)
		if err := fresh.replace(tx, d, gone, oldAttrs); err != nil {
			return err
		}
		if err := words.replace(tx, ids); err != nil {
			return err
		}
		if len(gone) > 0 {
			if err := tx.Where("object_id IN ?", gone).Delete(&resourceRow{}).Error; err != nil {
				return err
			}
		}
	}
	// New objects' rows are inserted, so that a key stored twice is
	// refused as before rather than taken for an update.
	var inserted, rewritten []resourceRow
	for _, r := range rows {
		if updated[r.ObjectID] {
			rewritten = append(rewritten, r)
		} else {
			inserted = append(inserted, r)
		}
	}
	if err := insertChunked(tx, d, inserted, objectBytes); err != nil {
		return err
	}
	if err := upsertChunked(tx, d, rewritten, objectBytes, &rewriteRow); err != nil {
		return err
	}
	if err := insertChunked(tx, d, words.rows(), wordsBytes); err != nil {
		return err
	}
	if err := p.dict.insert(tx, d, fresh.rows()); err != nil {
		return err
	}
	keys := make(map[int64]counted, len(rows))
	for i := range rows {
		keys[rows[i].ObjectID] = counted{key: &rows[i].KeyColumns, rev: rows[i].Revision}
	}
	t.objects(keys, 1)
	t.attributes(keys, attrs, 1)
	if err := t.apply(tx, d); err != nil {
		return err
	}
	return insertChunked(tx, d, events, entryBytes)
}

// The bytes of a row that bound a multi-row statement (insertBytes), by
// table.
func objectBytes(r *resourceRow) int { return len(r.Object) }
func entryBytes(e *eventRow) int     { return len(e.Object) + len(e.PrevObject) }
func wordsBytes(r *keywordRow) int   { return len(r.Words) }

// rewriteRow has an updated object's row rewritten: every column but its
// id and its key, which are the object's.
var rewriteRow = clause.OnConflict{
	Columns:   []clause.Column{{Name: "object_id"}},
	DoUpdates: clause.AssignmentColumns(rewrittenColumns()),
}

// rewrittenColumns are the columns of the objects' table but the id and
// the key.
func rewrittenColumns() []string {
	var out []string
	for _, c := range resourcesByObject().columns {
		if c.name != "object_id" && !slices.ContainsFunc(keyColumns, func(k column) bool { return k.name == c.name }) {
			out = append(out, c.name)
		}
	}
	return out
}

// attrID is an attribute row's primary key.
type attrID struct {
	id        int64
	kind, key string
	seq       int
}

// attributeWrites are the attribute rows of new rows, those of updated
// objects by primary key, and which of them are stored as they are.
type attributeWrites struct {
	all     []attributeRow
	updated map[int64]bool
	values  map[attrID]string
	kept    map[attrID]bool
}

func newAttributeWrites(attrs []attributeRow, updated map[int64]bool) *attributeWrites {
	a := &attributeWrites{all: attrs, updated: updated, values: map[attrID]string{}, kept: map[attrID]bool{}}
	for _, r := range attrs {
		if updated[r.ObjectID] {
			a.values[attrID{r.ObjectID, r.Kind, r.Key, r.Seq}] = r.Value
		}
	}
	return a
}

// replace deletes the attribute rows of the objects gone, and of old, the
// stored rows of the objects whose rows it read, those that their update
// changed or removed.
func (a *attributeWrites) replace(tx *gorm.DB, d *dialect, gone []int64, old []attributeRow) error {
	var changed []attributeRow
	for _, r := range old {
		if !a.updated[r.ObjectID] {
			continue // gone, with every row of its object below
		}
		id := attrID{r.ObjectID, r.Kind, r.Key, r.Seq}
		if v, ok := a.values[id]; ok && v == r.Value {
			a.kept[id] = true
		} else {
			changed = append(changed, r)
		}
	}
	if len(gone) > 0 {
		if err := tx.Where("object_id IN ?", gone).Delete(&storedAttributeRow{}).Error; err != nil {
			return err
		}
	}
	return deleteAttributes(tx, d, changed)
}

// deleteAttributes deletes rows, read by attributesOf, by their primary
// key, d.insertRows a statement.
func deleteAttributes(tx *gorm.DB, d *dialect, rows []attributeRow) error {
	for start := 0; start < len(rows); start += d.insertRows {
		chunk := rows[start:min(start+d.insertRows, len(rows))]
		terms := make([]string, len(chunk))
		args := make([]any, 0, 3*len(chunk))
		for i, r := range chunk {
			terms[i] = "(object_id = ? AND key_id = ? AND seq = ?)"
			args = append(args, r.ObjectID, r.KeyID, r.Seq)
		}
		if err := tx.Where(strings.Join(terms, " OR "), args...).Delete(&storedAttributeRow{}).Error; err != nil {
			return err
		}
	}
	return nil
}

// rows are the attribute rows to insert: those not stored as they are.
func (a *attributeWrites) rows() []attributeRow {
	if len(a.kept) == 0 {
		return a.all
	}
	out := make([]attributeRow, 0, len(a.all)-len(a.kept))
	for _, r := range a.all {
		if !a.kept[attrID{r.ObjectID, r.Kind, r.Key, r.Seq}] {
			out = append(out, r)
		}
	}
	return out
}

// keywordWrites are the keyword rows of new rows, the documents of
// updated objects by id, and which of them are stored as they are: rows
// are never updated (sqliteTextIndex).
type keywordWrites struct {
	all   []keywordRow
	words map[int64]string
	kept  map[int64]bool
}

func newKeywordWrites(rows []keywordRow, updated map[int64]bool) *keywordWrites {
	k := &keywordWrites{all: rows, words: map[int64]string{}, kept: map[int64]bool{}}
	for _, r := range rows {
		if updated[r.ObjectID] {
			k.words[r.ObjectID] = r.Words
		}
	}
	return k
}

// replace deletes the keyword rows of the objects of ids, read, but those
// of updated objects whose words are as they were.
func (k *keywordWrites) replace(tx *gorm.DB, ids []int64) error {
	var stored []keywordRow
	if err := tx.Where("object_id IN ?", ids).Find(&stored).Error; err != nil {
		return err
	}
	var changed []int64
	for _, r := range stored {
		if w, ok := k.words[r.ObjectID]; ok && w == r.Words {
			k.kept[r.ObjectID] = true
		} else {
			changed = append(changed, r.ObjectID)
		}
	}
	if len(changed) == 0 {
		return nil
	}
	return tx.Where("object_id IN ?", changed).Delete(&keywordRow{}).Error
}

// rows are the keyword rows to insert: those not stored as they are.
func (k *keywordWrites) rows() []keywordRow {
	if len(k.kept) == 0 {
		return k.all
	}
	return slices.DeleteFunc(slices.Clone(k.all), func(r keywordRow) bool { return k.kept[r.ObjectID] })
}
