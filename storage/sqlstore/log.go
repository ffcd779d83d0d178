package sqlstore

import (
	"encoding/json"
	"fmt"
	"strconv"

	"gorm.io/gorm"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/watch"
)

// The log stores each version of an object once. A version is written as
// the resources row of the revision that made it; when a later change
// replaces or deletes that row, the row's object moves to the change's
// entry as its prev_object. So an entry's own object is left empty
// (storedElsewhere) and found where it is:
//
//   - ADDED or MODIFIED: in the resources row of the entry's revision
//     while that row is current (resources is keyed by the revision that
//     wrote it), else in the prev_object of the key's next entry, which
//     replaced it.
//   - DELETED: its prev_object, with resourceVersion set to the entry's
//     revision.
//
// Compaction drops entries in revision order, each with its pre-image: a
// pre-image lives as long as the entry that replaced it, which outlives
// the entry whose object it is, so it is kept as long as a list at an
// older revision or a watch can ask for either. Entries written before
// this layout hold their object in full, and objects of either table may
// be stored compressed or not (blob.go). resolveLog is the one reader of
// this layout: whatever reads entries from the table has them resolved.

// storedElsewhere is the object column of an entry whose object another
// row holds.
var storedElsewhere = []byte{}

// resolveLog turns the objects of log entries, as read from the events
// table, into JSON: an object left empty is read from the row that holds
// it, objects and pre-images are decompressed. The entries must have been
// read in tx, a snapshot of the log and of resources, and with their key
// columns and type; their pre-images are decompressed where they were read
// (History), and read where an entry needs its own (DELETED).
func resolveLog(tx *gorm.DB, entries []eventRow) error {
	var live, deleted []int64
	byRev := make(map[int64]*eventRow, len(entries))
	for i := range entries {
		e := &entries[i]
		byRev[e.Revision] = e
		var err error
		if e.PrevObject, err = decodeBlob(e.PrevObject); err != nil {
			return err
		}
		switch {
		case len(e.Object) > 0:
			if e.Object, err = decodeBlob(e.Object); err != nil {
				return err
			}
		case watch.EventType(e.Type) == watch.Deleted && e.PrevObject != nil:
			if e.Object, err = withRevision(e.PrevObject, e.Revision); err != nil {
				return err
			}
		case watch.EventType(e.Type) == watch.Deleted:
			deleted = append(deleted, e.Revision)
		default:
			live = append(live, e.Revision)
		}
	}
	// Objects still current.
	var replaced []int64
	for start := 0; start < len(live); start += keyChunk {
		chunk := live[start:min(start+keyChunk, len(live))]
		var rows []resourceRow
		if err := tx.Select("revision", "object").Where("revision IN ?", chunk).Find(&rows).Error; err != nil {
			return err
		}
		found := make(map[int64]bool, len(rows))
		for _, r := range rows {
			found[r.Revision] = true
			var err error
			if byRev[r.Revision].Object, err = decodeBlob(r.Object); err != nil {
				return err
			}
		}
		for _, rev := range chunk {
			if !found[rev] {
				replaced = append(replaced, rev)
			}
		}
	}
	// Objects replaced since: the pre-image of the key's next entry, found
	// on events_key.
	preImageOf := map[int64][]int64{} // entry holding the pre-image -> entries whose object it is
	for _, rev := range deleted {
		preImageOf[rev] = append(preImageOf[rev], rev)
	}
	for start := 0; start < len(replaced); start += keyChunk {
		var next []struct {
			Revision int64
			Next     *int64
		}
		err := tx.Raw("SELECT e.revision AS revision, (SELECT MIN(n.revision) FROM "+eventsTable+" n WHERE n.api_group = e.api_group AND n.version = e.version"+
			" AND n.resource = e.resource AND n.cluster = e.cluster AND n.namespace = e.namespace AND n.name = e.name AND n.revision > e.revision) AS next"+
			" FROM "+eventsTable+" e WHERE e.revision IN ?", replaced[start:min(start+keyChunk, len(replaced))]).Scan(&next).Error
		if err != nil {
			return err
		}
		for _, n := range next {
			if n.Next == nil {
				return fmt.Errorf("log entry %d: its object is neither current nor replaced by a later entry", n.Revision)
			}
			preImageOf[*n.Next] = append(preImageOf[*n.Next], n.Revision)
		}
	}
	holders := make([]int64, 0, len(preImageOf))
	for rev := range preImageOf {
		holders = append(holders, rev)
	}
	for start := 0; start < len(holders); start += keyChunk {
		var rows []eventRow
		if err := tx.Select("revision", "prev_object").Where("revision IN ?", holders[start:min(start+keyChunk, len(holders))]).Find(&rows).Error; err != nil {
			return err
		}
		for _, r := range rows {
			prev, err := decodeBlob(r.PrevObject)
			if err != nil {
				return err
			}
			for _, rev := range preImageOf[r.Revision] {
				e := byRev[rev]
				if watch.EventType(e.Type) == watch.Deleted {
					if e.Object, err = withRevision(prev, rev); err != nil {
						return err
					}
				} else {
					e.Object = prev
				}
			}
			delete(preImageOf, r.Revision)
		}
	}
	if len(preImageOf) > 0 {
		return fmt.Errorf("%d log entries hold pre-images that other entries' objects are, and are missing", len(preImageOf))
	}
	return nil
}

// withRevision returns data with metadata.resourceVersion set to rev: a
// DELETED event carries the last state at the deletion's revision.
func withRevision(data []byte, rev int64) ([]byte, error) {
	var obj map[string]any
	if err := json.Unmarshal(data, &obj); err != nil {
		return nil, err
	}
	u := unstructured.Unstructured{Object: obj}
	u.SetResourceVersion(strconv.FormatInt(rev, 10))
	return u.MarshalJSON()
}
