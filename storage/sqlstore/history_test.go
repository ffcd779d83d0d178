package sqlstore_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"reflect"
	"slices"
	"testing"
	"time"

	jsonpatch "github.com/evanphx/json-patch/v5"
	"github.com/klauspost/compress/zstd"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/panorama-io/panorama/storage"
	"github.com/panorama-io/panorama/storage/sqlstore"
	"github.com/panorama-io/panorama/storage/storagetest"
)

// jsonEqual compares two JSON documents by value.
func jsonEqual(t *testing.T, a, b []byte) bool {
	t.Helper()
	var x, y any
	if err := json.Unmarshal(a, &x); err != nil {
		t.Fatalf("%s: %v", a, err)
	}
	if err := json.Unmarshal(b, &y); err != nil {
		t.Fatalf("%s: %v", b, err)
	}
	return reflect.DeepEqual(x, y)
}

func apply(t *testing.T, s storage.Interface, gvr schema.GroupVersionResource, changes ...storage.Change) int64 {
	t.Helper()
	rev, err := s.ForCluster("east", storage.Unfenced).Apply(context.Background(), gvr, changes)
	if err != nil {
		t.Fatal(err)
	}
	return rev
}

// TestObjectHistory changes a deployment five times and reads back its five
// versions and their merge patches, whether its changes are in the log,
// partly compacted into history, or all of them in history; then its
// deletion.
func TestObjectHistory(t *testing.T) {
	storagetest.ForEach(t, func(t *testing.T, b storagetest.Backend) {
		s := b.Open(t)
		ctx := context.Background()
		key := storage.Key{Cluster: "east", GVR: deploymentsGVR, Namespace: "default", Name: "web"}
		deployment := func(rv string, replicas int64, image string) *unstructured.Unstructured {
			return object("Deployment", "default", "web", rv, func(u *unstructured.Unstructured) {
				_ = unstructured.SetNestedField(u.Object, replicas, "spec", "replicas")
				_ = unstructured.SetNestedSlice(u.Object, []any{map[string]any{"name": "app", "image": image}}, "spec", "template", "spec", "containers")
			})
		}
		// Another object's changes in between: revisions are global.
		apply(t, s, podsGVR, storage.Upsert(object("Pod", "default", "other", "1")))
		var stored [][]byte // the object as Get returned it after each change
		var revs []int64
		var times []time.Time
		for i, change := range []*unstructured.Unstructured{
			deployment("10", 1, "nginx:1.26"),
			deployment("11", 2, "nginx:1.26"),
			deployment("12", 2, "nginx:1.27"),
			deployment("13", 3, "nginx:1.27"),
			deployment("14", 5, "nginx:1.27"),
		} {
			before := time.Now().Truncate(time.Microsecond)
			revs = append(revs, apply(t, s, deploymentsGVR, storage.Upsert(change)))
			times = append(times, before)
			o, err := s.Get(ctx, key)
			if err != nil {
				t.Fatal(err)
			}
			stored = append(stored, o.Data)
			apply(t, s, podsGVR, storage.Upsert(object("Pod", "default", "other", fmt.Sprint(i+2))))
		}
		wantPatches := []string{
			"", // the whole object
			`{"metadata":{"annotations":{"panorama.io/member-resource-version":"11"},"resourceVersion":"%d"},"spec":{"replicas":2}}`,
			`{"metadata":{"annotations":{"panorama.io/member-resource-version":"12"},"resourceVersion":"%d"},"spec":{"template":{"spec":{"containers":[{"image":"nginx:1.27","name":"app"}]}}}}`,
			`{"metadata":{"annotations":{"panorama.io/member-resource-version":"13"},"resourceVersion":"%d"},"spec":{"replicas":3}}`,
			`{"metadata":{"annotations":{"panorama.io/member-resource-version":"14"},"resourceVersion":"%d"},"spec":{"replicas":5}}`,
		}
		check := func(stage string, extra int) {
			t.Helper()
			versions, err := s.ObjectHistory(ctx, key, 0)
			if err != nil {
				t.Fatalf("%s: %v", stage, err)
			}
			// The last versions alone are the same, from history or log.
			for _, limit := range []int{1, 2, 4} {
				last, err := s.ObjectHistory(ctx, key, limit)
				if err != nil || len(versions) < limit || !reflect.DeepEqual(last, versions[len(versions)-limit:]) {
					t.Errorf("%s: the last %d versions: %d, %v", stage, limit, len(last), err)
				}
			}
			if len(versions) != 5+extra {
				t.Fatalf("%s: %d versions, want %d", stage, len(versions), 5+extra)
			}
			for i, v := range versions[:5] {
				wantType := watch.Modified
				if i == 0 {
					wantType = watch.Added
				}
				if v.Revision != revs[i] || v.Type != wantType || v.MemberResourceVersion != fmt.Sprint(10+i) {
					t.Errorf("%s: version %d is %d %s %q, want %d %s %d", stage, i, v.Revision, v.Type, v.MemberResourceVersion, revs[i], wantType, 10+i)
				}
				if !jsonEqual(t, v.Object, stored[i]) {
					t.Errorf("%s: version %d is\n%s\nwant\n%s", stage, i, v.Object, stored[i])
				}
				want := stored[0]
				if i > 0 {
					want = fmt.Appendf(nil, wantPatches[i], revs[i])
				}
				if !jsonEqual(t, v.Patch, want) {
					t.Errorf("%s: patch %d is %s, want %s", stage, i, v.Patch, want)
				}
				if v.Time.Before(times[i]) || (i+1 < len(times) && v.Time.After(times[i+1])) {
					t.Errorf("%s: version %d at %v, written between %v and the next change", stage, i, v.Time, times[i])
				}
			}
			if extra == 1 {
				v := versions[5]
				if v.Type != watch.Deleted || string(v.Patch) != "null" || !jsonEqual(t, v.Object, stored[4]) || v.MemberResourceVersion != "14" {
					t.Errorf("%s: deletion is %s %s %q\n%s", stage, v.Type, v.Patch, v.MemberResourceVersion, v.Object)
				}
			}
		}
		check("in the log", 0)
		if err := s.Compact(ctx, revs[2], true); err != nil {
			t.Fatal(err)
		}
		check("three in history", 0)
		current, _, _ := s.Revision(ctx)
		if err := s.Compact(ctx, current, true); err != nil {
			t.Fatal(err)
		}
		check("all in history", 0)
		// Kept against the next version, each comes back byte for byte.
		versions, err := s.ObjectHistory(ctx, key, 0)
		if err != nil {
			t.Fatal(err)
		}
		for i, v := range versions {
			if !bytes.Equal(v.Object, stored[i]) {
				t.Errorf("version %d from history is\n%s\nwant\n%s", i, v.Object, stored[i])
			}
		}
		writeEarlierPatches(t, s, revs, stored)
		check("all in history, as earlier versions wrote it", 0)
		deleted := apply(t, s, deploymentsGVR, storage.Delete("default", "web"))
		check("deleted, in the log", 1)
		if err := s.Compact(ctx, deleted, true); err != nil {
			t.Fatal(err)
		}
		check("deleted, in history", 1)
		if _, err := s.ObjectHistory(ctx, storage.Key{Cluster: "east", GVR: deploymentsGVR, Namespace: "default", Name: "none"}, 0); err != storage.ErrNotFound {
			t.Errorf("history of an object never stored: %v", err)
		}
	})
}

// writeEarlierPatches rewrites the history rows of the changes at revs[1:]
// as versions before the deltas wrote them: reverse merge patches, the
// odd ones compressed, the even ones as JSON. stored are the versions.
func writeEarlierPatches(t *testing.T, s *sqlstore.Store, revs []int64, stored [][]byte) {
	t.Helper()
	enc, err := zstd.NewWriter(nil)
	if err != nil {
		t.Fatal(err)
	}
	defer enc.Close()
	for i := 1; i < len(revs); i++ {
		patch, err := jsonpatch.CreateMergePatch(stored[i], stored[i-1])
		if err != nil {
			t.Fatal(err)
		}
		if i%2 == 1 {
			patch = enc.EncodeAll(patch, nil)
		}
		res := sqlstore.GormDB(s).Exec("UPDATE history SET patch = ? WHERE revision = ?", patch, revs[i])
		if res.Error != nil || res.RowsAffected != 1 {
			t.Fatalf("rewriting the history row of %d: %d rows (%v)", revs[i], res.RowsAffected, res.Error)
		}
	}
}

// TestListAsOf lists a resource as it was at past revisions and times, with
// and without filters, a page at a time, after the log was compacted into
// history: each equals the state recorded then, deletes and creates after
// it included. Then retention drops what is older, which answers TooOld.
func TestListAsOf(t *testing.T) {
	storagetest.ForEach(t, func(t *testing.T, b storagetest.Backend) {
		s := b.Open(t)
		ctx := context.Background()
		pod := func(name, rv, app string) storage.Change {
			return storage.Upsert(object("Pod", "default", name, rv, func(u *unstructured.Unstructured) { u.SetLabels(map[string]string{"app": app}) }))
		}
		type snapshot struct {
			rev     int64
			at      time.Time
			objects map[string][]byte // name -> stored JSON
		}
		var snapshots []snapshot
		record := func() {
			res, err := s.List(ctx, &storage.ListQuery{GVR: podsGVR})
			if err != nil {
				t.Fatal(err)
			}
			snap := snapshot{rev: res.Revision, at: time.Now(), objects: map[string][]byte{}}
			for _, o := range res.Objects {
				snap.objects[o.Name] = o.Data
			}
			snapshots = append(snapshots, snap)
		}
		steps := [][]storage.Change{
			{pod("a", "1", "web"), pod("b", "1", "web"), pod("c", "1", "db")},
			{pod("a", "2", "db")},
			{storage.Delete("default", "b"), pod("d", "1", "web")},
			{pod("b", "3", "web"), pod("c", "2", "web")}, // b again, another object
			{pod("a", "3", "web"), storage.Delete("default", "d")},
			{pod("e", "1", "db"), pod("c", "3", "db")},
		}
		for _, step := range steps {
			apply(t, s, podsGVR, step...)
			record()
		}
		current, _, _ := s.Revision(ctx)
		if err := s.Compact(ctx, snapshots[3].rev, true); err != nil {
			t.Fatal(err)
		}
		if _, err := s.List(ctx, &storage.ListQuery{GVR: podsGVR, Revision: snapshots[0].rev}); !storage.IsTooOld(err) {
			t.Fatalf("list below the compaction without history: %v", err)
		}
		compare := func(stage string, q storage.ListQuery, snap snapshot, want func(app string) bool) {
			t.Helper()
			_, objs, rev := listAll(t, s, q, nil)
			if rev != snap.rev {
				t.Errorf("%s: listed at %d, want %d", stage, rev, snap.rev)
			}
			var got, names []string
			for _, o := range objs {
				got = append(got, o.Name)
				if !jsonEqual(t, o.Data, snap.objects[o.Name]) {
					t.Errorf("%s: %s is\n%s\nwant\n%s", stage, o.Name, o.Data, snap.objects[o.Name])
				}
			}
			for name, data := range snap.objects {
				var u unstructured.Unstructured
				if err := u.UnmarshalJSON(data); err != nil {
					t.Fatal(err)
				}
				if want(u.GetLabels()["app"]) {
					names = append(names, name)
				}
			}
			slices.Sort(names)
			if !slices.Equal(got, names) {
				t.Errorf("%s: listed %v, want %v", stage, got, names)
			}
		}
		web, err := labels.Parse("app=web")
		if err != nil {
			t.Fatal(err)
		}
		webReqs, _ := web.Requirements()
		for _, stage := range []struct {
			name      string
			compacted int64
		}{{"half in history", snapshots[3].rev}, {"all in history", current}} {
			compacted := stage.compacted
			if err := s.Compact(ctx, compacted, true); err != nil {
				t.Fatal(err)
			}
			for i, snap := range snapshots {
				all := func(string) bool { return true }
				compare(fmt.Sprintf("%s, step %d", stage.name, i), storage.ListQuery{GVR: podsGVR, Revision: snap.rev, History: true}, snap, all)
				compare(fmt.Sprintf("%s, step %d, pages of 2", stage.name, i), storage.ListQuery{GVR: podsGVR, Revision: snap.rev, History: true, Limit: 2}, snap, all)
				compare(fmt.Sprintf("%s, step %d, app=web", stage.name, i), storage.ListQuery{GVR: podsGVR, Revision: snap.rev, History: true, Labels: webReqs, Limit: 1},
					snap, func(app string) bool { return app == "web" })
				byCreation := storage.ListQuery{GVR: podsGVR, Revision: snap.rev, History: true, Limit: 2, OrderBy: []storage.OrderBy{{Field: storage.OrderCreated}}}
				compare(fmt.Sprintf("%s, step %d, by creation", stage.name, i), byCreation, snap, all)
				rev, err := s.RevisionAt(ctx, snap.at)
				if err != nil || rev != snap.rev {
					t.Errorf("%s: revision at the time of step %d is %d, %v; want %d", stage.name, i, rev, err, snap.rev)
				}
			}
		}
		if _, err := s.RevisionAt(ctx, snapshots[0].at.Add(-time.Hour)); !storage.IsTooOld(err) {
			t.Errorf("revision at a time before any write: %v", err)
		}
		// Retention: what was committed before step 4 is dropped; the
		// state after step 3 is the oldest left.
		if err := s.ExpireHistory(ctx, snapshots[3].at); err != nil {
			t.Fatal(err)
		}
		if _, err := s.List(ctx, &storage.ListQuery{GVR: podsGVR, Revision: snapshots[2].rev, History: true}); !storage.IsTooOld(err) {
			t.Errorf("list below the retention: %v", err)
		}
		if _, err := s.RevisionAt(ctx, snapshots[2].at); !storage.IsTooOld(err) {
			t.Errorf("revision at a time below the retention: %v", err)
		}
		for _, i := range []int{3, 4} {
			compare(fmt.Sprint("after retention, step ", i), storage.ListQuery{GVR: podsGVR, Revision: snapshots[i].rev, History: true}, snapshots[i], func(string) bool { return true })
		}
		versions, err := s.ObjectHistory(ctx, storage.Key{Cluster: "east", GVR: podsGVR, Namespace: "default", Name: "a"}, 0)
		if err != nil || len(versions) != 1 || versions[0].Revision <= snapshots[3].rev {
			t.Errorf("history of a after retention: %v, %v", versions, err)
		}
		// Without history, compaction drops it all.
		if err := s.Compact(ctx, current, false); err != nil {
			t.Fatal(err)
		}
		apply(t, s, podsGVR, pod("f", "1", "web"))
		last, _, _ := s.Revision(ctx)
		if err := s.Compact(ctx, last, false); err != nil {
			t.Fatal(err)
		}
		if _, err := s.List(ctx, &storage.ListQuery{GVR: podsGVR, Revision: current, History: true}); !storage.IsTooOld(err) {
			t.Errorf("list below a compaction without history: %v", err)
		}
	})
}

// TestMigrationToHistory: a database compacted before it had history gets
// the history's mark at its compaction mark, so that no list rebuilds a
// state from changes it never kept.
func TestMigrationToHistory(t *testing.T) {
	storagetest.ForEach(t, func(t *testing.T, b storagetest.Backend) {
		ctx := context.Background()
		opts := b.Options(t)
		s, err := sqlstore.Open(ctx, opts)
		if err != nil {
			t.Fatal(err)
		}
		for i := range 3 {
			apply(t, s, podsGVR, storage.Upsert(object("Pod", "default", "a", fmt.Sprint(i+1))))
		}
		// As a store of schema version 4 compacted it: the log dropped,
		// nothing kept.
		db := sqlstore.GormDB(s)
		execAll(t, db,
			"DELETE FROM events WHERE revision <= 2",
			"UPDATE panorama_meta SET value = 2 WHERE name = 'compacted'",
			"DELETE FROM panorama_meta WHERE name = 'history_expired'",
			"DELETE FROM panorama_schema_migrations WHERE version = 5",
			"DROP TABLE history",
			"DROP TABLE revision_times",
		)
		_ = s.Close()
		s = storagetest.OpenStore(t, opts)
		if _, err := s.List(ctx, &storage.ListQuery{GVR: podsGVR, Revision: 1, History: true}); !storage.IsTooOld(err) {
			t.Errorf("list below the compaction before history: %v", err)
		}
		res, err := s.List(ctx, &storage.ListQuery{GVR: podsGVR, Revision: 2, History: true})
		if err != nil || len(res.Objects) != 1 || res.Objects[0].MemberResourceVersion != "2" {
			t.Errorf("list at the compaction mark: %+v, %v", res, err)
		}
	})
}
