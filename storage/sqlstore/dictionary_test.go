package sqlstore_test

import (
	"context"
	"math/rand/v2"
	"testing"

	"gorm.io/gorm"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/panorama-io/panorama/storage"
	"github.com/panorama-io/panorama/storage/sqlstore"
	"github.com/panorama-io/panorama/storage/storagetest"
)

// TestDictionarySweep: compaction deletes the keys and values no object
// has any more, and a store that cached their ids before (another
// replica's) neither uses them again nor misses the ones assigned since,
// although the sweep left the largest id free for the next value.
func TestDictionarySweep(t *testing.T) {
	storagetest.ForEach(t, func(t *testing.T, b storagetest.Backend) {
		ctx := context.Background()
		opts := b.Options(t)
		cached, sweeper := storagetest.OpenStore(t, opts), storagetest.OpenStore(t, opts)
		labelled := func(name string, labels map[string]string) *unstructured.Unstructured {
			return object("Pod", "web", name, "1", func(u *unstructured.Unstructured) { u.SetLabels(labels) })
		}
		w := &world{objects: map[storage.Key]*storage.Object{}}
		put := func(s storage.Interface, objs ...*unstructured.Unstructured) {
			t.Helper()
			for _, o := range objs {
				apply(t, s, podsGVR, storage.Upsert(o))
				w.put("east", podsGVR, o)
			}
		}
		put(cached, labelled("kept", map[string]string{"app": "kept"}))
		// The last value assigned, and a key of one object.
		put(cached, labelled("gone", map[string]string{"app": "gone"}), labelled("lonely", map[string]string{"lonely": "x"}))
		apply(t, cached, podsGVR, storage.Delete("web", "gone"), storage.Delete("web", "lonely"))
		delete(w.objects, storage.Key{Cluster: "east", GVR: podsGVR, Namespace: "web", Name: "gone"})
		delete(w.objects, storage.Key{Cluster: "east", GVR: podsGVR, Namespace: "web", Name: "lonely"})

		rev, _, err := sweeper.Revision(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if err := sweeper.Compact(ctx, rev, true); err != nil {
			t.Fatal(err)
		}
		db := sqlstore.GormDB(sweeper)
		var left int64
		if err := db.Table("attribute_values").Where("value IN ?", []string{"gone", "x"}).Count(&left).Error; err != nil || left != 0 {
			t.Fatalf("%d values of deleted objects left after compaction (%v)", left, err)
		}
		if err := db.Table("attribute_keys").Where("name = ?", "lonely").Count(&left).Error; err != nil || left != 0 {
			t.Fatalf("%d keys of deleted objects left after compaction (%v)", left, err)
		}
		// The sweeper assigns the freed ids to new values, then the store
		// that cached the old ones writes those values again.
		put(sweeper, labelled("other", map[string]string{"app": "other", "team": "t"}))
		put(cached, labelled("again", map[string]string{"app": "gone", "lonely": "x"}))
		for _, sel := range []string{"app=gone", "app=other", "app=kept", "lonely=x", "team=t", "app!=gone", "app in (gone,other)"} {
			for _, s := range []storage.Interface{cached, sweeper} {
				checkQuery(t, s, w, storage.ListQuery{GVR: podsGVR, Labels: mustReqs(sel)})
			}
		}
		checkAttributeIntegrity(t, db)
	})
}

// checkAttributeIntegrity fails t where an attribute row names a value
// that is not in the dictionary, or one of another key.
func checkAttributeIntegrity(t *testing.T, db *gorm.DB) {
	t.Helper()
	var broken int64
	if err := db.Table("object_attributes a").Joins("LEFT JOIN attribute_values v ON v.id = a.value_id").
		Where("v.id IS NULL OR v.key_id <> a.key_id").Count(&broken).Error; err != nil || broken != 0 {
		t.Fatalf("%d attribute rows name values not in the dictionary or of another key (%v)", broken, err)
	}
}

// TestDictionaryAfterRestore: a store whose cache holds ids the database
// no longer has (restored from a backup taken before they were assigned)
// does not use them for the values it writes next, which the database
// gives those ids to again.
func TestDictionaryAfterRestore(t *testing.T) {
	storagetest.ForEach(t, func(t *testing.T, b storagetest.Backend) {
		s := b.Open(t)
		labelled := func(name, app string) *unstructured.Unstructured {
			return object("Pod", "web", name, "1", func(u *unstructured.Unstructured) { u.SetLabels(map[string]string{"app": app}) })
		}
		w := &world{objects: map[storage.Key]*storage.Object{}}
		for _, o := range []*unstructured.Unstructured{labelled("kept", "kept"), labelled("late", "late")} {
			apply(t, s, podsGVR, storage.Upsert(o))
		}
		w.put("east", podsGVR, labelled("kept", "kept"))
		// The backup was taken before "late": its row, attribute rows and
		// value are not in the database restored.
		execAll(t, sqlstore.GormDB(s),
			"DELETE FROM object_attributes WHERE value_id IN (SELECT id FROM attribute_values WHERE value = 'late')",
			"DELETE FROM attribute_values WHERE value = 'late'",
			"DELETE FROM resources WHERE name = 'late'")
		// A new value first takes the id "late" had; "late" then needs one.
		apply(t, s, podsGVR, storage.Upsert(labelled("new", "new")), storage.Upsert(labelled("late", "late")))
		w.put("east", podsGVR, labelled("new", "new"))
		w.put("east", podsGVR, labelled("late", "late"))
		for _, sel := range []string{"app=new", "app=late", "app=kept", "app!=late"} {
			checkQuery(t, s, w, storage.ListQuery{GVR: podsGVR, Labels: mustReqs(sel)})
		}
		checkAttributeIntegrity(t, sqlstore.GormDB(s))
	})
}

// TestAttributeRowsFillTheirPages: a batch's attribute rows reach InnoDB
// in its primary key's order, so that their pages fill as full as those
// of a copy of the table written in that order. In the order of the
// labels' maps, every few rows turned back and InnoDB split the page in
// half: the pages held half the rows they could, and the attribute rows
// took 0.39 × the pods' JSON rather than 0.28 × (BenchmarkBytesPerObject).
// How full pages are is InnoDB's own account: the test is MariaDB's.
func TestAttributeRowsFillTheirPages(t *testing.T) {
	s := backend(t, "mysql").Open(t)
	storagetest.StoreRealisticPods(t, s, podsGVR, rand.New(rand.NewPCG(11, 11)), 2_000, 0, storagetest.BenchCluster)
	db := sqlstore.GormDB(s)
	for _, stmt := range []string{
		"CREATE TABLE filled LIKE object_attributes",
		"INSERT INTO filled SELECT * FROM object_attributes ORDER BY object_id, key_id, seq",
		// Both tables' pages in the buffer pool, where their rows are counted,
		// even if other tests' pages pushed some out meanwhile.
		"SELECT COUNT(*) FROM object_attributes FORCE INDEX (PRIMARY)",
		"SELECT COUNT(*) FROM filled FORCE INDEX (PRIMARY)",
	} {
		if err := db.Exec(stmt).Error; err != nil {
			t.Fatal(err)
		}
	}
	rowsPerPage := func(table string) float64 {
		var pages struct {
			N   int64
			Avg float64
		}
		if err := db.Raw("SELECT COUNT(*) AS n, COALESCE(AVG(number_records), 0) AS avg FROM information_schema.innodb_buffer_page "+
			"WHERE table_name = CONCAT('`', DATABASE(), '`.`', ?, '`') AND index_name = 'PRIMARY' AND page_type = 'INDEX'", table).
			Scan(&pages).Error; err != nil {
			t.Fatal(err)
		}
		if pages.N == 0 {
			t.Fatalf("no page of %s is in the buffer pool", table)
		}
		return pages.Avg
	}
	written, filled := rowsPerPage("object_attributes"), rowsPerPage("filled")
	t.Logf("rows a page: %.0f as written, %.0f in a copy written in key order", written, filled)
	if written < 0.9*filled {
		t.Errorf("the attribute rows' pages hold %.0f rows each, against %.0f in a copy written in the key's order: pages were split half full", written, filled)
	}
}
