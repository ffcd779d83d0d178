package sqlstore

import (
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/panorama-io/panorama/storage"
)

type resourceRow struct {
	Revision              int64  `gorm:"column:revision;primaryKey;autoIncrement:false"`
	Cluster               string `gorm:"column:cluster"`
	Group                 string `gorm:"column:api_group"`
	Version               string `gorm:"column:version"`
	Resource              string `gorm:"column:resource"`
	Namespace             string `gorm:"column:namespace"`
	Name                  string `gorm:"column:name"`
	Kind                  string `gorm:"column:kind"`
	UID                   string `gorm:"column:uid"`
	OwnerUID              string `gorm:"column:owner_uid"`
	Created               int64  `gorm:"column:created_at"`
	MemberResourceVersion string `gorm:"column:member_resource_version"`
	Object                []byte `gorm:"column:object"`
}

func (resourceRow) TableName() string { return resourcesTable }

// object is the row as served, its JSON decompressed.
func (r *resourceRow) object() (storage.Object, error) {
	data, err := decodeBlob(r.Object)
	if err != nil {
		return storage.Object{}, err
	}
	return storage.Object{
		Key: storage.Key{
			Cluster: r.Cluster, GVR: schema.GroupVersionResource{Group: r.Group, Version: r.Version, Resource: r.Resource},
			Namespace: r.Namespace, Name: r.Name,
		},
		Kind: r.Kind, UID: r.UID, OwnerUID: r.OwnerUID, CreatedAt: r.Created,
		MemberResourceVersion: r.MemberResourceVersion, Revision: r.Revision, Data: data,
	}, nil
}

type attributeRow struct {
	Revision int64  `gorm:"column:resource_revision;primaryKey;autoIncrement:false"`
	Kind     string `gorm:"column:kind;primaryKey"`
	Key      string `gorm:"column:attr_key;primaryKey"`
	// Seq numbers the values of a multi-valued field.
	Seq   int    `gorm:"column:seq;primaryKey;autoIncrement:false"`
	Value string `gorm:"column:attr_value"`
}

func (attributeRow) TableName() string { return attributesTable }

type eventRow struct {
	Revision  int64  `gorm:"column:revision;primaryKey;autoIncrement:false"`
	Type      string `gorm:"column:type"`
	Cluster   string `gorm:"column:cluster"`
	Group     string `gorm:"column:api_group"`
	Version   string `gorm:"column:version"`
	Resource  string `gorm:"column:resource"`
	Namespace string `gorm:"column:namespace"`
	Name      string `gorm:"column:name"`
	// Object and PrevObject are as stored until resolveLog has made them
	// JSON: Object is empty where another row holds it (log.go).
	Object     []byte `gorm:"column:object"`
	PrevObject []byte `gorm:"column:prev_object"`
	// Created is the creationTimestamp of the pre-image, or of the object
	// when there is none: what a page ordered by it seeks on (changedSince).
	Created int64 `gorm:"column:created_at"`
}

func (eventRow) TableName() string { return eventsTable }

func (e *eventRow) event() storage.Event {
	return storage.Event{
		Revision: e.Revision,
		Type:     watch.EventType(e.Type),
		Key: storage.Key{
			Cluster: e.Cluster, GVR: schema.GroupVersionResource{Group: e.Group, Version: e.Version, Resource: e.Resource},
			Namespace: e.Namespace, Name: e.Name,
		},
		Object: e.Object,
	}
}
