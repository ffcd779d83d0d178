package sqlstore

import (
	"slices"
	"strings"

	"golang.org/x/sync/errgroup"
	"gorm.io/gorm"
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
	// old are the rows replaced or deleted; replaced maps the revision of
	// each one replaced to the revision of the row that replaces it.
	old      []*resourceRow
	replaced map[int64]int64
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
				if p.replaced == nil {
					p.replaced = map[int64]int64{}
				}
				p.replaced[o.old.Revision] = rev
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
// the new ones. Where the dialect moves attributes, those that a
// replacing row has as they were move to it rather than being written
// again: an update mostly leaves its labels and fields as they were.
func (p *pending) flush(tx *gorm.DB, d *dialect) error {
	old, replaced, rows, attrs, keywords, events := p.old, p.replaced, p.rows, p.attrs, p.keywords, p.events
	p.old, p.replaced, p.rows, p.attrs, p.keywords, p.events, p.clusters, p.resources = nil, nil, nil, nil, nil, nil, nil, nil
	t := tally{at: p.committed, unknown: p.listed}
	p.listed = nil
	fresh := newAttributeWrites(attrs, replaced)
	for start := 0; start < len(old); start += keyChunk {
		chunk := old[start:min(start+keyChunk, len(old))]
		revs := make([]int64, len(chunk))
		keys := make(map[int64]*KeyColumns, len(chunk))
		for i, r := range chunk {
			revs[i], keys[r.Revision] = r.Revision, &r.KeyColumns
		}
		oldAttrs, err := attributesOf(tx, "resource_revision IN ?", revs)
		if err != nil {
			return err
		}
		t.objects(keys, -1)
		t.attributes(keys, oldAttrs, -1)
		if err := fresh.replace(tx, d, revs, oldAttrs); err != nil {
			return err
		}
		if err := tx.Where("revision IN ?", revs).Delete(&resourceRow{}).Error; err != nil {
			return err
		}
		if err := tx.Where("resource_revision IN ?", revs).Delete(&keywordRow{}).Error; err != nil {
			return err
		}
	}
	if err := insertChunked(tx, d, rows, func(r *resourceRow) int { return len(r.Object) }); err != nil {
		return err
	}
	if err := insertChunked(tx, d, keywords, func(r *keywordRow) int { return len(r.Words) }); err != nil {
		return err
	}
	if err := p.dict.insert(tx, d, fresh.rows()); err != nil {
		return err
	}
	keys := make(map[int64]*KeyColumns, len(rows))
	for i := range rows {
		keys[rows[i].Revision] = &rows[i].KeyColumns
	}
	t.objects(keys, 1)
	t.attributes(keys, attrs, 1)
	if err := t.apply(tx, d); err != nil {
		return err
	}
	return insertChunked(tx, d, events, func(e *eventRow) int { return len(e.Object) + len(e.PrevObject) })
}

// attrID is an attribute row's primary key.
type attrID struct {
	rev       int64
	kind, key string
	seq       int
}

// attributeWrites are the attribute rows of new rows, those of replacing
// rows by primary key, and which of them the rows they replace have as
// they are.
type attributeWrites struct {
	all      []attributeRow
	replaced map[int64]int64
	values   map[attrID]string
	kept     map[attrID]bool
}

func newAttributeWrites(attrs []attributeRow, replaced map[int64]int64) *attributeWrites {
	a := &attributeWrites{all: attrs, replaced: replaced, values: map[attrID]string{}, kept: map[attrID]bool{}}
	replacing := make(map[int64]bool, len(replaced))
	for _, rev := range replaced {
		replacing[rev] = true
	}
	for _, r := range attrs {
		if replacing[r.Revision] {
			a.values[attrID{r.Revision, r.Kind, r.Key, r.Seq}] = r.Value
		}
	}
	return a
}

// replace deletes the attribute rows of the rows at revs, old, but, where
// the dialect moves attributes, for those that the rows replacing them
// have as they are, which it moves to them: the rows of an object that the
// update changed go, then what is left of its rows moves, one statement
// for each.
func (a *attributeWrites) replace(tx *gorm.DB, d *dialect, revs []int64, old []attributeRow) error {
	if !d.moveAttributes {
		return tx.Where("resource_revision IN ?", revs).Delete(&storedAttributeRow{}).Error
	}
	moving := map[int64]bool{}
	var changed []attributeRow
	for _, r := range old {
		to, ok := a.replaced[r.Revision]
		id := attrID{to, r.Kind, r.Key, r.Seq}
		if v, same := a.values[id]; ok && same && v == r.Value {
			a.kept[id], moving[r.Revision] = true, true
		} else if ok {
			changed = append(changed, r)
		}
	}
	// The changed rows of an object none of whose rows move go with all
	// of its rows, below.
	changed = slices.DeleteFunc(changed, func(r attributeRow) bool { return !moving[r.Revision] })
	var gone, moved []int64
	for _, rev := range revs {
		if moving[rev] {
			moved = append(moved, rev)
		} else {
			gone = append(gone, rev)
		}
	}
	if len(gone) > 0 {
		if err := tx.Where("resource_revision IN ?", gone).Delete(&storedAttributeRow{}).Error; err != nil {
			return err
		}
	}
	if err := deleteAttributes(tx, d, changed); err != nil {
		return err
	}
	return a.move(tx, d, moved)
}

// deleteAttributes deletes rows, read by attributesOf, by their primary
// key, d.insertRows a statement.
func deleteAttributes(tx *gorm.DB, d *dialect, rows []attributeRow) error {
	for start := 0; start < len(rows); start += d.insertRows {
		chunk := rows[start:min(start+d.insertRows, len(rows))]
		terms := make([]string, len(chunk))
		args := make([]any, 0, 3*len(chunk))
		for i, r := range chunk {
			terms[i] = "(resource_revision = ? AND key_id = ? AND seq = ?)"
			args = append(args, r.Revision, r.KeyID, r.Seq)
		}
		if err := tx.Where(strings.Join(terms, " OR "), args...).Delete(&storedAttributeRow{}).Error; err != nil {
			return err
		}
	}
	return nil
}

// move rekeys the attribute rows of the rows at revs to the rows that
// replace them, d.insertRows rows' a statement. Each is moved by the
// difference of the revisions, which types its parameter as the column's
// (a parameter alone is text to PostgreSQL).
func (a *attributeWrites) move(tx *gorm.DB, d *dialect, revs []int64) error {
	for start := 0; start < len(revs); start += d.insertRows {
		chunk := revs[start:min(start+d.insertRows, len(revs))]
		args := make([]any, 0, 2*len(chunk)+1)
		for _, rev := range chunk {
			args = append(args, rev, a.replaced[rev]-rev)
		}
		args = append(args, chunk)
		stmt := "UPDATE " + attributesTable + " SET resource_revision = CASE resource_revision" +
			strings.Repeat(" WHEN ? THEN resource_revision + ?", len(chunk)) + " END WHERE resource_revision IN ?"
		if err := tx.Exec(stmt, args...).Error; err != nil {
			return err
		}
	}
	return nil
}

// rows are the attribute rows to insert: those not moved.
func (a *attributeWrites) rows() []attributeRow {
	if len(a.kept) == 0 {
		return a.all
	}
	out := make([]attributeRow, 0, len(a.all)-len(a.kept))
	for _, r := range a.all {
		if !a.kept[attrID{r.Revision, r.Kind, r.Key, r.Seq}] {
			out = append(out, r)
		}
	}
	return out
}
