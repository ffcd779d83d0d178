package sqlstore

import (
	"bytes"
	"context"
	"encoding/json"
	"slices"
	"strings"
	"sync"
	"time"

	"gorm.io/gorm"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/panorama-io/panorama/storage"
)

// Declared fields. Each set of declarations is stored as a version, one
// row of panorama_fields, and panorama_meta holds two versions:
//
//   - fields_declared is what writes index new rows with. It changes only
//     in a write transaction, holding the revision counter and writing
//     its row (barrier), and every write reads it there: a row is indexed
//     with the declarations that were current at its revision.
//   - fields_indexed is what every row is indexed with, so what reads may
//     select on. It moves to fields_declared once reindexing has rewritten
//     the field rows of every row written before the declarations changed.
//
// Replicas agree because both live in the database; each process compiles
// a version once.

const (
	// reindexBatch is how many rows one reindexing transaction rewrites:
	// each holds the revision counter, so writers wait for one batch at most.
	reindexBatch = 500
	// fieldsRecheck is how long Fields trusts the indexed version it read.
	fieldsRecheck = time.Second
)

// fieldsSpec is what a version stores: the declarations, and the
// revision of the built-in fields, so that a binary whose built-in fields
// differ declares a new version, which reindexes.
type fieldsSpec struct {
	Builtin  int                        `json:"builtin"`
	Declared []storage.FieldDeclaration `json:"declared"`
}

type fieldsRow struct {
	Version      int64  `gorm:"column:version;primaryKey;autoIncrement:false"`
	Declarations []byte `gorm:"column:declarations"`
}

func (fieldsRow) TableName() string { return fieldsTable }

// fieldsCache holds the compiled versions and the indexed one.
type fieldsCache struct {
	mu      sync.Mutex
	sets    map[int64]*storage.FieldSet
	indexed *storage.FieldSet
	checked time.Time
}

// fieldSet returns version compiled, reading it in db the first time.
func (s *Store) fieldSet(db *gorm.DB, version int64) (*storage.FieldSet, error) {
	if version == 0 {
		return storage.BuiltinFields, nil
	}
	s.fields.mu.Lock()
	fs := s.fields.sets[version]
	s.fields.mu.Unlock()
	if fs != nil {
		return fs, nil
	}
	var row fieldsRow
	if err := db.Where("version = ?", version).Take(&row).Error; err != nil {
		return nil, err
	}
	var spec fieldsSpec
	if err := json.Unmarshal(row.Declarations, &spec); err != nil {
		return nil, err
	}
	fs, err := storage.NewFieldSet(version, spec.Declared)
	if err != nil {
		// A declaration this binary refuses (a name it has built in
		// since, one past limits it has since) is left out rather than
		// failing every write, the controller's next declaration among
		// them.
		admitted, _ := storage.AdmitFieldDeclarations(spec.Declared)
		if fs, err = storage.NewFieldSet(version, admitted); err != nil {
			return nil, err
		}
	}
	s.fields.mu.Lock()
	defer s.fields.mu.Unlock()
	if s.fields.sets == nil {
		s.fields.sets = map[int64]*storage.FieldSet{}
	}
	s.fields.sets[version] = fs
	return fs, nil
}

func metaValue(db *gorm.DB, name string) (int64, error) {
	var v int64
	err := db.Raw("SELECT value FROM "+metaTable+" WHERE name = ?", name).Scan(&v).Error
	return v, err
}

// Fields implements storage.Reader. Another process's declarations are
// seen within fieldsRecheck.
func (s *Store) Fields(ctx context.Context) (*storage.FieldSet, error) {
	s.fields.mu.Lock()
	if fs := s.fields.indexed; fs != nil && time.Since(s.fields.checked) < fieldsRecheck {
		s.fields.mu.Unlock()
		return fs, nil
	}
	s.fields.mu.Unlock()
	db := s.db.WithContext(ctx)
	v, err := metaValue(db, metaFieldsIndexed)
	if err != nil {
		return nil, err
	}
	fs, err := s.fieldSet(db, v)
	if err != nil {
		return nil, err
	}
	s.fields.mu.Lock()
	s.fields.indexed, s.fields.checked = fs, time.Now()
	s.fields.mu.Unlock()
	return fs, nil
}

// DeclareFields implements storage.Maintainer: it stores decls as a new
// version unless they (and the built-in fields) are the declared one,
// then reindexes the rows
// written before it, a batch a transaction, and returns once every row is
// indexed with it (or a later declaration took over). Called again after
// a failure, it carries on where the rows were left.
func (s *Store) DeclareFields(ctx context.Context, decls []storage.FieldDeclaration) error {
	decls = canonical(decls)
	if _, err := storage.NewFieldSet(0, decls); err != nil {
		return err
	}
	spec, err := json.Marshal(fieldsSpec{Builtin: storage.BuiltinFieldsRevision, Declared: decls})
	if err != nil {
		return err
	}
	var version int64
	_, err = s.submit(ctx, "", storage.Unfenced, 1, nil, func(tx *gorm.DB, p *pending, _ int64, _ storedRows) (int64, error) {
		declared, err := metaValue(tx, metaFieldsDeclared)
		if err != nil {
			return 0, err
		}
		var stored fieldsRow // version 0: the built-in fields of before they were versioned
		if declared > 0 {
			if err := tx.Where("version = ?", declared).Take(&stored).Error; err != nil {
				return 0, err
			}
		}
		version = declared
		if bytes.Equal(stored.Declarations, spec) {
			return 0, nil
		}
		version++
		if err := barrier(tx); err != nil {
			return 0, err
		}
		if err := tx.Create(&fieldsRow{Version: version, Declarations: spec}).Error; err != nil {
			return 0, err
		}
		if err := tx.Model(&metaRow{}).Where("name = ?", metaFieldsDeclared).Update("value", version).Error; err != nil {
			return 0, err
		}
		// The group's later batches index with it too.
		p.fields, err = storage.NewFieldSet(version, decls)
		return 0, err
	})
	if err != nil {
		return err
	}
	return s.reindex(ctx, version)
}

// canonical sorts decls and their lists, so that equal declarations are
// stored alike whatever order they were found in.
func canonical(decls []storage.FieldDeclaration) []storage.FieldDeclaration {
	out := make([]storage.FieldDeclaration, len(decls))
	for i, d := range decls {
		d.Paths, d.Resources = slices.Sorted(slices.Values(d.Paths)), slices.Sorted(slices.Values(d.Resources))
		out[i] = d
	}
	slices.SortFunc(out, func(a, b storage.FieldDeclaration) int {
		return strings.Compare(a.Name+"\x00"+strings.Join(a.Paths, ",")+"\x00"+strings.Join(a.Resources, ","),
			b.Name+"\x00"+strings.Join(b.Paths, ",")+"\x00"+strings.Join(b.Resources, ","))
	})
	return out
}

// reindex rewrites the field rows of every row up to the current revision
// with version, in batches that each hold the revision counter (rows are
// then neither written nor deleted under it), and marks version indexed.
// It stops early when another version is declared: that one's reindex
// rewrites everything again.
func (s *Store) reindex(ctx context.Context, version int64) error {
	db := s.db.WithContext(ctx)
	if indexed, err := metaValue(db, metaFieldsIndexed); err != nil || indexed == version {
		return err
	}
	// Rows written after the declaration are indexed with it already.
	upTo, _, err := s.Revision(ctx)
	if err != nil {
		return err
	}
	for after := int64(0); ; {
		var next int64
		var stop bool
		_, err := s.submit(ctx, "", storage.Unfenced, reindexBatch, nil, func(tx *gorm.DB, p *pending, _ int64, _ storedRows) (int64, error) {
			next, stop = after, true
			if declared, err := metaValue(tx, metaFieldsDeclared); err != nil || declared != version {
				return 0, err
			}
			if err := barrier(tx); err != nil {
				return 0, err
			}
			fs, err := s.fieldSet(tx, version)
			if err != nil {
				return 0, err
			}
			var rows []resourceRow
			if err := tx.Select("object_id", "revision", "cluster", "api_group", "version", "resource", "namespace", "object").Where("revision > ? AND revision <= ?", after, upTo).
				Order("revision").Limit(reindexBatch).Find(&rows).Error; err != nil {
				return 0, err
			}
			if len(rows) == 0 {
				return 0, tx.Model(&metaRow{}).Where("name = ?", metaFieldsIndexed).Update("value", version).Error
			}
			ids := make([]int64, len(rows))
			keys := make(map[int64]counted, len(rows))
			var attrs []attributeRow
			var keywords []keywordRow
			for i := range rows {
				r := &rows[i]
				data, err := decodeBlob(r.Object)
				if err != nil {
					return 0, err
				}
				u := &unstructured.Unstructured{}
				if err := u.UnmarshalJSON(data); err != nil {
					return 0, err
				}
				ids[i], keys[r.ObjectID] = r.ObjectID, counted{key: &r.KeyColumns}
				fields := fs.Extract(schema.GroupResource{Group: r.Group, Resource: r.Resource}, u.Object)
				attrs = fieldRows(attrs, r.ObjectID, fields)
				if k, ok := keywordRowOf(r.ObjectID, storage.KeywordsOf(u, fields)); ok {
					keywords = append(keywords, k)
				}
			}
			// The count summary trades the old field values for the new.
			old, err := attributesOf(tx, "object_id IN ? AND k.kind = ?", ids, attrKindField)
			if err != nil {
				return 0, err
			}
			if err := tx.Where("object_id IN ? AND key_id IN (SELECT id FROM "+attributeKeysTable+" WHERE kind = ?)", ids, attrKindField).
				Delete(&storedAttributeRow{}).Error; err != nil {
				return 0, err
			}
			if err := p.dict.insert(tx, s.dialect, attrs); err != nil {
				return 0, err
			}
			// An object's words are its fields' values too.
			if err := tx.Where("object_id IN ?", ids).Delete(&keywordRow{}).Error; err != nil {
				return 0, err
			}
			if err := insertChunked(tx, s.dialect, keywords, wordsBytes); err != nil {
				return 0, err
			}
			t := tally{reindexing: true}
			t.attributes(keys, old, -1)
			t.attributes(keys, attrs, 1)
			if err := t.apply(tx, s.dialect); err != nil {
				return 0, err
			}
			next, stop = rows[len(rows)-1].Revision, false
			return 0, nil
		})
		if err != nil {
			return err
		}
		if stop {
			// This process sees its own declaration at once.
			s.fields.mu.Lock()
			s.fields.indexed = nil
			s.fields.mu.Unlock()
			return nil
		}
		after = next
	}
}
