package sqlstore

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"time"

	"gorm.io/gorm"
	"gorm.io/gorm/clause"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/panorama-io/panorama/storage"
)

const (
	// keyChunk bounds the names of one IN list.
	keyChunk = 500
	// insertBytes bounds one multi-row INSERT, well under MySQL's default
	// max_allowed_packet, whatever the objects' size.
	insertBytes = 4 << 20
	// deleteChunk is how many rows one transaction of DeleteResource drops.
	deleteChunk = 1000
)

// op is one change that survives the skip rules, in batch order.
type op struct {
	typ  watch.EventType
	obj  *unstructured.Unstructured // ADDED, MODIFIED
	desc *storage.Object            // obj's, with the built-in fields
	old  *resourceRow               // MODIFIED, DELETED
	ns   string
	nm   string
	// listed: the object's values may be older than the write
	// (storage.Change.Listed).
	listed bool
}

// clusterWriter writes one cluster's objects under one owner epoch, which
// every batch it submits carries (checkFence).
type clusterWriter struct {
	s       *Store
	cluster string
	epoch   int64
}

// ForCluster implements storage.Writer.
func (s *Store) ForCluster(cluster string, epoch int64) storage.ClusterWriter {
	return &clusterWriter{s: s, cluster: cluster, epoch: epoch}
}

// submit submits a batch of w's cluster under w's epoch.
func (w *clusterWriter) submit(ctx context.Context, rows int, keys *keyLookup, fn batchFunc) (int64, error) {
	return w.s.submit(ctx, w.cluster, w.epoch, rows, keys, fn)
}

// Apply implements storage.ClusterWriter.
func (w *clusterWriter) Apply(ctx context.Context, gvr schema.GroupVersionResource, changes []storage.Change) (int64, error) {
	cluster := w.cluster
	if err := validateTarget(cluster, gvr); err != nil {
		return 0, err
	}
	// Objects are described here, before the write waits for the
	// counter: descs[i] is valid[i]'s.
	valid := changes
	descs := make([]storage.Object, 0, len(changes))
	var refused []storage.RefusedObject
	for i, c := range changes {
		d, err := describeChange(gvr.GroupResource(), c)
		if err != nil {
			if refused == nil {
				valid = slices.Clone(changes[:i])
			}
			refused = append(refused, storage.RefusedObject{NamespacedName: storage.NamespacedName{Namespace: c.Namespace, Name: c.Name}, Err: err})
			continue
		}
		if refused != nil {
			valid = append(valid, c)
		}
		descs = append(descs, d)
	}
	rev, err := w.submit(ctx, len(valid), newKeyLookup(gvr, valid), func(_ *gorm.DB, p *pending, base int64, stored storedRows) (int64, error) {
		ops := plan(valid, descs, stored)
		return int64(len(ops)), p.add(cluster, gvr, base, ops)
	})
	if err == nil && refused != nil {
		err = &storage.InvalidObjectError{Refused: refused}
	}
	return rev, err
}

// DeleteOrphans implements storage.Maintainer. What it removes leaves
// nothing behind that its Cluster would not store: the Secrets it removes
// lose their contents in the log and history too, and a cluster that keep
// does not name at all, whose Cluster is gone, its history
// (ForgetCluster).
func (s *Store) DeleteOrphans(ctx context.Context, keep []storage.ClusterResource, epochs map[string]int64) (int64, error) {
	kept := make(map[storage.ClusterResource]bool, len(keep))
	named := map[string]bool{}
	for _, k := range keep {
		kept[k] = true
		named[k.Cluster] = true
	}
	var stored []resourceRow
	if err := s.db.WithContext(ctx).Model(&resourceRow{}).Distinct("cluster", "api_group", "version", "resource").Find(&stored).Error; err != nil {
		return 0, err
	}
	rev, _, err := s.Revision(ctx)
	fenced := map[string]bool{}
	var removed []storage.ClusterResource
	writer := func(cluster string) storage.ClusterWriter {
		epoch, ok := epochs[cluster]
		if !ok {
			epoch = storage.NeverOwned
		}
		return s.ForCluster(cluster, epoch)
	}
	for _, r := range stored {
		cr := storage.ClusterResource{Cluster: r.Cluster, GVR: r.gvr()}
		if err != nil || kept[cr] || kept[storage.ClusterResource{Cluster: cr.Cluster}] || fenced[cr.Cluster] {
			continue
		}
		deleted, derr := writer(cr.Cluster).DeleteResource(ctx, cr.GVR)
		switch {
		case storage.IsFenced(derr):
			fenced[cr.Cluster] = true // taken over since keep was made: not orphaned
		case derr != nil:
			err = derr
		default:
			rev = deleted
			removed = append(removed, cr)
		}
	}
	forgotten := map[string]bool{}
	for _, cr := range removed {
		var ferr error
		switch {
		case err != nil || fenced[cr.Cluster] || forgotten[cr.Cluster]:
			continue
		case !named[cr.Cluster]:
			forgotten[cr.Cluster] = true
			ferr = writer(cr.Cluster).ForgetCluster(ctx)
		case cr.GVR == storage.SecretsResource:
			ferr = writer(cr.Cluster).DropSecretData(ctx)
		}
		if ferr != nil && !storage.IsFenced(ferr) {
			err = ferr
		}
	}
	return rev, err
}

// DeleteResource implements storage.ClusterWriter.
func (w *clusterWriter) DeleteResource(ctx context.Context, gvr schema.GroupVersionResource) (int64, error) {
	cluster := w.cluster
	rev, _, err := w.s.Revision(ctx)
	for err == nil {
		var n int64
		rev, err = w.submit(ctx, deleteChunk, nil, func(tx *gorm.DB, p *pending, base int64, _ storedRows) (int64, error) {
			q := tx.Where("cluster = ?", cluster)
			if !gvr.Empty() {
				q = whereResource(q, gvr)
			}
			var rows []resourceRow
			if err := q.Order("revision").Limit(deleteChunk).Find(&rows).Error; err != nil {
				return 0, err
			}
			// Rows of several resources: one log entry each, under its own key.
			byGVR := map[schema.GroupVersionResource][]op{}
			var order []schema.GroupVersionResource
			for i := range rows {
				r := &rows[i]
				g := r.gvr()
				if _, ok := byGVR[g]; !ok {
					order = append(order, g)
				}
				byGVR[g] = append(byGVR[g], op{typ: watch.Deleted, old: r, ns: r.Namespace, nm: r.Name})
			}
			next := base
			for _, g := range order {
				if err := p.add(cluster, g, next, byGVR[g]); err != nil {
					return 0, err
				}
				next += int64(len(byGVR[g]))
			}
			n = int64(len(rows))
			return n, nil
		})
		if n < deleteChunk {
			break
		}
	}
	return rev, err
}

// write runs the batches of group in one transaction that holds the
// revision counter, each from the revision the one before it left, until
// they have written groupBytes, and answers the callers of those it ran
// once they are committed. It returns how many it ran; on error, the
// batches it is to blame on: the one that failed, or those whose pending
// rows failed to be written, or none (the counter, the commit).
func (s *Store) write(group []*batch) (ran int, blamed []*batch, err error) {
	clock := newStageClock()
	ctx, cancel := groupContext(group)
	defer cancel()
	revs := make([]int64, 0, len(group))
	var base, next int64
	var p pending
	flushed := 0 // group[flushed:ran] have rows pending
	flush := func(tx *gorm.DB) error {
		defer clock.ended(stageWrite)
		if err := p.flush(tx, s.dialect); err != nil {
			blamed = slices.Clone(group[flushed:ran])
			return err
		}
		flushed = ran
		return nil
	}
	err = s.db.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
		// The counter, locked, and the version of the declared fields that
		// rows are indexed with (fields.go), which changes only under that
		// lock: one statement, "revision" sorting after "fields_declared".
		var meta []int64
		if err := tx.Raw("SELECT value FROM "+metaTable+" WHERE name IN ? ORDER BY name DESC"+s.dialect.forUpdate,
			[]string{metaRevision, metaFieldsDeclared}).Scan(&meta).Error; err != nil {
			return err
		}
		if len(meta) != 2 {
			return fmt.Errorf("%s holds %d of revision and fields_declared", metaTable, len(meta))
		}
		base = meta[0]
		fs, err := s.fieldSet(tx, meta[1])
		if err != nil {
			return err
		}
		// The group's time, once it holds the counter: groups' times follow
		// their revisions.
		p.fields, p.dict, p.committed = fs, s.dict.begin(), time.Now().UnixMicro()
		clock.ended(stageLock)
		next = base
		var reads runReads // of group[ran:looked]
		looked := 0
		for ; ran < len(group) && p.bytes < groupBytes; ran++ {
			b := group[ran]
			if p.holds(b) {
				if err := flush(tx); err != nil { // b reads what they write
					return err
				}
			}
			if ran == looked {
				run := lookupRun(group[ran:], &p)
				if reads, err = readRun(tx, s.dialect, run); err != nil {
					// Each alone then reads its own.
					blamed = slices.Clone(run)
					return err
				}
				looked = ran + len(run)
				clock.ended(stageRead)
			}
			if err := checkFence(b, reads.epochs); err != nil {
				blamed = []*batch{b}
				return err
			}
			n, err := b.fn(tx, &p, next, reads.stored[b])
			if err != nil {
				blamed = []*batch{b}
				return err
			}
			next += n
			revs = append(revs, next)
			clock.ended(stagePlan)
		}
		if err := flush(tx); err != nil {
			return err
		}
		if next == base {
			return nil
		}
		// The group's revisions are base+1 .. next: the one place they are
		// taken, in one update of the counter.
		if err := tx.Model(&metaRow{}).Where("name = ?", metaRevision).Update("value", next).Error; err != nil {
			return err
		}
		// When the group was written, for history (history.go): one row.
		if err := tx.Create(&revisionTimeRow{Revision: base + 1, Committed: p.committed}).Error; err != nil {
			return err
		}
		return s.notifyInTx(tx, next)
	}, s.dialect.writeTx)
	if err != nil {
		return 0, blamed, err
	}
	clock.ended(stageCommit)
	clock.observe()
	s.dict.learn(p.dict)
	if next > base {
		s.notify()
		s.wrote(next-base, int64(p.replacedRows))
	}
	for i, rev := range revs {
		group[i].finish(rev, nil)
	}
	return ran, nil, nil
}

// barrier has tx write the revision counter's row although it takes no
// revision: tx changes what writes read while holding the counter (an
// owner epoch, the field declarations, the rows' field index). On one
// primary the counter's lock orders tx with every write. On a
// multi-primary cluster (Galera) that lock is only the node's own, and
// certification compares the rows transactions write, not those they
// read or lock: a write on another node that had read the epoch before an
// Own committed after it, unfenced. Writing the row every write writes,
// tx conflicts with any write not yet ordered after it, which is aborted
// (1213) and run again, reading what tx wrote.
//
// The two updates cancel out, and must be two: MySQL neither logs nor
// certifies an UPDATE that leaves its row as it was, so one that sets the
// value to itself writes nothing, while each of these changes the row.
// Until tx commits, no other transaction sees the value in between.
func barrier(tx *gorm.DB) error {
	for _, step := range []string{" + 1", " - 1"} {
		if err := tx.Exec("UPDATE "+metaTable+" SET value = value"+step+" WHERE name = ?", metaRevision).Error; err != nil {
			return err
		}
	}
	return nil
}

// plan turns a batch into the writes it needs: the last change of a key wins,
// unchanged upserts (unless rewrites), deletes of absent objects and changes
// older than the stored object drop out.
func plan(changes []storage.Change, descs []storage.Object, existing storedRows) []op {
	last := make(map[storage.NamespacedName]int, len(changes))
	for i, c := range changes {
		last[storage.NamespacedName{Namespace: c.Namespace, Name: c.Name}] = i
	}
	ops := make([]op, 0, len(last))
	for i, c := range changes {
		k := storage.NamespacedName{Namespace: c.Namespace, Name: c.Name}
		if last[k] != i {
			continue
		}
		old := existing[k]
		switch {
		case c.Object == nil && old == nil:
		case c.Object == nil:
			if !older(c.ResourceVersion, old.MemberResourceVersion) {
				ops = append(ops, op{typ: watch.Deleted, old: old, ns: c.Namespace, nm: c.Name})
			}
		case old == nil:
			ops = append(ops, op{typ: watch.Added, obj: c.Object, desc: &descs[i], ns: c.Namespace, nm: c.Name, listed: c.Listed})
		case older(c.Object.GetResourceVersion(), old.MemberResourceVersion):
		case old.MemberResourceVersion != c.Object.GetResourceVersion() || c.Object.GetResourceVersion() == "" || c.Rewrite:
			ops = append(ops, op{typ: watch.Modified, obj: c.Object, desc: &descs[i], old: old, ns: c.Namespace, nm: c.Name, listed: c.Listed})
		}
	}
	return ops
}

// older reports whether member resourceVersion a is before b. Kube's are
// etcd revisions, integers that only grow; others are opaque, and compare
// only for equality.
func older(a, b string) bool {
	x, errA := strconv.ParseUint(a, 10, 64)
	y, errB := strconv.ParseUint(b, 10, 64)
	return errA == nil && errB == nil && x < y
}

// insertChunked inserts rows in statements bounded by d.insertRows rows and
// insertBytes, as arrays where the dialect takes them.
func insertChunked[T any](tx *gorm.DB, d *dialect, rows []T, size func(*T) int) error {
	return upsertChunked(tx, d, rows, size, nil)
}

// upsertChunked is insertChunked, where the rows that conflict with one
// stored on conflict's columns update it instead, unless conflict is nil.
func upsertChunked[T any](tx *gorm.DB, d *dialect, rows []T, size func(*T) int, conflict *clause.OnConflict) error {
	if conflict != nil {
		tx = tx.Clauses(*conflict)
	}
	return inChunks(rows, d.insertRows, size, func(chunk []T) error {
		if d.insertArrays {
			return insertArrays(tx, chunk, conflict)
		}
		return tx.Omit(clause.Associations).Create(chunk).Error
	})
}

// inChunks calls write with runs of rows bounded by count and bytes.
func inChunks[T any](rows []T, maxRows int, size func(*T) int, write func([]T) error) error {
	for start := 0; start < len(rows); {
		end, bytes := start, 0
		for end < len(rows) && end-start < maxRows && (end == start || bytes+size(&rows[end]) <= insertBytes) {
			bytes += size(&rows[end])
			end++
		}
		if err := write(rows[start:end]); err != nil {
			return err
		}
		start = end
	}
	return nil
}

// newRow makes the stored form of u (stamped), and its attribute rows.
func newRow(fs *storage.FieldSet, cluster string, gvr schema.GroupVersionResource, rev int64, o *op) (madeRow, error) {
	u, d := o.obj, o.desc
	fields, words := d.Fields, d.Keywords
	if fs != storage.BuiltinFields {
		fields = fs.Extract(gvr.GroupResource(), u.Object) // the declared ones too
		words = storage.KeywordsOf(u, fields)
	}
	var preImage []byte
	if o.old != nil && preImageAgainstNext(gvr, o.old) {
		var err error
		if preImage, err = decodeBlob(o.old.Object); err != nil {
			return madeRow{}, err
		}
	}
	blob, keptPreImage, err := storedObject(stamped(u, cluster, d.MemberResourceVersion, rev).Object, preImage)
	if err != nil {
		return madeRow{}, fmt.Errorf("encoding %s/%s: %w", d.Namespace, d.Name, err)
	}
	// An object keeps the id its first revision gave it.
	id := rev
	if o.old != nil {
		id = o.old.ObjectID
	}
	row := resourceRow{
		ObjectID: id, Revision: rev, KeyColumns: newKeyColumns(cluster, gvr, d.Namespace, d.Name), Kind: d.Kind, UID: d.UID, OwnerUID: d.OwnerUID,
		Created: d.CreatedAt, MemberResourceVersion: d.MemberResourceVersion, Object: blob,
	}
	// Deflate's window is 32 KB: an object much bigger keeps little against
	// the next, and zstd compresses it better whole.
	switch {
	case keptPreImage == nil:
	case len(keptPreImage) >= len(o.old.Object):
		keptPreImage = nil
	default:
		row.DeltaChain = o.old.DeltaChain + 1
	}
	attrs := make([]attributeRow, 0, len(d.Labels)+len(fields))
	for k, v := range d.Labels {
		attrs = append(attrs, attributeRow{ObjectID: id, Kind: attrKindLabel, Key: k, Value: v})
	}
	made := madeRow{row: row, attrs: fieldRows(attrs, id, fields), keptPreImage: keptPreImage}
	made.keywords, made.hasKeywords = keywordRowOf(id, words)
	return made, nil
}

// stamped returns u as stored: metadata.resourceVersion becomes the global
// revision rev, the member's one, memberRV, moves to an annotation, and the
// cluster is named, so that the bytes can be served as they are. Only the
// object and its metadata are copied, the rest shared: u stays as the
// member sent it, for a group that runs the batch again and for a caller
// that sends it again after an error (a lost connection, a node gone),
// which must carry the member's resourceVersion, or a commit that did
// happen would be written again.
func stamped(u *unstructured.Unstructured, cluster, memberRV string, rev int64) *unstructured.Unstructured {
	out := &unstructured.Unstructured{Object: maps.Clone(u.Object)}
	if md, ok := u.Object["metadata"].(map[string]any); ok {
		out.Object["metadata"] = maps.Clone(md)
	}
	ann := out.GetAnnotations() // a copy
	if ann == nil {
		ann = map[string]string{}
	}
	ann[storage.ClusterAnnotation] = cluster
	ann[storage.MemberResourceVersionAnnotation] = memberRV
	out.SetAnnotations(ann)
	out.SetResourceVersion(strconv.FormatInt(rev, 10))
	return out
}

// fieldRows appends the attribute rows of an object's fields. describeChange
// refuses objects whose built-in fields no database stores; a declared
// field's such values are left out, since a row stored before the
// declaration cannot be refused any more.
func fieldRows(attrs []attributeRow, id int64, fields map[string][]string) []attributeRow {
	for k, vs := range fields {
		for i, v := range vs {
			if storage.StorableText(v) {
				attrs = append(attrs, attributeRow{ObjectID: id, Kind: attrKindField, Key: k, Seq: i, Value: v})
			}
		}
	}
	return attrs
}
