package sqlstore_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/panorama-io/panorama/storage"
	"github.com/panorama-io/panorama/storage/sqlstore"
	"github.com/panorama-io/panorama/storage/storagetest"
)

// TestCountSummaryStaysExact writes rounds of random changes: creates,
// updates that change labels and fields (images, multi-valued, among
// them), deletes, a cluster removed, a resource swept as orphaned, a field
// declared over stored rows and dropped again. After each, every count the
// summary answers (filters of clusters and namespaces, at most one label or
// field) equals the brute-force count of the objects the test wrote, and
// the summary holds no negative cell; compacting deletes the empty ones.
func TestCountSummaryStaysExact(t *testing.T) {
	storagetest.ForEach(t, func(t *testing.T, b storagetest.Backend) {
		s := b.Open(t)
		ctx := context.Background()
		rng := rand.New(rand.NewPCG(11, 12))
		w := generate(t, s, rng, 12)
		team := storage.FieldDeclaration{Name: "team", Paths: []string{"metadata.annotations.team"}}
		withTeam := func(u *unstructured.Unstructured) {
			if rng.IntN(3) > 0 {
				u.SetAnnotations(map[string]string{"team": fmt.Sprint("t", rng.IntN(3))})
			}
		}
		fs := storage.BuiltinFields
		check := func(step string) {
			t.Helper()
			described := describeAll(t, w, fs)
			terms := [][]string{{"cluster"}, {"namespace"}, {"namespace", "cluster"}, {"label:app"}, {"namespace", "label:tier"},
				{"label:example.com/canary", "cluster"}, {"field:images"}, {"cluster", "namespace", "field:images"}}
			podTerms := [][]string{{"field:status.phase"}, {"cluster", "field:spec.nodeName"}}
			if fs.Selectable(team.Name) {
				podTerms = append(podTerms, []string{"field:team", "namespace"})
			}
			for _, gvr := range []schema.GroupVersionResource{podsGVR, deploymentsGVR, replicaSetsGVR} {
				all := terms
				if gvr == podsGVR {
					all = append(slices.Clone(terms), podTerms...)
				}
				for _, groupBy := range all {
					q := storage.ListQuery{GVR: gvr}
					switch rng.IntN(4) {
					case 1:
						q.Clusters = []string{clusters[rng.IntN(len(clusters))]}
					case 2:
						q.Namespaces = []string{namespaces[rng.IntN(len(namespaces))], namespaces[rng.IntN(len(namespaces))]}
					case 3:
						q.Clusters, q.Namespaces = clusters[:2], namespaces[1:]
					}
					limit := 0
					if rng.IntN(3) == 0 {
						limit = 1 + rng.IntN(4)
					}
					t.Logf("%s: count by %v", step, groupBy)
					checkCount(t, s, described, q, groupBy, limit)
				}
			}
			var bad int64
			if err := sqlstore.GormDB(s).Table("count_summary").Where("n < 0").Count(&bad).Error; err != nil || bad != 0 {
				t.Fatalf("%s: %d negative cells in the summary (%v)", step, bad, err)
			}
		}
		// Writes leave the cells they empty, the compactor deletes them.
		sweep := func(step string) {
			t.Helper()
			empty := func() (n int64) {
				if err := sqlstore.GormDB(s).Table("count_summary").Where("n = 0").Count(&n).Error; err != nil {
					t.Fatal(err)
				}
				return n
			}
			if n := empty(); n == 0 {
				t.Fatalf("%s: no empty cells before compacting: the changes emptied none", step)
			}
			current, _, err := s.Revision(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if err := s.Compact(ctx, current, true); err != nil {
				t.Fatal(err)
			}
			if n := empty(); n != 0 {
				t.Fatalf("%s: %d empty cells after compacting", step, n)
			}
		}
		check("generated")
		rv := 2
		for round := range 8 {
			for _, c := range clusters {
				for _, gvr := range []schema.GroupVersionResource{podsGVR, deploymentsGVR} {
					var changes []storage.Change
					var written []*unstructured.Unstructured
					var deleted []storage.Key
					for range 12 {
						ns, name := namespaces[rng.IntN(len(namespaces))], fmt.Sprint("churn-", rng.IntN(15))
						if rng.IntN(4) == 0 {
							changes = append(changes, storage.Delete(ns, name))
							deleted = append(deleted, storage.Key{Cluster: c, GVR: gvr, Namespace: ns, Name: name})
							continue
						}
						rv++
						u := object("Pod", ns, name, fmt.Sprint(rv), withLabels(rng), withPodFields(rng), withTeam)
						if gvr == deploymentsGVR {
							u = object("Deployment", ns, name, fmt.Sprint(rv), withLabels(rng), withImages(rng, "spec", "template", "spec"), withTeam)
						}
						changes = append(changes, storage.Upsert(u))
						written = append(written, u)
					}
					if _, err := s.ForCluster(c, storage.Unfenced).Apply(ctx, gvr, changes); err != nil {
						t.Fatal(err)
					}
					// The last change of a key wins: replay them in order.
					wi := 0
					for _, ch := range changes {
						if ch.Object == nil {
							delete(w.objects, deleted[0])
							deleted = deleted[1:]
						} else {
							w.put(c, gvr, written[wi])
							wi++
						}
					}
				}
			}
			step := fmt.Sprint("round ", round)
			switch round {
			case 2:
				if err := s.DeclareFields(ctx, []storage.FieldDeclaration{team}); err != nil {
					t.Fatal(err)
				}
				step += ", team declared"
			case 4:
				if _, err := s.ForCluster("north", storage.Unfenced).DeleteResource(ctx, schema.GroupVersionResource{}); err != nil {
					t.Fatal(err)
				}
				for k := range w.objects {
					if k.Cluster == "north" {
						delete(w.objects, k)
					}
				}
				step += ", north removed"
			case 5:
				var keep []storage.ClusterResource
				for _, c := range clusters {
					for _, gvr := range []schema.GroupVersionResource{podsGVR, deploymentsGVR, replicaSetsGVR} {
						if c != "west" || gvr != replicaSetsGVR {
							keep = append(keep, storage.ClusterResource{Cluster: c, GVR: gvr})
						}
					}
				}
				if _, err := s.DeleteOrphans(ctx, keep, nil); err != nil {
					t.Fatal(err)
				}
				for k := range w.objects {
					if k.Cluster == "west" && k.GVR == replicaSetsGVR {
						delete(w.objects, k)
					}
				}
				step += ", west's replicasets swept"
			case 6:
				if err := s.DeclareFields(ctx, nil); err != nil {
					t.Fatal(err)
				}
				step += ", team dropped"
			}
			var err error
			if fs, err = s.Fields(ctx); err != nil {
				t.Fatal(err)
			}
			check(step)
			if round == 3 || round == 7 {
				sweep(step)
				check(step + ", compacted")
			}
		}
	})
}

// TestCountSummaryKeepsNoPerObjectKeys: the summary keeps no cells of the
// labels and fields whose values each name about one object
// (storage.PerObjectKeys), through creates, updates and deletes, and
// counts by them, which go over the objects, are exact, as are those by
// cluster and namespace alone; the next compaction deletes such cells
// that a store of an earlier version wrote (a value's, a rollup's, the
// key's presence), and keeps the others.
func TestCountSummaryKeepsNoPerObjectKeys(t *testing.T) {
	storagetest.ForEach(t, func(t *testing.T, b storagetest.Backend) {
		s := b.Open(t)
		ctx := context.Background()
		w := &world{objects: map[storage.Key]*storage.Object{}}
		apply := func(cluster string, round int, deleted ...int) {
			t.Helper()
			var changes []storage.Change
			for i := range 30 {
				ns, name := namespaces[i%2], fmt.Sprint("job-", i)
				if slices.Contains(deleted, i) {
					changes = append(changes, storage.Delete(ns, name))
					delete(w.objects, storage.Key{Cluster: cluster, GVR: podsGVR, Namespace: ns, Name: name})
					continue
				}
				u := object("Pod", ns, name, fmt.Sprint(10+round), func(u *unstructured.Unstructured) {
					u.SetLabels(map[string]string{"app": "batch", "batch.kubernetes.io/controller-uid": fmt.Sprint("uid-", (i+round)/10)})
					_ = unstructured.SetNestedField(u.Object, fmt.Sprint("10.0.", round, ".", i), "status", "podIP")
				})
				changes = append(changes, storage.Upsert(u))
				w.put(cluster, podsGVR, u)
			}
			if _, err := s.ForCluster(cluster, storage.Unfenced).Apply(ctx, podsGVR, changes); err != nil {
				t.Fatal(err)
			}
		}
		apply("east", 0)
		apply("west", 0)
		apply("east", 1, 3, 4, 17) // every address and some uids changed, three deleted
		db := sqlstore.GormDB(s)
		cells := func(key string) (n int64) {
			t.Helper()
			if err := db.Table("count_summary").Where("attr_key = ?", key).Count(&n).Error; err != nil {
				t.Fatal(err)
			}
			return n
		}
		for _, key := range []string{"batch.kubernetes.io/controller-uid", "status.podIP"} {
			if n := cells(key); n != 0 {
				t.Fatalf("%d summary cells of %s", n, key)
			}
		}
		apps := cells("app")
		if apps == 0 {
			t.Fatal("no summary cells of app")
		}
		check := func(step string) {
			t.Helper()
			t.Logf("%s", step)
			for _, terms := range [][]string{{"label:batch.kubernetes.io/controller-uid"}, {"namespace", "field:status.podIP"},
				{"label:app"}, {"cluster"}, {"namespace", "cluster"}} {
				checkCount(t, s, w, storage.ListQuery{GVR: podsGVR}, terms, 0)
				checkCount(t, s, w, storage.ListQuery{GVR: podsGVR, Namespaces: namespaces[:1], Clusters: []string{"east"}}, terms, 3)
			}
		}
		check("written")

		// Cells of an earlier version: a value's, its rollup's, a label
		// value's and a key's presence (no value).
		value := "10.0.1.1"
		for i, c := range []struct {
			namespace, kind, key string
			value                *string
		}{{namespaces[1], "f", "status.podIP", &value}, {"", "f", "status.podIP", &value}, {namespaces[1], "f", "status.podIP", nil},
			{namespaces[0], "l", "batch.kubernetes.io/controller-uid", &value}} {
			earlier := map[string]any{"id": fmt.Sprintf("f%d", i), "api_group": "", "version": "v1", "resource": "pods", "cluster": "east",
				"namespace": c.namespace, "kind": c.kind, "attr_key": c.key, "attr_value": c.value, "n": 1}
			if err := db.Table("count_summary").Create(earlier).Error; err != nil {
				t.Fatal(err)
			}
		}
		check("with cells of an earlier version")
		current, _, err := s.Revision(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if err := s.Compact(ctx, current, true); err != nil {
			t.Fatal(err)
		}
		for _, key := range []string{"batch.kubernetes.io/controller-uid", "status.podIP"} {
			if n := cells(key); n != 0 {
				t.Fatalf("%d summary cells of %s after compacting", n, key)
			}
		}
		if n := cells("app"); n != apps {
			t.Fatalf("%d summary cells of app after compacting, %d before", n, apps)
		}
		check("compacted")
	})
}

// TestCountSummaryMigration: on a database as the version before the
// summary left it, the migration that makes the summary fills it with the
// cells the writes would have kept; run again (a replica that did not see
// it recorded, or an operator refilling it), it gives the same.
func TestCountSummaryMigration(t *testing.T) {
	storagetest.ForEach(t, func(t *testing.T, b storagetest.Backend) {
		opts := b.Options(t)
		s := storagetest.OpenStore(t, opts)
		generate(t, s, rand.New(rand.NewPCG(13, 14)), 10)
		cells := func(s *sqlstore.Store) []map[string]any {
			var out []map[string]any
			// Writes leave empty cells until a compaction, the migration
			// none; and they keep periods, which it cannot know.
			if err := sqlstore.GormDB(s).Table("count_summary").Where("n <> 0").Order("id").
				Select("id, api_group, version, resource, cluster, namespace, kind, attr_key, attr_value, n").Find(&out).Error; err != nil {
				t.Fatal(err)
			}
			return out
		}
		periods := func(s *sqlstore.Store) (n int64) {
			if err := sqlstore.GormDB(s).Table("count_summary").Where("held_since IS NOT NULL OR held_since_at IS NOT NULL").
				Count(&n).Error; err != nil {
				t.Fatal(err)
			}
			return n
		}
		kept := cells(s)
		if len(kept) < 100 {
			t.Fatalf("the summary holds %d cells after writing 3 clusters of objects", len(kept))
		}
		if n := periods(s); n != int64(len(kept)) {
			t.Fatalf("%d of the %d cells writes kept have a period", n, len(kept))
		}
		for i, c := range []struct {
			legacy        bool // the summary came before the dictionary
			revisionKeyed bool // and after it, before rows were keyed by object
			stmts         []string
		}{
			// As before the summary, and before its periods.
			{true, false, []string{"DROP TABLE count_summary", "DELETE FROM panorama_schema_migrations WHERE version = 18"}},
			{true, false, nil},
			// Filled again by hand (operations.md), from the dictionary.
			{false, false, []string{"DELETE FROM count_summary", "DELETE FROM panorama_schema_migrations WHERE version = 9"}},
			// The same by a binary from before version 19, then upgraded:
			// 9 runs again before 19.
			{false, true, []string{"DELETE FROM count_summary", "DELETE FROM panorama_schema_migrations WHERE version = 9"}},
		} {
			switch {
			case c.legacy:
				toLegacyAttributes(t, b.Name, sqlstore.GormDB(s), true, "", 9)
			case c.revisionKeyed:
				toRevisionKeyed(t, b.Name, sqlstore.GormDB(s))
			}
			execAll(t, sqlstore.GormDB(s), c.stmts...)
			migrated := storagetest.OpenStore(t, opts)
			if got := cells(migrated); fmt.Sprint(got) != fmt.Sprint(kept) {
				t.Fatalf("migration %d: the summary differs from the one writes kept:\n got %d cells %.500v\nwant %d cells %.500v", i+1, len(got), got, len(kept), kept)
			}
			if n := periods(migrated); n != 0 {
				t.Fatalf("migration %d: %d cells have a period, which counting the rows cannot know", i+1, n)
			}
		}
	})
}
