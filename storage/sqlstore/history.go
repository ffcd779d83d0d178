package sqlstore

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"time"

	"gorm.io/gorm"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/panorama-io/panorama/storage"
	"github.com/panorama-io/panorama/storage/delta"
)

// History. Compaction does not drop the log's entries: it turns each into
// a history row, which keeps what turns the object after the change back
// into the one before (historyRow.Patch). The newest state of an object is
// its row in resources, or the log, so its older states are rebuilt
// backwards from there, one row a change. Each compaction step moves its
// entries in one transaction and the steps go up in revision order, so at
// every snapshot a revision is in one table or the other, and the history
// rows of an object precede its log entries. ExpireHistory drops the rows
// committed before a time, and raises the mark below which history reads
// answer TooOld.

type historyRow struct {
	Revision int64  `gorm:"column:revision;primaryKey;autoIncrement:false"`
	Type     string `gorm:"column:type"`
	KeyColumns
	// Created is as eventRow's: what a page ordered by creation seeks on.
	Created int64 `gorm:"column:created_at"`
	// Committed is when the change was written, in Unix microseconds; 0
	// when not known.
	Committed             int64  `gorm:"column:committed_at"`
	MemberResourceVersion string `gorm:"column:member_resource_version"`
	// Patch turns the object after the change into the one before: for
	// MODIFIED, the object before kept against the one after (package
	// delta) behind keptAgainstNext, or a reverse merge patch as rows
	// written before were; the last state for DELETED; nil for ADDED. Else
	// than a delta, compressed as objects are (blob.go), or JSON as rows
	// written before were.
	Patch []byte `gorm:"column:patch"`
}

// keptAgainstNext begins a Patch that is the object before the change
// kept against the one after it: neither JSON nor a zstd frame begin with
// a zero byte. A merge patch replaces an array whole when one of its items
// changed, and Kubernetes objects keep much in arrays (managed fields,
// conditions, container statuses): a pod's status change takes a fraction
// as a delta of what it took as a compressed patch (BenchmarkHistoryBytes).
var keptAgainstNext = []byte{0, 'd', 1}

func (historyRow) TableName() string { return historyTable }

// before returns the object before the change h, given after, the one
// after it.
func (h *historyRow) before(after []byte) ([]byte, error) {
	if watch.EventType(h.Type) == watch.Added {
		return nil, nil
	}
	if watch.EventType(h.Type) == watch.Deleted {
		return decodeBlob(h.Patch)
	}
	if after == nil {
		return nil, fmt.Errorf("history of %s/%s: revision %d modified an absent object", h.Namespace, h.Name, h.Revision)
	}
	if kept, ok := bytes.CutPrefix(h.Patch, keptAgainstNext); ok {
		before, err := delta.Decode(kept, after)
		if err != nil {
			return nil, fmt.Errorf("history of %s/%s at revision %d: %w", h.Namespace, h.Name, h.Revision, err)
		}
		return before, nil
	}
	patch, err := decodeBlob(h.Patch)
	if err != nil {
		return nil, err
	}
	return storage.ApplyPatch(after, patch)
}

type revisionTimeRow struct {
	// Revision is the first of a write group's.
	Revision  int64 `gorm:"column:revision;primaryKey;autoIncrement:false"`
	Committed int64 `gorm:"column:committed_at"`
}

func (revisionTimeRow) TableName() string { return revisionTimesTable }

// compactStep bounds one DELETE of the log, so compaction never holds a
// huge transaction.
const compactStep = 5000

// historyStep bounds the log entries one transaction of Compact turns into
// history: it holds each of them twice in memory.
const historyStep = 500

// Compact implements storage.Maintainer.
func (s *Store) Compact(ctx context.Context, revision int64, keepHistory bool) error {
	db := s.db.WithContext(ctx)
	current, compacted, err := revisions(db)
	if err != nil {
		return err
	}
	if revision > current {
		return &storage.TooLargeError{Requested: revision, Current: current}
	}
	if revision <= compacted {
		return nil
	}
	// Raise the marks first: from then on no reader relies on what is dropped.
	if err := raise(db, metaCompacted, revision); err != nil {
		return err
	}
	if !keepHistory {
		if err := raise(db, metaHistoryExpired, revision); err != nil {
			return err
		}
		if err := deleteBelow(db, &historyRow{}, revision); err != nil {
			return err
		}
		if err := expireTimes(db, revision); err != nil {
			return err
		}
	}
	// The count summary's cells that writes emptied since the last time
	// (and any of keys it does not keep), and the dictionary's values
	// that no row has any more.
	if err := sweepSummary(db); err != nil {
		return err
	}
	if err := s.sweepDictionary(db); err != nil {
		return err
	}
	// From the oldest entry: a compaction that failed midway left its
	// entries, which this one moves first, so that history stays below the
	// log.
	var oldest *int64
	if err := db.Model(&eventRow{}).Select("MIN(revision)").Scan(&oldest).Error; err != nil || oldest == nil {
		return err
	}
	step := int64(compactStep)
	if keepHistory {
		step = historyStep
	}
	for lo := *oldest - 1; lo < revision; lo += step {
		hi := min(lo+step, revision)
		if !keepHistory {
			if err := db.Where("revision > ? AND revision <= ?", lo, hi).Delete(&eventRow{}).Error; err != nil {
				return err
			}
			continue
		}
		if err := db.Transaction(func(tx *gorm.DB) error { return s.keep(tx, lo, hi) }, s.dialect.writeTx); err != nil {
			return err
		}
	}
	// The entries dropped count as rows written and deleted: their space
	// is reused once vacuumed.
	s.wrote(revision-*oldest+1, revision-*oldest+1)
	return nil
}

// raise moves the meta value name up to v, never down.
func raise(db *gorm.DB, name string, v int64) error {
	return db.Model(&metaRow{}).Where("name = ? AND value < ?", name, v).Update("value", v).Error
}

// deleteBelow deletes the rows of model at or below revision, compactStep
// at a time from the oldest.
func deleteBelow(db *gorm.DB, model any, revision int64) error {
	var oldest *int64
	if err := db.Model(model).Select("MIN(revision)").Scan(&oldest).Error; err != nil || oldest == nil {
		return err
	}
	for lo := *oldest - 1; lo < revision; lo += compactStep {
		if err := db.Where("revision > ? AND revision <= ?", lo, min(lo+compactStep, revision)).Delete(model).Error; err != nil {
			return err
		}
	}
	return nil
}

// keep turns the log entries in (lo, hi] into history rows, but those of
// the clusters forgotten up to them (forget.go).
func (s *Store) keep(tx *gorm.DB, lo, hi int64) error {
	if err := lockCompaction(tx); err != nil {
		return err
	}
	forgotten, err := forgottenMarks(tx, lo)
	if err != nil {
		return err
	}
	var events []eventRow
	err = tx.Where("revision > ? AND revision <= ?", lo, hi).
		Not("api_group = ? AND version = ? AND resource = ?", storage.OpenAPIResource.Group, storage.OpenAPIResource.Version, storage.OpenAPIResource.Resource).
		Order("revision").Find(&events).Error
	if err != nil || len(events) == 0 {
		return err
	}
	// A pre-image the log kept against the next version is the history
	// row's patch as it is.
	keptPatch := map[int64][]byte{}
	for _, e := range events {
		if bytes.HasPrefix(e.PrevObject, keptAgainstNext) {
			keptPatch[e.Revision] = e.PrevObject
		}
	}
	// Every entry of the range but the OpenAPI documents', a resource of
	// its own: what resolveLog needs to find each key's next entry.
	if err := s.resolveLog(tx, events); err != nil {
		return err
	}
	times, err := groupTimes(tx, events[0].Revision, hi)
	if err != nil {
		return err
	}
	rows := make([]historyRow, 0, len(events))
	for i := range events {
		e := &events[i]
		if e.Revision <= forgotten[e.Cluster] {
			continue
		}
		h := historyRow{
			Revision: e.Revision, Type: e.Type, KeyColumns: e.KeyColumns, Created: e.Created, Committed: times.at(e.Revision),
		}
		state := e.Object
		switch watch.EventType(e.Type) {
		case watch.Deleted:
			state, h.Patch = e.PrevObject, encodeBlob(e.PrevObject)
		case watch.Modified:
			if h.Patch = keptPatch[e.Revision]; h.Patch == nil {
				h.Patch = append(slices.Clip(keptAgainstNext), delta.Encode(e.PrevObject, e.Object)...)
			}
		}
		h.MemberResourceVersion = memberResourceVersion(state)
		rows = append(rows, h)
	}
	if err := insertChunked(tx, s.dialect, rows, func(h *historyRow) int { return len(h.Patch) + 256 }); err != nil {
		return err
	}
	return tx.Where("revision > ? AND revision <= ?", lo, hi).Delete(&eventRow{}).Error
}

// memberResourceVersion reads the annotation of a stored object, without
// decoding the rest of it into values.
func memberResourceVersion(data []byte) string {
	var obj struct {
		Metadata struct {
			Annotations map[string]json.RawMessage `json:"annotations"`
		} `json:"metadata"`
	}
	var rv string
	if json.Unmarshal(data, &obj) == nil {
		_ = json.Unmarshal(obj.Metadata.Annotations[storage.MemberResourceVersionAnnotation], &rv)
	}
	return rv
}

// times are write groups' revision time rows, in revision order.
type times []revisionTimeRow

// at returns when revision was committed: the time of the last group that
// starts at or before it; 0 when none does.
func (t times) at(revision int64) int64 {
	i, found := slices.BinarySearchFunc(t, revision, func(r revisionTimeRow, rev int64) int { return int(r.Revision - rev) })
	switch {
	case found:
		return t[i].Committed
	case i > 0:
		return t[i-1].Committed
	}
	return 0
}

// groupTimes reads the time rows of the groups that wrote revisions lo to hi.
func groupTimes(tx *gorm.DB, lo, hi int64) (times, error) {
	var first, rest []revisionTimeRow
	if err := tx.Where("revision <= ?", lo).Order("revision DESC").Limit(1).Find(&first).Error; err != nil {
		return nil, err
	}
	if err := tx.Where("revision > ? AND revision <= ?", lo, hi).Order("revision").Find(&rest).Error; err != nil {
		return nil, err
	}
	return append(first, rest...), nil
}

// ExpireHistory implements storage.Maintainer. What it drops is below the
// first group committed at or after before (or, when none was, below the
// last one), so a time in the window always finds the group it falls in.
func (s *Store) ExpireHistory(ctx context.Context, before time.Time) error {
	db := s.db.WithContext(ctx)
	var first *int64
	if err := db.Model(&revisionTimeRow{}).Select("MIN(revision)").Where("committed_at >= ?", before.UnixMicro()).Scan(&first).Error; err != nil {
		return err
	}
	if first == nil {
		if err := db.Model(&revisionTimeRow{}).Select("MAX(revision)").Scan(&first).Error; err != nil || first == nil {
			return err
		}
	}
	mark := *first - 1
	if err := raise(db, metaHistoryExpired, mark); err != nil {
		return err
	}
	if err := deleteBelow(db, &historyRow{}, mark); err != nil {
		return err
	}
	return expireTimes(db, mark)
}

// expireTimes deletes the time rows of the groups that wrote only
// revisions at or below mark: the group of mark+1 keeps its time.
func expireTimes(db *gorm.DB, mark int64) error {
	var cover *int64
	if err := db.Model(&revisionTimeRow{}).Select("MAX(revision)").Where("revision <= ?", mark+1).Scan(&cover).Error; err != nil || cover == nil {
		return err
	}
	return deleteBelow(db, &revisionTimeRow{}, *cover-1)
}

// RevisionAt implements storage.Reader.
func (s *Store) RevisionAt(ctx context.Context, t time.Time) (int64, error) {
	var rev int64
	err := s.read(ctx, func(tx *gorm.DB) error {
		current, _, err := revisions(tx)
		if err != nil {
			return err
		}
		expired, err := metaValue(tx, metaHistoryExpired)
		if err != nil {
			return err
		}
		at := t.UnixMicro()
		var known []int64
		if err := tx.Model(&revisionTimeRow{}).Where("committed_at <= ?", at).Limit(1).Pluck("revision", &known).Error; err != nil {
			return err
		}
		if len(known) == 0 {
			return &storage.TooOldError{Requested: 0, Compacted: expired}
		}
		var next *int64
		if err := tx.Model(&revisionTimeRow{}).Select("MIN(revision)").Where("committed_at > ?", at).Scan(&next).Error; err != nil {
			return err
		}
		rev = current
		if next != nil {
			rev = *next - 1
		}
		if rev < expired {
			return &storage.TooOldError{Requested: rev, Compacted: expired}
		}
		return nil
	})
	return rev, err
}

// ObjectHistory implements storage.Reader.
func (s *Store) ObjectHistory(ctx context.Context, key storage.Key, limit int) ([]storage.Version, error) {
	if !storableKey(key) {
		return nil, storage.ErrNotFound
	}
	var out []storage.Version
	err := s.read(ctx, func(tx *gorm.DB) error {
		expired, err := metaValue(tx, metaHistoryExpired)
		if err != nil {
			return err
		}
		// A cluster of the key's name deleted before has left nothing
		// of its own here.
		forgotten, err := clusterMark(tx, key.Cluster, markForgotten)
		if err != nil {
			return err
		}
		ofKey := func(model any) *gorm.DB {
			return whereResource(tx.Model(model), key.GVR).
				Where("cluster = ? AND namespace = ? AND name = ? AND revision > ?", key.Cluster, key.Namespace, key.Name, max(expired, forgotten))
		}
		// The log holds a few compaction intervals: read whole. History
		// rows are rebuilt from the newest back, so the last are enough.
		var log []eventRow
		if err := ofKey(&eventRow{}).Order("revision").Find(&log).Error; err != nil {
			return err
		}
		if limit > 0 && len(log) > limit {
			log = log[len(log)-limit:]
		}
		// Every entry of the key after the first kept: each one's next is
		// among them.
		if err := s.resolveLog(tx, log); err != nil {
			return err
		}
		var hist []historyRow
		if limit == 0 || len(log) < limit {
			newest := ofKey(&historyRow{}).Order("revision DESC")
			if limit > 0 {
				newest = newest.Limit(limit - len(log))
			}
			if err := newest.Find(&hist).Error; err != nil {
				return err
			}
			slices.Reverse(hist)
		}
		if len(hist)+len(log) == 0 {
			return storage.ErrNotFound
		}
		out = make([]storage.Version, len(hist)+len(log))
		// The log holds each state; history rows rebuild theirs backwards
		// from the state after the last of them.
		for i := range log {
			e := &log[i]
			v := storage.Version{Revision: e.Revision, Type: watch.EventType(e.Type), Object: e.Object}
			if v.Type == watch.Deleted {
				v.Object = e.PrevObject
			}
			at, err := committedAt(tx, e.Revision)
			if err != nil {
				return err
			}
			v.Time, v.MemberResourceVersion = microTime(at), memberResourceVersion(v.Object)
			if v.Patch, err = storage.VersionPatch(v.Type, e.PrevObject, v.Object); err != nil {
				return err
			}
			out[len(hist)+i] = v
		}
		var after []byte
		switch {
		case len(hist) == 0:
		case len(log) > 0:
			after = log[0].PrevObject
		case hist[len(hist)-1].Type != string(watch.Deleted):
			var row resourceRow
			if err := tx.Select("object").Where("revision = ?", hist[len(hist)-1].Revision).Take(&row).Error; err != nil {
				return fmt.Errorf("the current state of %s/%s: %w", key.Namespace, key.Name, err)
			}
			if after, err = decodeBlob(row.Object); err != nil {
				return err
			}
		}
		for i := len(hist) - 1; i >= 0; i-- {
			h := &hist[i]
			before, err := h.before(after)
			if err != nil {
				return err
			}
			v := storage.Version{
				Revision: h.Revision, Type: watch.EventType(h.Type), Time: microTime(h.Committed),
				MemberResourceVersion: h.MemberResourceVersion, Object: after,
			}
			if v.Type == watch.Deleted {
				v.Object = before
			}
			if v.Patch, err = storage.VersionPatch(v.Type, before, v.Object); err != nil {
				return err
			}
			out[i] = v
			after = before
		}
		return nil
	})
	return out, err
}

// committedAt returns when revision was committed, in Unix microseconds; 0
// when not known.
func committedAt(tx *gorm.DB, revision int64) (int64, error) {
	var rows []revisionTimeRow
	err := tx.Where("revision <= ?", revision).Order("revision DESC").Limit(1).Find(&rows).Error
	if err != nil || len(rows) == 0 {
		return 0, err
	}
	return rows[0].Committed, nil
}

func microTime(us int64) time.Time {
	if us == 0 {
		return time.Time{}
	}
	return time.UnixMicro(us).UTC()
}

// checkHistory says whether a list may read rev, which is below the
// compacted revision: only from the history, down to its mark.
func checkHistory(tx *gorm.DB, q *storage.ListQuery, rev, compacted int64) error {
	if !q.History {
		return &storage.TooOldError{Requested: rev, Compacted: compacted}
	}
	expired, err := metaValue(tx, metaHistoryExpired)
	if err != nil {
		return err
	}
	if rev < expired {
		return &storage.TooOldError{Requested: rev, Compacted: expired}
	}
	return nil
}

// historyStates returns the state at rev of the objects q selects that have
// history rows after rev in range (all of them when ranged is false), by
// key: nil for those that did not exist then. firstLog maps keys to their
// first log entry after rev, whose pre-image is the state after their last
// history row; the others' is their current row, unless they were deleted.
func historyStates(tx *gorm.DB, d *dialect, q *storage.ListQuery, rev int64, ranged func(*gorm.DB) *gorm.DB, firstLog map[storage.Key]int64) (map[storage.Key][]byte, error) {
	var rows []historyRow
	if err := ranged(keyFilter(tx.Model(&historyRow{}), q).Where("revision > ?", rev)).Order("revision").Find(&rows).Error; err != nil {
		return nil, err
	}
	byKey := map[storage.Key][]historyRow{}
	for _, h := range rows {
		k := storage.Key{Cluster: h.Cluster, GVR: q.GVR, Namespace: h.Namespace, Name: h.Name}
		byKey[k] = append(byKey[k], h)
	}
	// The state after each key's last history row: a pre-image in the log,
	// or the current row, which that change wrote.
	after := map[storage.Key][]byte{}
	var logRevs, rowRevs []int64
	logKey := map[int64]storage.Key{}
	rowKey := map[int64]storage.Key{}
	for k, hs := range byKey {
		last := hs[len(hs)-1]
		if r, ok := firstLog[k]; ok {
			logRevs, logKey[r] = append(logRevs, r), k
		} else if last.Type != string(watch.Deleted) {
			rowRevs, rowKey[last.Revision] = append(rowRevs, last.Revision), k
		}
	}
	preImages, err := preImagesAt(tx, d, logRevs)
	if err != nil {
		return nil, err
	}
	for rev, e := range preImages {
		after[logKey[rev]] = e.PrevObject
	}
	current, err := rowObjects(tx, rowRevs)
	if err != nil {
		return nil, err
	}
	for rev, object := range current {
		after[rowKey[rev]] = object
	}
	out := make(map[storage.Key][]byte, len(byKey))
	for k, hs := range byKey {
		state := after[k]
		for i := len(hs) - 1; i >= 0; i-- {
			var err error
			if state, err = hs[i].before(state); err != nil {
				return nil, err
			}
		}
		out[k] = state
	}
	return out, nil
}
