package sqlstore

import (
	"cmp"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"gorm.io/gorm"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utiljson "k8s.io/apimachinery/pkg/util/json"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/panorama-io/panorama/storage"
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
// read in tx, a snapshot of the log and of resources, with their key
// columns and type, and be every entry of their range of revisions (of
// every resource, or of the one they are of), so that the next entry of a
// key among them is its next in the log. Their pre-images are
// decompressed where they were read (History), and read where an entry
// needs its own (DELETED).
func (s *Store) resolveLog(tx *gorm.DB, entries []eventRow) error {
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
	current, err := blobsAt(tx, resourcesTable, "object", live)
	if err != nil {
		return err
	}
	replaced := map[int64]bool{}
	for _, rev := range live {
		if data, ok := current[rev]; ok {
			byRev[rev].Object = data
		} else {
			replaced[rev] = true
		}
	}
	// Objects replaced since: the pre-image of the key's next entry, among
	// the entries when it is there, else the first after them.
	preImageOf := map[int64][]int64{} // entry holding the pre-image -> entries whose object it is
	for _, rev := range deleted {
		preImageOf[rev] = append(preImageOf[rev], rev)
	}
	order := make([]*eventRow, 0, len(entries))
	for i := range entries {
		order = append(order, &entries[i])
	}
	slices.SortFunc(order, func(a, b *eventRow) int { return cmp.Compare(b.Revision, a.Revision) })
	nextOf := map[storage.Key]int64{}
	var beyond []*eventRow
	for _, e := range order { // newest first
		k := e.key()
		if replaced[e.Revision] {
			if next, ok := nextOf[k]; ok {
				preImageOf[next] = append(preImageOf[next], e.Revision)
			} else {
				beyond = append(beyond, e)
			}
		}
		nextOf[k] = e.Revision
	}
	if err := s.nextEntries(tx, beyond, preImageOf); err != nil {
		return err
	}
	holders := make([]int64, 0, len(preImageOf))
	for rev := range preImageOf {
		holders = append(holders, rev)
	}
	preImages, err := blobsAt(tx, eventsTable, "prev_object", holders)
	if err != nil {
		return err
	}
	for holder, prev := range preImages {
		for _, rev := range preImageOf[holder] {
			e := byRev[rev]
			if watch.EventType(e.Type) == watch.Deleted {
				if e.Object, err = withRevision(prev, rev); err != nil {
					return err
				}
			} else {
				e.Object = prev
			}
		}
		delete(preImageOf, holder)
	}
	if len(preImageOf) > 0 {
		return fmt.Errorf("%d log entries whose pre-images are other entries' objects are missing", len(preImageOf))
	}
	return nil
}

// blobsAt reads column, an object or pre-image, of the rows of table at
// revs (both tables are keyed by revision), decompressed, by revision;
// rows absent are absent from the map.
func blobsAt(tx *gorm.DB, table, column string, revs []int64) (map[int64][]byte, error) {
	out := make(map[int64][]byte, len(revs))
	for start := 0; start < len(revs); start += keyChunk {
		var rows []struct {
			Revision int64
			Data     []byte
		}
		if err := tx.Table(table).Select("revision, "+column+" AS data").Where("revision IN ?", revs[start:min(start+keyChunk, len(revs))]).Scan(&rows).Error; err != nil {
			return nil, err
		}
		for _, r := range rows {
			data, err := decodeBlob(r.Data)
			if err != nil {
				return nil, err
			}
			out[r.Revision] = data
		}
	}
	return out, nil
}

// unionTerms bounds the SELECTs one UNION ALL joins: SQLite takes at most
// 500.
const unionTerms = 400

// nextEntries adds to preImageOf the first entry of each of entries' keys
// after it. Each is a range on events_key with constant bounds, which
// every database seeks to (MariaDB reads every entry of the key for the
// same condition correlated to another row), several in one statement.
func (s *Store) nextEntries(tx *gorm.DB, entries []*eventRow, preImageOf map[int64][]int64) error {
	const next = "SELECT revision, (SELECT MIN(n.revision) FROM " + eventsTable + " n WHERE n.api_group = ? AND n.version = ?" +
		" AND n.resource = ? AND n.cluster = ? AND n.namespace = ? AND n.name = ? AND n.revision > ?) AS next FROM " + eventsTable + " WHERE revision = ?"
	for start := 0; start < len(entries); start += unionTerms {
		chunk := entries[start:min(start+unionTerms, len(entries))]
		selects := make([]string, len(chunk))
		args := make([]any, 0, 8*len(chunk))
		for i, e := range chunk {
			selects[i] = next
			args = append(args, e.Group, e.Version, e.Resource, e.Cluster, e.Namespace, e.Name, e.Revision, e.Revision)
		}
		var found []struct {
			Revision int64
			Next     *int64
		}
		if err := tx.Raw(strings.Join(selects, " UNION ALL "), args...).Scan(&found).Error; err != nil {
			return err
		}
		for _, f := range found {
			if f.Next == nil {
				return fmt.Errorf("log entry %d: its object is neither current nor replaced by a later entry", f.Revision)
			}
			preImageOf[*f.Next] = append(preImageOf[*f.Next], f.Revision)
		}
	}
	return nil
}

// withRevision returns data with metadata.resourceVersion set to rev: a
// DELETED event carries the last state at the deletion's revision. It is
// decoded as a member's objects are, integers as int64: as float64, one
// beyond 2^53 came back changed.
func withRevision(data []byte, rev int64) ([]byte, error) {
	var obj map[string]any
	if err := utiljson.Unmarshal(data, &obj); err != nil {
		return nil, err
	}
	u := unstructured.Unstructured{Object: obj}
	u.SetResourceVersion(strconv.FormatInt(rev, 10))
	return objectJSON(u.Object)
}
