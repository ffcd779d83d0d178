package sqlstore

import (
	"bytes"
	"cmp"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"gorm.io/gorm"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	utiljson "k8s.io/apimachinery/pkg/util/json"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/panorama-io/panorama/storage"
	"github.com/panorama-io/panorama/storage/delta"
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
// A pre-image of a MODIFIED entry is kept against the entry's own object
// (package delta, behind keptAgainstNext as in the history): most changes
// rewrite a few fields, so it takes a small share of the object
// (BenchmarkBytesPerObject). Reading it needs the entry's object, found as
// above, itself perhaps a pre-image kept against the next one: at most
// maxDeltaChain pre-images of a key in a row are kept so (the resources
// row counts them, delta_chain), the next one whole, which bounds that
// walk. A DELETED entry's pre-image, the last state, has nothing to be
// kept against, and a Secret's are whole: DropSecretData rewrites its
// states in place, which would change the bases of the ones before.
//
// Compaction drops entries in revision order, each with its pre-image: a
// pre-image lives as long as the entry that replaced it, which outlives
// the entry whose object it is, so it is kept as long as a list at an
// older revision or a watch can ask for either; and a pre-image is kept
// against a later state, which compaction drops after it. Entries written
// before this layout hold their object in full, and objects of either
// table may be stored compressed or not (blob.go). resolveLog and
// preImagesAt are the readers of this layout: whatever reads entries from
// the table has them resolved.

// storedElsewhere is the object column of an entry whose object another
// row holds.
var storedElsewhere = []byte{}

// resolveLog turns the objects of log entries, as read from the events
// table, into JSON: an object left empty is read from the row that holds
// it, objects and pre-images are decoded. The entries must have been read
// in tx, a snapshot of the log and of resources, with their key columns
// and type, and be every entry of their range of revisions (of every
// resource, or of the one they are of), so that the next entry of a key
// among them is its next in the log. Their pre-images are decoded where
// they were read (History), and read where an entry needs one: its own
// (DELETED), or its next entry's.
//
// The entries are resolved newest first, so that an entry's next among
// them, whose pre-image is its object and is kept against the next's own
// object, is resolved before it: only the last entry of each key replaced
// after them is read by steps beyond them (preImagesAt).
func (s *Store) resolveLog(tx *gorm.DB, entries []eventRow) error {
	var live []int64
	for i := range entries {
		e := &entries[i]
		if len(e.Object) > 0 { // logged before each version was stored once
			var err error
			if e.Object, err = decodeBlob(e.Object); err != nil {
				return err
			}
			continue
		}
		e.Object = nil // storedElsewhere, or not read: resolved below
		if watch.EventType(e.Type) != watch.Deleted {
			live = append(live, e.Revision)
		}
	}
	current, err := rowObjects(tx, live)
	if err != nil {
		return err
	}
	order := make([]*eventRow, 0, len(entries))
	for i := range entries {
		order = append(order, &entries[i])
	}
	slices.SortFunc(order, func(a, b *eventRow) int { return cmp.Compare(b.Revision, a.Revision) })
	nextOf := map[storage.Key]*eventRow{}
	next := map[*eventRow]*eventRow{} // a replaced entry -> its key's next among entries
	var beyond []*eventRow           // replaced entries whose next is not among entries
	var unread []int64               // entries whose pre-image is needed and was not read
	needs := func(e *eventRow) {
		if e.PrevObject == nil {
			unread = append(unread, e.Revision)
		}
	}
	for _, e := range order {
		switch {
		case len(e.Object) > 0:
		case watch.EventType(e.Type) == watch.Deleted:
			needs(e)
		case current[e.Revision] != nil:
			e.Object = current[e.Revision]
		case nextOf[e.key()] != nil:
			n := nextOf[e.key()]
			next[e] = n
			needs(n)
		default:
			beyond = append(beyond, e)
		}
		nextOf[e.key()] = e
	}
	read, err := storedPreImages(tx, unread)
	if err != nil {
		return err
	}
	for _, e := range order {
		if p, ok := read[e.Revision]; ok {
			e.PrevObject = p
		}
	}
	// The first entries after them, resolved in turn.
	preImageOf := map[int64][]int64{}
	if err := nextEntries(tx, beyond, preImageOf); err != nil {
		return err
	}
	holders := make([]int64, 0, len(preImageOf))
	for rev := range preImageOf {
		holders = append(holders, rev)
	}
	after, err := preImagesAt(tx, holders)
	if err != nil {
		return err
	}
	replacedAfter := map[int64][]byte{}
	for holder, revs := range preImageOf {
		h, ok := after[holder]
		if !ok {
			return fmt.Errorf("log entry %d, which replaced the objects of others, is missing", holder)
		}
		for _, rev := range revs {
			replacedAfter[rev] = h.PrevObject
		}
	}
	for _, e := range order { // newest first
		if e.Object == nil && watch.EventType(e.Type) != watch.Deleted {
			if n := next[e]; n != nil {
				e.Object = n.PrevObject // resolved before e
			} else {
				e.Object = replacedAfter[e.Revision]
			}
			if e.Object == nil {
				return fmt.Errorf("log entry %d: its object is neither current nor a later entry's pre-image", e.Revision)
			}
		}
		if e.PrevObject != nil {
			if e.PrevObject, err = preImage(e, e.Object); err != nil {
				return err
			}
		}
		if e.Object == nil { // DELETED: the last state, at the deletion's revision
			if e.PrevObject == nil {
				return fmt.Errorf("log entry %d deleted an object but holds none", e.Revision)
			}
			if e.Object, err = withRevision(e.PrevObject, e.Revision); err != nil {
				return err
			}
		}
	}
	return nil
}

// storedPreImages reads the pre-images of the log entries at revs as
// stored, by revision.
func storedPreImages(tx *gorm.DB, revs []int64) (map[int64][]byte, error) {
	out := make(map[int64][]byte, len(revs))
	for start := 0; start < len(revs); start += keyChunk {
		var rows []eventRow
		if err := tx.Select("revision", "prev_object").Where("revision IN ?", revs[start:min(start+keyChunk, len(revs))]).Find(&rows).Error; err != nil {
			return nil, err
		}
		for _, r := range rows {
			out[r.Revision] = r.PrevObject
		}
	}
	return out, nil
}

// preImagesAt reads the log entries at revs, but their objects, with
// their pre-images as JSON, by revision; entries absent are absent from
// the map. Those kept against their entry's object are decoded against it
// (objectsOf).
func preImagesAt(tx *gorm.DB, revs []int64) (map[int64]*eventRow, error) {
	out := make(map[int64]*eventRow, len(revs))
	var againstOwn []*eventRow
	for start := 0; start < len(revs); start += keyChunk {
		var rows []eventRow
		if err := tx.Omit("object").Where("revision IN ?", revs[start:min(start+keyChunk, len(revs))]).Find(&rows).Error; err != nil {
			return nil, err
		}
		for i := range rows {
			e := &rows[i]
			out[e.Revision] = e
			if bytes.HasPrefix(e.PrevObject, keptAgainstNext) {
				againstOwn = append(againstOwn, e)
				continue
			}
			var err error
			if e.PrevObject, err = decodeBlob(e.PrevObject); err != nil {
				return nil, err
			}
		}
	}
	if len(againstOwn) == 0 {
		return out, nil
	}
	own, err := objectsOf(tx, againstOwn)
	if err != nil {
		return nil, err
	}
	for _, e := range againstOwn {
		if e.PrevObject, err = preImage(e, own[e.Revision]); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// objectsOf returns the objects that entries, ADDED or MODIFIED, wrote, by
// revision: their resources row while it is current, else the pre-image of
// the key's next entry. Each step to a next entry is a pre-image kept
// against a later state, of which a key has at most maxDeltaChain in a
// row, so the steps end.
func objectsOf(tx *gorm.DB, entries []*eventRow) (map[int64][]byte, error) {
	revs := make([]int64, len(entries))
	for i, e := range entries {
		revs[i] = e.Revision
	}
	out, err := rowObjects(tx, revs)
	if err != nil {
		return nil, err
	}
	var replaced []*eventRow
	for _, e := range entries {
		if _, ok := out[e.Revision]; !ok {
			replaced = append(replaced, e)
		}
	}
	preImageOf := map[int64][]int64{}
	if err := nextEntries(tx, replaced, preImageOf); err != nil {
		return nil, err
	}
	holders := make([]int64, 0, len(preImageOf))
	for rev := range preImageOf {
		holders = append(holders, rev)
	}
	next, err := preImagesAt(tx, holders)
	if err != nil {
		return nil, err
	}
	for holder, revs := range preImageOf {
		h, ok := next[holder]
		if !ok {
			return nil, fmt.Errorf("log entry %d, which replaced the objects of others, is missing", holder)
		}
		for _, rev := range revs {
			out[rev] = h.PrevObject
		}
	}
	return out, nil
}

// preImage returns e's pre-image, as read, as JSON: own is the object e
// wrote, which a pre-image kept against it needs.
func preImage(e *eventRow, own []byte) ([]byte, error) {
	kept, ok := bytes.CutPrefix(e.PrevObject, keptAgainstNext)
	if !ok {
		return decodeBlob(e.PrevObject)
	}
	if own == nil {
		return nil, fmt.Errorf("log entry %d: its pre-image is kept against its object, which is missing", e.Revision)
	}
	prev, err := delta.Decode(kept, own)
	if err != nil {
		return nil, fmt.Errorf("log entry %d: %w", e.Revision, err)
	}
	return prev, nil
}

// maxDeltaChain is how many pre-images of a key in a row the log keeps
// against the next state: reading an entry's object decodes at most as
// many, each one query more.
const maxDeltaChain = 8

// preImageAgainstNext says whether the writer keeps old's object, replaced
// by a change of gvr, against the object that replaces it.
func preImageAgainstNext(gvr schema.GroupVersionResource, old *resourceRow) bool {
	return gvr != storage.SecretsResource && old.DeltaChain < maxDeltaChain
}

// rowObjects reads the objects of the resources rows at revs,
// decompressed, by revision; rows absent are absent from the map.
func rowObjects(tx *gorm.DB, revs []int64) (map[int64][]byte, error) {
	out := make(map[int64][]byte, len(revs))
	for start := 0; start < len(revs); start += keyChunk {
		var rows []struct {
			Revision int64
			Data     []byte
		}
		if err := tx.Table(resourcesTable).Select("revision, object AS data").Where("revision IN ?", revs[start:min(start+keyChunk, len(revs))]).Scan(&rows).Error; err != nil {
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
func nextEntries(tx *gorm.DB, entries []*eventRow, preImageOf map[int64][]int64) error {
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
