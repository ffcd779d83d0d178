package sqlstore

import (
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/panorama-io/panorama/storage"
)

// KeyColumns are the columns that name an object (keyColumns), which
// every table of objects and of their changes has. It is exported only
// because gorm embeds no unexported struct.
type KeyColumns struct {
	Cluster   string `gorm:"column:cluster"`
	Group     string `gorm:"column:api_group"`
	Version   string `gorm:"column:version"`
	Resource  string `gorm:"column:resource"`
	Namespace string `gorm:"column:namespace"`
	Name      string `gorm:"column:name"`
}

func newKeyColumns(cluster string, gvr schema.GroupVersionResource, namespace, name string) KeyColumns {
	return KeyColumns{Cluster: cluster, Group: gvr.Group, Version: gvr.Version, Resource: gvr.Resource, Namespace: namespace, Name: name}
}

func (k *KeyColumns) gvr() schema.GroupVersionResource {
	return schema.GroupVersionResource{Group: k.Group, Version: k.Version, Resource: k.Resource}
}

func (k *KeyColumns) key() storage.Key {
	return storage.Key{Cluster: k.Cluster, GVR: k.gvr(), Namespace: k.Namespace, Name: k.Name}
}

// resourceRow is an object as stored, a row per object: an update
// rewrites the row of ObjectID in place.
type resourceRow struct {
	// ObjectID is the revision that first stored the object, which it
	// keeps through its updates (not through a deletion): its attribute
	// and keyword rows are found by it, so that an update rewrites only
	// those that changed (BenchmarkUpdateChurn).
	ObjectID int64 `gorm:"column:object_id;primaryKey;autoIncrement:false"`
	// Revision is the revision that wrote the row, unique: the log's
	// entry of that revision finds its object here (log.go).
	Revision int64 `gorm:"column:revision"`
	KeyColumns
	Kind                  string `gorm:"column:kind"`
	UID                   string `gorm:"column:uid"`
	OwnerUID              string `gorm:"column:owner_uid"`
	Created               int64  `gorm:"column:created_at"`
	MemberResourceVersion string `gorm:"column:member_resource_version"`
	Object                []byte `gorm:"column:object"`
	// DeltaChain counts the pre-images of the key's entries up to this
	// row's that are kept, in a row, against the next state (log.go); NULL
	// in rows written before schema version 16, when none were.
	DeltaChain int `gorm:"column:delta_chain"`
}

func (resourceRow) TableName() string { return resourcesTable }

// object is the row as served, its JSON decompressed.
func (r *resourceRow) object() (storage.Object, error) {
	data, err := decodeBlob(r.Object)
	if err != nil {
		return storage.Object{}, err
	}
	return storage.Object{
		Key:  r.key(),
		Kind: r.Kind, UID: r.UID, OwnerUID: r.OwnerUID, CreatedAt: r.Created,
		MemberResourceVersion: r.MemberResourceVersion, Revision: r.Revision, Data: data,
	}, nil
}

// attributeRow is a label or field of a row, its key and value in full.
// Stored, it names them in the dictionary (storedAttributeRow); read by
// attributesOf, it has its key's id too.
type attributeRow struct {
	ObjectID int64  `gorm:"column:object_id"`
	KeyID    int64  `gorm:"column:key_id"`
	Kind     string `gorm:"column:kind"`
	Key      string `gorm:"column:attr_key"`
	// Seq numbers the values of a multi-valued field.
	Seq   int    `gorm:"column:seq"`
	Value string `gorm:"column:attr_value"`
}

type eventRow struct {
	Revision int64  `gorm:"column:revision;primaryKey;autoIncrement:false"`
	Type     string `gorm:"column:type"`
	KeyColumns
	// Object and PrevObject are as stored until resolveLog has made them
	// JSON: Object is empty where another row holds it (log.go).
	Object     []byte `gorm:"column:object"`
	PrevObject []byte `gorm:"column:prev_object"`
	// Created is the creationTimestamp of the pre-image, or of the object
	// when there is none: what a page ordered by it seeks on (changedSince).
	Created int64 `gorm:"column:created_at"`
}

func (eventRow) TableName() string { return eventsTable }

func (e *eventRow) event() storage.LoggedChange {
	return storage.LoggedChange{
		Revision: e.Revision,
		Type:     watch.EventType(e.Type),
		Key:      e.key(),
		Object:   e.Object,
	}
}
