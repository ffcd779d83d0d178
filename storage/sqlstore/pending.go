package sqlstore

import (
	"gorm.io/gorm"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/panorama-io/panorama/storage"
)

// pending holds the rows that a group's batches have planned and not yet
// written. They are written together, in multi-row statements across
// batches (a group of small batches would otherwise cost six statements a
// batch), before the counter is updated, and before a batch reads rows of
// a cluster that has some here.
type pending struct {
	// old are the rows replaced or deleted.
	old      []*resourceRow
	rows     []resourceRow
	attrs    []attributeRow
	events   []eventRow
	clusters map[string]bool
	// fields are the declared fields new rows are indexed with.
	fields *storage.FieldSet
	// bytes of objects, as stored, added since the group began.
	bytes int
}

// add plans ops with revisions base+1, base+2, ...
func (p *pending) add(cluster string, gvr schema.GroupVersionResource, base int64, ops []op) error {
	for i, o := range ops {
		rev := base + int64(i) + 1
		ev := eventRow{Revision: rev, Type: string(o.typ), KeyColumns: newKeyColumns(cluster, gvr, o.ns, o.nm)}
		if o.old != nil {
			// The replaced row's object moves to the log as it is stored:
			// it is the object of the key's previous entry too (log.go).
			p.old = append(p.old, o.old)
			ev.PrevObject, ev.Created = o.old.Object, o.old.Created
		}
		if o.typ != watch.Deleted {
			row, rowAttrs, err := newRow(p.fields, cluster, gvr, rev, o.obj)
			if err != nil {
				return err
			}
			if o.old == nil {
				ev.Created = row.Created
			}
			p.bytes += len(row.Object)
			p.rows = append(p.rows, row)
			p.attrs = append(p.attrs, rowAttrs...)
		}
		ev.Object = storedElsewhere
		p.bytes += len(ev.PrevObject)
		p.events = append(p.events, ev)
	}
	if p.clusters == nil {
		p.clusters = map[string]bool{}
	}
	p.clusters[cluster] = true
	return nil
}

// flush writes what is pending in tx, old rows out first, and forgets it.
// The count summary loses the old rows, read with their attributes (which
// may have been indexed with other fields than the new rows), and gains
// the new ones.
func (p *pending) flush(tx *gorm.DB, d *dialect) error {
	old, rows, attrs, events := p.old, p.rows, p.attrs, p.events
	p.old, p.rows, p.attrs, p.events, p.clusters = nil, nil, nil, nil, nil
	var t tally
	for start := 0; start < len(old); start += keyChunk {
		chunk := old[start:min(start+keyChunk, len(old))]
		revs := make([]int64, len(chunk))
		keys := make(map[int64]*KeyColumns, len(chunk))
		for i, r := range chunk {
			revs[i], keys[r.Revision] = r.Revision, &r.KeyColumns
		}
		var oldAttrs []attributeRow
		if err := tx.Where("resource_revision IN ?", revs).Find(&oldAttrs).Error; err != nil {
			return err
		}
		t.objects(keys, -1)
		t.attributes(keys, oldAttrs, -1)
		if err := tx.Where("resource_revision IN ?", revs).Delete(&attributeRow{}).Error; err != nil {
			return err
		}
		if err := tx.Where("revision IN ?", revs).Delete(&resourceRow{}).Error; err != nil {
			return err
		}
	}
	if err := insertChunked(tx, d.insertRows, rows, func(r *resourceRow) int { return len(r.Object) }); err != nil {
		return err
	}
	if err := insertChunked(tx, d.insertRows, attrs, func(*attributeRow) int { return 64 }); err != nil {
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
	return insertChunked(tx, d.insertRows, events, func(e *eventRow) int { return len(e.Object) + len(e.PrevObject) })
}
