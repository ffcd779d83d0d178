package sqlstore_test

import (
	"context"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/panorama-io/panorama/storage"
	"github.com/panorama-io/panorama/storage/sqlstore"
	"github.com/panorama-io/panorama/storage/storagetest"
)

// TestRowsAsWritten reads back the columns a write stores, through SQL,
// whichever way the dialect inserts them (PostgreSQL as arrays): text
// beyond ASCII, an empty label value, a multi-valued field's sequence,
// and a log entry's empty object and NULL pre-image, which are not the
// same thing to the log's readers.
func TestRowsAsWritten(t *testing.T) {
	storagetest.ForEach(t, func(t *testing.T, b storagetest.Backend) {
		s := b.Open(t)
		ctx := context.Background()
		owner := object("ReplicaSet", "default", "rs", "1")
		pod := object("Pod", "default", "pod-ü", "7", withOwner(owner), func(u *unstructured.Unstructured) {
			u.SetLabels(map[string]string{"app": "wéb", "empty": ""})
			_ = unstructured.SetNestedSlice(u.Object, []any{
				map[string]any{"name": "a", "image": "nginx:1.27"},
				map[string]any{"name": "b", "image": "busybox"},
			}, "spec", "containers")
		})
		if _, err := s.ForCluster("east", storage.Unfenced).Apply(ctx, podsGVR, []storage.Change{storage.Upsert(pod.DeepCopy())}); err != nil {
			t.Fatal(err)
		}
		pod.SetLabels(map[string]string{"app": "wéb"})
		pod.SetResourceVersion("8")
		rev, err := s.ForCluster("east", storage.Unfenced).Apply(ctx, podsGVR, []storage.Change{storage.Upsert(pod)})
		if err != nil {
			t.Fatal(err)
		}
		db := sqlstore.GormDB(s)

		type resource struct {
			Revision                                         int64
			Cluster, APIGroup, Version, Resource, Namespace  string
			Name, Kind, UID, OwnerUID, MemberResourceVersion string
			CreatedAt                                        int64
		}
		var rows []resource
		if err := db.Raw("SELECT revision, cluster, api_group, version, resource, namespace, name, kind, uid, owner_uid, member_resource_version, created_at FROM resources").
			Scan(&rows).Error; err != nil {
			t.Fatal(err)
		}
		want := resource{Revision: rev, Cluster: "east", Version: "v1", Resource: "pods", Namespace: "default", Name: "pod-ü", Kind: "Pod",
			UID: string(pod.GetUID()), OwnerUID: string(owner.GetUID()), MemberResourceVersion: "8", CreatedAt: baseTime.Unix()}
		if len(rows) != 1 || rows[0] != want {
			t.Fatalf("resources rows %+v, want %+v", rows, want)
		}

		type attribute struct {
			Kind, AttrKey, AttrValue string
			Seq                      int
		}
		var attrs []attribute
		if err := db.Raw("SELECT k.kind, k.name AS attr_key, v.value AS attr_value, a.seq FROM object_attributes a JOIN attribute_keys k ON k.id = a.key_id "+
			"JOIN attribute_values v ON v.id = a.value_id JOIN resources r ON r.object_id = a.object_id WHERE r.revision = ? AND (k.kind = 'l' OR k.name = 'images') ORDER BY k.kind, k.name, a.seq", rev).
			Scan(&attrs).Error; err != nil {
			t.Fatal(err)
		}
		wantAttrs := []attribute{{"f", "images", "busybox", 0}, {"f", "images", "nginx:1.27", 1}, {"l", "app", "wéb", 0}}
		if len(attrs) != len(wantAttrs) {
			t.Fatalf("attributes %+v, want %+v", attrs, wantAttrs)
		}
		for i := range attrs {
			if attrs[i] != wantAttrs[i] {
				t.Fatalf("attributes %+v, want %+v", attrs, wantAttrs)
			}
		}

		type entry struct {
			Revision     int64
			Type         string
			ObjectNull   bool
			ObjectLength int
			PrevNull     bool
			CreatedAt    int64
		}
		var log []entry
		if err := db.Raw("SELECT revision, type, object IS NULL AS object_null, LENGTH(object) AS object_length, prev_object IS NULL AS prev_null, created_at FROM events ORDER BY revision").
			Scan(&log).Error; err != nil {
			t.Fatal(err)
		}
		wantLog := []entry{
			{Revision: rev - 1, Type: "ADDED", PrevNull: true, CreatedAt: baseTime.Unix()},
			{Revision: rev, Type: "MODIFIED", CreatedAt: baseTime.Unix()},
		}
		if len(log) != 2 || log[0] != wantLog[0] || log[1] != wantLog[1] {
			t.Fatalf("log %+v, want %+v", log, wantLog)
		}
	})
}
