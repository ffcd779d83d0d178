package sqlstore

import (
	"context"
	"errors"
	"time"

	"gorm.io/gorm"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/panorama-io/panorama/storage"
)

// Get implements storage.Reader.
func (s *Store) Get(ctx context.Context, key storage.Key) (*storage.Object, error) {
	if !storableKey(key) {
		return nil, storage.ErrNotFound
	}
	var row resourceRow
	err := whereResource(s.db.WithContext(ctx), key.GVR).
		Where("cluster = ? AND namespace = ? AND name = ?", key.Cluster, key.Namespace, key.Name).
		Take(&row).Error
	if errors.Is(err, gorm.ErrRecordNotFound) {
		return nil, storage.ErrNotFound
	}
	if err != nil {
		return nil, err
	}
	o, err := row.object()
	if err != nil {
		return nil, err
	}
	return &o, nil
}

// storableKey reports whether an object can be stored under key: writes
// refuse names that no database stores (validate.go), and PostgreSQL
// refuses them as parameters. A read of such a key finds nothing, as
// kube-apiserver's of a name that cannot exist, before any of it reaches
// the database.
func storableKey(key storage.Key) bool {
	return storage.StorableText(key.Cluster) && storage.StorableText(key.Namespace) && storage.StorableText(key.Name)
}

// MemberVersions implements storage.Reader.
func (s *Store) MemberVersions(ctx context.Context, cluster string, gvr schema.GroupVersionResource) (map[storage.NamespacedName]string, error) {
	var rows []resourceRow
	err := whereResource(s.db.WithContext(ctx).Select("namespace", "name", "member_resource_version"), gvr).
		Where("cluster = ?", cluster).
		Find(&rows).Error
	if err != nil {
		return nil, err
	}
	out := make(map[storage.NamespacedName]string, len(rows))
	for _, r := range rows {
		out[storage.NamespacedName{Namespace: r.Namespace, Name: r.Name}] = r.MemberResourceVersion
	}
	return out, nil
}

// Revision implements storage.Log.
func (s *Store) Revision(ctx context.Context) (current, compacted int64, err error) {
	return revisions(s.db.WithContext(ctx))
}

// LatestRevision implements storage.Reader: a Store reads where it writes,
// so its reads show what its log has reached.
func (s *Store) LatestRevision(ctx context.Context) (current, compacted int64, err error) {
	return s.Revision(ctx)
}

// ReadableRevision implements storage.Reader: a read shows the current
// revision at once, which there is no waiting for.
func (s *Store) ReadableRevision(ctx context.Context, _ int64) (int64, error) {
	current, _, err := s.Revision(ctx)
	return current, err
}

// ReadsLag implements storage.Reader: reads show every commit at once.
func (s *Store) ReadsLag() bool { return false }

// ReadWait implements storage.Reader: reads never wait.
func (s *Store) ReadWait() time.Duration { return 0 }

func revisions(db *gorm.DB) (current, compacted int64, err error) {
	var rows []metaRow
	if err := db.Find(&rows).Error; err != nil {
		return 0, 0, err
	}
	for _, r := range rows {
		switch r.Name {
		case metaRevision:
			current = r.Value
		case metaCompacted:
			compacted = r.Value
		}
	}
	return current, compacted, nil
}

// Changes implements storage.Log.
func (s *Store) Changes(ctx context.Context, since int64, limit int) ([]storage.LoggedChange, int64, error) {
	var out []storage.LoggedChange
	var compacted int64
	err := s.read(ctx, func(tx *gorm.DB) error {
		var err error
		if _, compacted, err = revisions(tx); err != nil {
			return err
		}
		if since < compacted {
			return &storage.TooOldError{Requested: since, Compacted: compacted}
		}
		var rows []eventRow
		if err := tx.Omit("prev_object").Where("revision > ?", since).Order("revision").Limit(limit).Find(&rows).Error; err != nil {
			return err
		}
		if err := s.resolveLog(tx, rows); err != nil {
			return err
		}
		out = make([]storage.LoggedChange, len(rows))
		for i := range rows {
			out[i] = rows[i].event()
		}
		return nil
	})
	return out, compacted, err
}

// History implements storage.Log.
func (s *Store) History(ctx context.Context, gvr schema.GroupVersionResource, upTo int64, limit int) ([]storage.LoggedChange, int64, error) {
	var out []storage.LoggedChange
	var compacted int64
	err := s.read(ctx, func(tx *gorm.DB) error {
		var err error
		if _, compacted, err = revisions(tx); err != nil {
			return err
		}
		var rows []eventRow
		err = whereResource(tx, gvr).Where("revision > ? AND revision <= ?", compacted, upTo).
			Order("revision DESC").Limit(limit).Find(&rows).Error
		if err != nil {
			return err
		}
		if err := s.resolveLog(tx, rows); err != nil {
			return err
		}
		out = make([]storage.LoggedChange, len(rows))
		for i := range rows {
			e := rows[len(rows)-1-i].event()
			e.Prev = rows[len(rows)-1-i].PrevObject
			out[i] = e
		}
		return nil
	})
	return out, compacted, err
}

// read runs fn in a read-only snapshot where the database has them.
func (s *Store) read(ctx context.Context, fn func(tx *gorm.DB) error) error {
	return s.db.WithContext(ctx).Transaction(fn, s.dialect.readTx)
}
