package sqlstore

import (
	"bytes"
	"context"
	"slices"
	"strings"
	"sync"
	"time"

	"gorm.io/gorm"
	"gorm.io/gorm/clause"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utiljson "k8s.io/apimachinery/pkg/util/json"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/panorama-io/panorama/storage"
	"github.com/panorama-io/panorama/storage/delta"
)

// Forgetting. What a Cluster no longer wants stored is dropped from its
// past too, each kind of it up to a mark per cluster (a row of
// panorama_cluster_history):
//
//   - forgotten: the history of the cluster's objects up to this revision
//     is dropped (ForgetCluster). Its history rows are deleted, compaction
//     turns none of its log entries up to the mark into history, and
//     ObjectHistory reads none of them.
//   - secret_data_dropped: no state of the cluster's Secrets written up to
//     this revision holds their contents (DropSecretData), so a call reads
//     only the states written since the last one.
//
// Both rewrite or delete history rows, and DropSecretData the log's
// pre-images that history rows are kept against (a delta decodes only
// against the very bytes it was made with). Compaction reads and writes
// the same rows, so a compaction step and either of them exclude each
// other by writing the compaction mark's row (lockCompaction).
//
// A transaction that rewrites log entries in place also counts itself in
// panorama_meta (metaSecretsRewritten): the watch caches, which hold the
// log's recent states in memory and learn of nothing but new entries,
// read their Secrets again when the count moves (SecretsRewritten).

const clusterHistoryTable = "panorama_cluster_history"

type clusterHistoryRow struct {
	Cluster           string `gorm:"column:cluster;primaryKey"`
	Forgotten         int64  `gorm:"column:forgotten"`
	SecretDataDropped int64  `gorm:"column:secret_data_dropped"`
}

func (clusterHistoryRow) TableName() string { return clusterHistoryTable }

const (
	markForgotten         = "forgotten"
	markSecretDataDropped = "secret_data_dropped"
	// secretBatch is how many current Secrets one transaction of
	// DropSecretData reads, holding the revision counter.
	secretBatch = 500
	// chainKeys is how many Secrets' states one transaction rewrites.
	chainKeys = 100
	// forgetBatch is how many history rows one transaction deletes.
	forgetBatch = 1000
	// metaSecretsRewritten is the row of panorama_meta that counts the
	// transactions that rewrote logged states of Secrets. Every start
	// seeds it (migrateLocked): it needs no migration.
	metaSecretsRewritten = "secrets_rewritten"
)

// lockCompaction has tx write the compaction mark's row, whose value it
// leaves as it was: a compaction step does too, so the two exclude each
// other until tx ends, on one primary by the row's lock and on a
// multi-primary cluster by certification, which aborts the later one.
// Two updates that cancel out, as barrier's: MySQL neither locks for
// long nor certifies an update that changes nothing.
func lockCompaction(tx *gorm.DB) error {
	for _, step := range []string{" + 1", " - 1"} {
		if err := tx.Exec("UPDATE "+metaTable+" SET value = value"+step+" WHERE name = ?", metaCompacted).Error; err != nil {
			return err
		}
	}
	return nil
}

// excludingCompaction runs fn in a write transaction that no compaction
// step overlaps, again when it conflicts with another transaction.
func (s *Store) excludingCompaction(ctx context.Context, fn func(tx *gorm.DB) error) error {
	for attempt := 1; ; attempt++ {
		err := s.db.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
			if err := lockCompaction(tx); err != nil {
				return err
			}
			return fn(tx)
		}, s.dialect.writeTx)
		if err == nil || !conflicted(err) || attempt == maxConflictRetries {
			return err
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(conflictPause(attempt)):
		}
	}
}

// clusterMark reads one of cluster's marks, 0 when it has none.
func clusterMark(db *gorm.DB, cluster, mark string) (int64, error) {
	var v []int64
	err := db.Model(&clusterHistoryRow{}).Where("cluster = ?", cluster).Pluck(mark, &v).Error
	if err != nil || len(v) == 0 {
		return 0, err
	}
	return v[0], nil
}

// raiseClusterMark moves one of cluster's marks up to rev, never down.
func raiseClusterMark(db *gorm.DB, cluster, mark string, rev int64) error {
	if err := db.Clauses(clause.OnConflict{DoNothing: true}).Create(&clusterHistoryRow{Cluster: cluster}).Error; err != nil {
		return err
	}
	return db.Model(&clusterHistoryRow{}).Where("cluster = ? AND "+mark+" < ?", cluster, rev).Update(mark, rev).Error
}

// forgottenMarks maps the clusters forgotten beyond revision to their
// marks.
func forgottenMarks(db *gorm.DB, revision int64) (map[string]int64, error) {
	var rows []clusterHistoryRow
	if err := db.Where(markForgotten+" > ?", revision).Find(&rows).Error; err != nil {
		return nil, err
	}
	out := make(map[string]int64, len(rows))
	for _, r := range rows {
		out[r.Cluster] = r.Forgotten
	}
	return out, nil
}

// ForgetCluster implements storage.ClusterWriter. The mark moves first, in
// a write of the cluster (fenced), so that compaction keeps nothing of the
// cluster up to it from then on; the rows compaction kept before are
// deleted after, excluding compaction.
func (w *clusterWriter) ForgetCluster(ctx context.Context) error {
	s, cluster := w.s, w.cluster
	if err := validateCluster(cluster); err != nil {
		return err
	}
	var mark int64
	if _, err := w.submit(ctx, 0, nil, func(tx *gorm.DB, _ *pending, base int64, _ storedRows) (int64, error) {
		mark = base
		return 0, raiseClusterMark(tx, cluster, markForgotten, base)
	}); err != nil {
		return err
	}
	for after, done := int64(0), false; !done; {
		err := s.excludingCompaction(ctx, func(tx *gorm.DB) error {
			var revs []int64
			if err := tx.Model(&historyRow{}).Where("cluster = ? AND revision > ? AND revision <= ?", cluster, after, mark).
				Order("revision").Limit(forgetBatch).Pluck("revision", &revs).Error; err != nil {
				return err
			}
			if done = len(revs) < forgetBatch; len(revs) > 0 {
				after = revs[len(revs)-1]
				return tx.Where("revision IN ?", revs).Delete(&historyRow{}).Error
			}
			return nil
		})
		if err != nil {
			return err
		}
	}
	// What stays of it until compaction: the log, whose Secrets' states
	// lose their contents too.
	return w.DropSecretData(ctx)
}

// DropSecretData implements storage.ClusterWriter. First the current Secrets,
// rewritten as changes: from then on every state of a Secret, in the log
// or history, is one that an object current since held, or one replaced
// up to now. Those are rewritten next, chains of states at a time. The
// mark moves last, to the revision after the first step: a call that
// fails is done again in full by the next.
func (w *clusterWriter) DropSecretData(ctx context.Context) error {
	s, cluster := w.s, w.cluster
	if err := validateCluster(cluster); err != nil {
		return err
	}
	db := s.db.WithContext(ctx)
	since, err := clusterMark(db, cluster, markSecretDataDropped)
	if err != nil {
		return err
	}
	if err := w.rewriteSecrets(ctx, since); err != nil {
		return err
	}
	through, _, err := s.Revision(ctx)
	if err != nil {
		return err
	}
	keys, err := secretKeysSince(db, cluster, since)
	if err != nil {
		return err
	}
	for start := 0; start < len(keys); start += chainKeys {
		chunk := keys[start:min(start+chainKeys, len(keys))]
		var rewrites int64
		err := s.excludingCompaction(ctx, func(tx *gorm.DB) error {
			rewrites = 0
			rewroteLog, err := stripSecretChains(tx, cluster, chunk, since)
			if err != nil || !rewroteLog {
				return err
			}
			rewrites, err = countRewrite(tx)
			return err
		})
		if err != nil {
			return err
		}
		if rewrites > 0 {
			s.sawRewrites(rewrites)
			s.notify() // this process's watch cache reads the count at once
		}
	}
	return raiseClusterMark(db, cluster, markSecretDataDropped, through)
}

// countRewrite counts tx among the rewrites of logged Secrets, and returns
// the count with it.
func countRewrite(tx *gorm.DB) (int64, error) {
	if err := tx.Exec("UPDATE "+metaTable+" SET value = value + 1 WHERE name = ?", metaSecretsRewritten).Error; err != nil {
		return 0, err
	}
	return metaValue(tx, metaSecretsRewritten)
}

// rewriteCount is the count of rewrites of logged Secrets as this process
// last read or wrote it. The count only grows: a read that returns after a
// later rewrite of this process's does not take it back.
type rewriteCount struct {
	mu      sync.Mutex
	value   int64
	checked time.Time
}

// sawRewrites notes that the count reached n.
func (s *Store) sawRewrites(n int64) int64 {
	s.rewrites.mu.Lock()
	defer s.rewrites.mu.Unlock()
	s.rewrites.value, s.rewrites.checked = max(s.rewrites.value, n), time.Now()
	return s.rewrites.value
}

// SecretsRewritten implements storage.Log. The count is read again
// once fieldsRecheck has passed, as Fields reads the indexed version:
// the watch cache asks at every turn of its tail.
func (s *Store) SecretsRewritten(ctx context.Context) (int64, error) {
	s.rewrites.mu.Lock()
	n, fresh := s.rewrites.value, time.Since(s.rewrites.checked) < fieldsRecheck
	s.rewrites.mu.Unlock()
	if fresh {
		return n, nil
	}
	n, err := metaValue(s.db.WithContext(ctx), metaSecretsRewritten)
	if err != nil {
		return 0, err
	}
	return s.sawRewrites(n), nil
}

// rewriteSecrets writes again, without their contents, the cluster's
// current Secrets written after since that hold some: a change at the
// member's resourceVersion, so that watches and the log see it, and the
// synchronizer, which compares member resourceVersions, nothing new.
func (w *clusterWriter) rewriteSecrets(ctx context.Context, since int64) error {
	cluster := w.cluster
	gr := storage.SecretsResource.GroupResource()
	// A new Cluster's first reconcile waits on this: where the cluster has
	// stored no Secret since, a read says so without waiting for the
	// writer, which may be busy with other clusters' initial syncs
	// (BenchmarkFleetReconcile). A Secret stored after the read is the
	// synchronizer's, which drops the contents itself.
	var stored []int64
	if err := whereResource(w.s.db.WithContext(ctx).Table(resourcesTable), storage.SecretsResource).Where("cluster = ? AND revision > ?", cluster, since).
		Limit(1).Pluck("revision", &stored).Error; err != nil || len(stored) == 0 {
		return err
	}
	for after := since; ; {
		var next int64
		// Ahead of other clusters' writes: a reconcile waits on it (see queue).
		_, err := w.s.await(ctx, &batch{cluster: cluster, epoch: w.epoch, rows: secretBatch, first: true, fn: func(tx *gorm.DB, p *pending, base int64, _ storedRows) (int64, error) {
			next = 0
			var rows []resourceRow
			if err := whereResource(tx, storage.SecretsResource).Where("cluster = ? AND revision > ?", cluster, after).
				Order("revision").Limit(secretBatch).Find(&rows).Error; err != nil {
				return 0, err
			}
			var ops []op
			for i := range rows {
				r := &rows[i]
				data, err := decodeBlob(r.Object)
				if err != nil {
					return 0, err
				}
				obj, stripped, err := strippedSecret(data)
				if err != nil {
					return 0, err
				}
				if !stripped {
					continue
				}
				u := &unstructured.Unstructured{Object: obj}
				u.SetResourceVersion(r.MemberResourceVersion)
				d, invalid := describeChange(gr, storage.Change{Object: u, Namespace: r.Namespace, Name: r.Name})
				if invalid != nil {
					return 0, invalid
				}
				ops = append(ops, op{typ: watch.Modified, obj: u, desc: &d, old: r, ns: r.Namespace, nm: r.Name})
			}
			if len(rows) == secretBatch {
				next = rows[len(rows)-1].Revision
			}
			return int64(len(ops)), p.add(cluster, storage.SecretsResource, base, ops)
		}})
		if err != nil || next == 0 {
			return err
		}
		after = next
	}
}

// strippedSecret decodes a Secret's JSON and strips its contents, when it
// may hold some: the JSON of one that holds none is not decoded.
func strippedSecret(data []byte) (map[string]any, bool, error) {
	if !bytes.Contains(data, []byte(`"data"`)) && !bytes.Contains(data, []byte(`"stringData"`)) &&
		!bytes.Contains(data, []byte(storage.LastAppliedAnnotation)) {
		return nil, false, nil
	}
	var obj map[string]any
	// As a member's objects are decoded: integers as int64.
	if err := utiljson.Unmarshal(data, &obj); err != nil {
		return nil, false, err
	}
	return obj, storage.StripSecretData(obj), nil
}

// strippedJSON is data, a Secret's JSON, without its contents: data
// itself, the same bytes, when it holds none.
func strippedJSON(data []byte) ([]byte, error) {
	if data == nil {
		return nil, nil
	}
	obj, stripped, err := strippedSecret(data)
	if err != nil || !stripped {
		return data, err
	}
	return objectJSON(obj)
}

// secretKeysSince lists the cluster's Secrets with log entries or history
// rows after since.
func secretKeysSince(db *gorm.DB, cluster string, since int64) ([]storage.NamespacedName, error) {
	seen := map[storage.NamespacedName]bool{}
	for _, model := range []any{&eventRow{}, &historyRow{}} {
		var found []KeyColumns
		if err := whereResource(db.Model(model), storage.SecretsResource).Where("cluster = ? AND revision > ?", cluster, since).
			Distinct("namespace", "name").Find(&found).Error; err != nil {
			return nil, err
		}
		for _, k := range found {
			seen[storage.NamespacedName{Namespace: k.Namespace, Name: k.Name}] = true
		}
	}
	keys := make([]storage.NamespacedName, 0, len(seen))
	for k := range seen {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, func(a, b storage.NamespacedName) int {
		return strings.Compare(a.Namespace+"/"+a.Name, b.Namespace+"/"+b.Name)
	})
	return keys, nil
}

// secretChain is what one Secret's states are stored in, oldest first:
// its history rows after the mark, and its whole log.
type secretChain struct {
	history []historyRow
	log     []eventRow
	// current is its current object, as stored.
	current []byte
}

// stripSecretChains rewrites the states of the cluster's Secrets named
// keys, stored after since, without their contents: the log's objects
// and pre-images, and the history rows after since, each kept against
// the state after it as now stored. The states at and before since hold
// none, so the rows kept before are left as they are. The current objects
// are read first: with compaction excluded, a Secret without log entries
// when its log is read was not changed since its current object was.
//
// rewroteLog says whether a log entry was rewritten.
func stripSecretChains(tx *gorm.DB, cluster string, keys []storage.NamespacedName, since int64) (rewroteLog bool, err error) {
	ofKeys := func(model any) *gorm.DB {
		conds := make([]string, len(keys))
		args := make([]any, 0, 2*len(keys))
		for i, k := range keys {
			conds[i] = "(namespace = ? AND name = ?)"
			args = append(args, k.Namespace, k.Name)
		}
		return whereResource(tx.Model(model), storage.SecretsResource).Where("cluster = ?", cluster).
			Where("("+strings.Join(conds, " OR ")+")", args...)
	}
	chains := map[storage.NamespacedName]*secretChain{}
	chain := func(k KeyColumns) *secretChain {
		nn := storage.NamespacedName{Namespace: k.Namespace, Name: k.Name}
		if chains[nn] == nil {
			chains[nn] = &secretChain{}
		}
		return chains[nn]
	}
	var current []resourceRow
	if err := ofKeys(&resourceRow{}).Find(&current).Error; err != nil {
		return false, err
	}
	var log []eventRow
	if err := ofKeys(&eventRow{}).Order("revision").Find(&log).Error; err != nil {
		return false, err
	}
	var hist []historyRow
	if err := ofKeys(&historyRow{}).Where("revision > ?", since).Order("revision").Find(&hist).Error; err != nil {
		return false, err
	}
	for _, r := range current {
		chain(r.KeyColumns).current = r.Object
	}
	for _, e := range log {
		c := chain(e.KeyColumns)
		c.log = append(c.log, e)
	}
	for _, h := range hist {
		c := chain(h.KeyColumns)
		c.history = append(c.history, h)
	}
	for _, c := range chains {
		rewrote, err := c.strip(tx)
		if err != nil {
			return false, err
		}
		rewroteLog = rewroteLog || rewrote
	}
	return rewroteLog, nil
}

// strip rewrites c's states without their contents; rewroteLog says
// whether a log entry was rewritten.
func (c *secretChain) strip(tx *gorm.DB) (rewroteLog bool, err error) {
	// The state after the newest history row, as it is, and as it will be
	// stored: the first log entry's pre-image, or the current object.
	var after, kept []byte
	for i := range c.log {
		e := &c.log[i]
		prev, err := decodeBlob(e.PrevObject)
		if err != nil {
			return false, err
		}
		keptPrev, err := strippedJSON(prev)
		if err != nil {
			return false, err
		}
		if i == 0 {
			after, kept = prev, keptPrev
		}
		updates := map[string]any{}
		if !bytes.Equal(keptPrev, prev) {
			updates["prev_object"] = encodeBlob(keptPrev)
		}
		if len(e.Object) > 0 { // written before the log stored each version once
			object, err := decodeBlob(e.Object)
			if err != nil {
				return false, err
			}
			keptObject, err := strippedJSON(object)
			if err != nil {
				return false, err
			}
			if !bytes.Equal(keptObject, object) {
				updates["object"] = encodeBlob(keptObject)
			}
		}
		if len(updates) > 0 {
			if err := tx.Model(&eventRow{}).Where("revision = ?", e.Revision).Updates(updates).Error; err != nil {
				return false, err
			}
			rewroteLog = true
		}
	}
	if len(c.log) == 0 && c.current != nil {
		current, err := decodeBlob(c.current)
		if err != nil {
			return false, err
		}
		after, kept = current, current
	}
	for i := len(c.history) - 1; i >= 0; i-- {
		h := &c.history[i]
		before, err := h.before(after)
		if err != nil {
			return false, err
		}
		keptBefore, err := strippedJSON(before)
		if err != nil {
			return false, err
		}
		var patch []byte
		switch watch.EventType(h.Type) {
		case watch.Modified:
			if !bytes.Equal(keptBefore, before) || !bytes.Equal(kept, after) {
				patch = append(slices.Clip(keptAgainstNext), delta.Encode(keptBefore, kept)...)
			}
		case watch.Deleted:
			if !bytes.Equal(keptBefore, before) {
				patch = encodeBlob(keptBefore)
			}
		}
		if patch != nil {
			if err := tx.Model(&historyRow{}).Where("revision = ?", h.Revision).Update("patch", patch).Error; err != nil {
				return false, err
			}
		}
		after, kept = before, keptBefore
	}
	return rewroteLog, nil
}
