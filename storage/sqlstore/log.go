package sqlstore

import (
	"bytes"
	"cmp"
	"fmt"
	"maps"
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
//     while that row is current (a row is found by the revision that
//     wrote it, which the next change of its object rewrites), else in
//     the prev_object of the key's next entry, which replaced it.
//   - DELETED: its prev_object, with resourceVersion set to the entry's
//     revision.
//
// A pre-image of a MODIFIED entry is kept against the entry's own object
// (package delta, behind keptAgainstNext as in the history): most changes
// rewrite a few fields, so it takes a small share of the object
// (BenchmarkBytesPerObject). Reading it needs the entry's object, found as
// above, itself perhaps a pre-image kept against the next one: at most
// maxDeltaChain pre-images of a key in a row are kept so (the resources
// row counts them, delta_chain), the next one whole, which bounds the
// entries that walk reads. A DELETED entry's pre-image, the last state,
// has nothing to be kept against, and a Secret's are whole: DropSecretData
// rewrites its states in place, which would change the bases of the ones
// before.
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
// object, is resolved before it: only for the last entry of each key
// replaced after them are the entries beyond them read (replacedObjects).
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
	var beyond []*eventRow            // replaced entries whose next is not among entries
	var unread []int64                // entries whose pre-image is needed and was not read
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
	// Those replaced after them: from the entries that follow.
	replacedAfter, err := replacedObjects(tx, s.dialect, beyond)
	if err != nil {
		return err
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
func preImagesAt(tx *gorm.DB, d *dialect, revs []int64) (map[int64]*eventRow, error) {
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
			}
		}
	}
	own, err := objectsOf(tx, d, againstOwn)
	if err != nil {
		return nil, err
	}
	for _, e := range out {
		if e.PrevObject, err = preImage(e, own[e.Revision]); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// objectsOf returns the objects that entries, ADDED or MODIFIED, wrote, by
// revision: their resources row while it is current, else the pre-image of
// the key's next entry, kept whole or against the object that entry wrote,
// and so on. A key keeps at most maxDeltaChain pre-images in a row against
// the next state, so the entries after a replaced one up to
// maxDeltaChain+1 reach a whole pre-image or the current row: they are
// read in one range of events_key each, and decoded newest first.
func objectsOf(tx *gorm.DB, d *dialect, entries []*eventRow) (map[int64][]byte, error) {
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
	objects, err := replacedObjects(tx, d, replaced)
	if err != nil {
		return nil, err
	}
	maps.Copy(out, objects)
	return out, nil
}

// replacedObjects returns the objects that entries, ADDED or MODIFIED and
// replaced since, wrote, by revision (objectsOf).
func replacedObjects(tx *gorm.DB, d *dialect, replaced []*eventRow) (map[int64][]byte, error) {
	later, err := laterEntries(tx, d, replaced, maxDeltaChain+1)
	if err != nil {
		return nil, err
	}
	// Of the entries read, only a key's last may have written its current
	// row: no later one was read.
	var last []int64
	for _, es := range later {
		if e := es[len(es)-1]; watch.EventType(e.Type) != watch.Deleted {
			last = append(last, e.Revision)
		}
	}
	current, err := rowObjects(tx, last)
	if err != nil {
		return nil, err
	}
	out := make(map[int64][]byte, len(replaced))
	decoded := map[int64][]byte{} // pre-images as JSON, by revision
	for _, e := range replaced {
		es := later[e.key()]
		first := slices.IndexFunc(es, func(n eventRow) bool { return n.Revision > e.Revision })
		if first < 0 {
			return nil, fmt.Errorf("log entry %d: its object is neither current nor a later entry's pre-image", e.Revision)
		}
		// The first entry from there whose pre-image reads alone: whole,
		// or against the current row; then back to first, each pre-image
		// against the one after.
		whole := first
		for whole < len(es) && bytes.HasPrefix(es[whole].PrevObject, keptAgainstNext) && current[es[whole].Revision] == nil {
			whole++
		}
		if whole == len(es) {
			return nil, fmt.Errorf("log entry %d: none of the %d entries of its key after it holds a whole pre-image", e.Revision, len(es))
		}
		for i := whole; i >= first; i-- {
			n := &es[i]
			if _, ok := decoded[n.Revision]; ok {
				continue
			}
			own := current[n.Revision]
			if i < whole {
				own = decoded[es[i+1].Revision]
			}
			if decoded[n.Revision], err = preImage(n, own); err != nil {
				return nil, err
			}
		}
		out[e.Revision] = decoded[es[first].Revision]
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
// against the next state: reading an entry's object reads and decodes at
// most one more of the key's entries than that.
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

// laterEntries reads the first n entries of the key of each of entries
// after it, with their type and pre-image as stored, by key in revision
// order. Each is a range on events_key with constant bounds, which every
// database seeks to (MariaDB reads every entry of the key for the same
// condition correlated to another row), several in one statement.
func laterEntries(tx *gorm.DB, d *dialect, entries []*eventRow, n int) (map[storage.Key][]eventRow, error) {
	later := "SELECT revision, type, api_group, version, resource, cluster, namespace, name, prev_object FROM " + eventsTable +
		" WHERE api_group = ? AND version = ? AND resource = ? AND cluster = ? AND namespace = ? AND name = ? AND revision > ? ORDER BY revision LIMIT ?"
	open, union, end := "SELECT * FROM (", ") later UNION ALL SELECT * FROM (", ") later"
	if d.parenthesizedUnion {
		open, union, end = "(", ") UNION ALL (", ")"
	}
	out := map[storage.Key][]eventRow{}
	seen := map[int64]bool{}
	for start := 0; start < len(entries); start += unionTerms {
		chunk := entries[start:min(start+unionTerms, len(entries))]
		selects := make([]string, len(chunk))
		args := make([]any, 0, 8*len(chunk))
		for i, e := range chunk {
			selects[i] = later
			args = append(args, e.Group, e.Version, e.Resource, e.Cluster, e.Namespace, e.Name, e.Revision, n)
		}
		var found []eventRow
		if err := tx.Raw(open+strings.Join(selects, union)+end, args...).Scan(&found).Error; err != nil {
			return nil, err
		}
		for _, f := range found {
			if !seen[f.Revision] { // two entries of a key read the same ones
				seen[f.Revision] = true
				out[f.key()] = append(out[f.key()], f)
			}
		}
	}
	for k := range out {
		slices.SortFunc(out[k], func(a, b eventRow) int { return cmp.Compare(a.Revision, b.Revision) })
	}
	return out, nil
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
