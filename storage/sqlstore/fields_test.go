package sqlstore_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/fields"

	"github.com/panorama-io/panorama/storage"
	"github.com/panorama-io/panorama/storage/sqlstore"
	"github.com/panorama-io/panorama/storage/storagetest"
)

// teamField and portsField are declared by TestDeclareFields: one of every
// resource, one multi-valued of deployments only.
var (
	teamField  = storage.FieldDeclaration{Name: "team", Paths: []string{"metadata.annotations.team"}}
	portsField = storage.FieldDeclaration{Name: "ports", Resources: []string{"deployments.apps"},
		Paths: []string{"spec.template.spec.containers[*].ports[*].containerPort"}}
)

// TestDeclareFields declares fields over stored objects, more than one
// reindexing batch of them: existing rows become selectable, by this store
// and by a second one on the database (another replica), the answers equal
// the brute-force reference, new writes are indexed, and dropping the
// declaration makes the field unknown again.
func TestDeclareFields(t *testing.T) {
	storagetest.ForEach(t, func(t *testing.T, b storagetest.Backend) {
		opts := b.Options(t)
		s := storagetest.OpenStore(t, opts)
		ctx := context.Background()
		rng := rand.New(rand.NewPCG(3, 4))
		teams := []string{"a", "b", "c"}
		withTeam := func(u *unstructured.Unstructured) {
			if rng.IntN(4) > 0 {
				u.SetAnnotations(map[string]string{"team": teams[rng.IntN(len(teams))]})
			}
		}
		withPorts := func(u *unstructured.Unstructured) {
			var containers []any
			for i := range rng.IntN(3) {
				var ports []any
				for range rng.IntN(3) {
					ports = append(ports, map[string]any{"containerPort": int64(80 + rng.IntN(3))})
				}
				containers = append(containers, map[string]any{"name": fmt.Sprint("c", i), "ports": ports})
			}
			_ = unstructured.SetNestedSlice(u.Object, containers, "spec", "template", "spec", "containers")
		}
		w := &world{objects: map[storage.Key]*storage.Object{}}
		write := func(n int, prefix string) {
			var deps, pods []storage.Change
			for i := range n {
				deps = append(deps, storage.Upsert(object("Deployment", "web", fmt.Sprint(prefix, i), "1", withTeam, withPorts)))
				pods = append(pods, storage.Upsert(object("Pod", "web", fmt.Sprint(prefix, i), "1", withTeam, withPorts)))
			}
			for _, c := range []struct {
				changes []storage.Change
				q       storage.ListQuery
			}{{deps, storage.ListQuery{GVR: deploymentsGVR}}, {pods, storage.ListQuery{GVR: podsGVR}}} {
				if _, err := s.ForCluster("east", storage.Unfenced).Apply(ctx, c.q.GVR, c.changes); err != nil {
					t.Fatal(err)
				}
				for _, ch := range c.changes {
					w.put("east", c.q.GVR, ch.Object)
				}
			}
		}
		write(300, "old-") // 600 rows: two reindexing batches
		queries := []storage.ListQuery{
			{GVR: deploymentsGVR, Fields: fields.ParseSelectorOrDie("team=a").Requirements()},
			{GVR: podsGVR, Fields: fields.ParseSelectorOrDie("team!=b").Requirements(), Limit: 50},
			{GVR: podsGVR, Fields: fields.ParseSelectorOrDie("team=").Requirements()},
			{GVR: deploymentsGVR, Fields: fields.ParseSelectorOrDie("ports=81").Requirements()},
			{GVR: deploymentsGVR, Fields: fields.ParseSelectorOrDie("ports!=80,team=c").Requirements(), Limit: 7},
			{GVR: podsGVR, Fields: fields.ParseSelectorOrDie("ports=80").Requirements()}, // pods have no ports field
		}
		for _, q := range queries {
			if _, err := s.List(ctx, &q); !storage.IsInvalid(err) {
				t.Fatalf("%s before the declaration: %v, want an invalid-input error", describe(q), err)
			}
		}
		for _, bad := range [][]storage.FieldDeclaration{
			{{Name: "x", Paths: []string{"spec..a"}}},
			{{Name: "x", Paths: []string{"spec.a[0]"}}},
			{{Name: "images", Paths: []string{"spec.a"}}},
			{{Name: "x"}},
			{{Name: "x", Paths: []string{"a"}, Resources: []string{"a/b"}}},
		} {
			if err := s.DeclareFields(ctx, bad); !storage.IsInvalid(err) {
				t.Fatalf("declaring %+v: %v, want an invalid-input error", bad, err)
			}
		}
		declared := []storage.FieldDeclaration{portsField, teamField}
		if err := s.DeclareFields(ctx, declared); err != nil {
			t.Fatal(err)
		}
		write(20, "new-") // indexed as written
		fs, err := s.Fields(ctx)
		if err != nil || fs.Version == 0 || !fs.Selectable("team") || !fs.Selectable("ports") {
			t.Fatalf("fields after declaring: %+v, %v", fs, err)
		}
		expected := describeAll(t, w, fs)
		for _, q := range queries {
			checkQuery(t, s, expected, q)
		}
		// Declaring the same again, in another order, is no new version.
		if err := s.DeclareFields(ctx, []storage.FieldDeclaration{teamField, portsField}); err != nil {
			t.Fatal(err)
		}
		if again, _ := s.Fields(ctx); again.Version != fs.Version {
			t.Fatalf("the same declarations made version %d after %d", again.Version, fs.Version)
		}
		// Another replica sees them once it rechecks.
		replica := storagetest.OpenStore(t, opts)
		checkQuery(t, replica, expected, queries[0])

		// Dropping ports: its rows go, team stays.
		if err := replica.DeclareFields(ctx, []storage.FieldDeclaration{teamField}); err != nil {
			t.Fatal(err)
		}
		deadline := time.Now().Add(5 * time.Second)
		for {
			_, err := s.List(ctx, &queries[3])
			if storage.IsInvalid(err) {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("ports still selectable after it was dropped: %v", err)
			}
			time.Sleep(100 * time.Millisecond)
		}
		checkQuery(t, s, expected, queries[1])
		n := countFieldRows(t, s, "ports")
		if n != 0 {
			t.Fatalf("%d attribute rows of the dropped field ports are left", n)
		}
	})
}

// describeAll is w as fs describes its objects.
func describeAll(t *testing.T, w *world, fs *storage.FieldSet) *world {
	t.Helper()
	out := &world{objects: map[storage.Key]*storage.Object{}}
	for k, o := range w.objects {
		d, err := fs.DecodeStored(k.GVR.GroupResource(), o.Data)
		if err != nil {
			t.Fatal(err)
		}
		d.Key = k
		out.objects[k] = &d
	}
	return out
}

func countFieldRows(t *testing.T, s *sqlstore.Store, field string) int64 {
	t.Helper()
	var n int64
	if err := sqlstore.GormDB(s).Table("object_attributes a").Joins("JOIN attribute_keys k ON k.id = a.key_id").
		Where("k.kind = ? AND k.name = ?", "f", field).Count(&n).Error; err != nil {
		t.Fatal(err)
	}
	return n
}

// TestMigrationToMultiValuedFields takes a database back to the schema
// before attributes had seq, with rows in it, and opens it again: the
// migrations keep every label and field row, moved into the dictionary,
// then store several values of one field, and the first declaration
// indexes the built-in fields added since (images) for the rows written
// before.
func TestMigrationToMultiValuedFields(t *testing.T) {
	storagetest.ForEach(t, func(t *testing.T, b storagetest.Backend) {
		ctx := context.Background()
		opts := b.Options(t)
		s, err := sqlstore.Open(ctx, opts)
		if err != nil {
			t.Fatal(err)
		}
		rng := rand.New(rand.NewPCG(7, 8))
		w := &world{objects: map[storage.Key]*storage.Object{}}
		var changes []storage.Change
		for i := range 50 {
			changes = append(changes, storage.Upsert(object("Pod", "web", fmt.Sprint("p-", i), "1", withLabels(rng), func(u *unstructured.Unstructured) {
				_ = unstructured.SetNestedField(u.Object, nodes[i%len(nodes)], "spec", "nodeName")
			}, withImages(rng, "spec"))))
		}
		if _, err := s.ForCluster("east", storage.Unfenced).Apply(ctx, podsGVR, changes); err != nil {
			t.Fatal(err)
		}
		for _, c := range changes {
			w.put("east", podsGVR, c.Object)
		}
		// The binary of before kept keys and values in the attribute rows,
		// which had no seq, wrote no images rows, and declared nothing.
		db := sqlstore.GormDB(s)
		toLegacyAttributes(t, b.Name, db, false, "", 4)
		execAll(t, db, "DELETE FROM panorama_fields", "UPDATE panorama_meta SET value = 0 WHERE name IN ('fields_declared', 'fields_indexed')")
		_ = s.Close()
		s = storagetest.OpenStore(t, opts)
		for _, q := range []storage.ListQuery{
			{GVR: podsGVR, Labels: mustReqs("app=web")},
			{GVR: podsGVR, Fields: fields.ParseSelectorOrDie("spec.nodeName=node-b").Requirements()},
		} {
			checkQuery(t, s, w, q)
		}
		// The controller manager declares at start: the new built-in
		// fields are indexed for the rows written before.
		if err := s.DeclareFields(ctx, nil); err != nil {
			t.Fatal(err)
		}
		checkQuery(t, s, w, storage.ListQuery{GVR: podsGVR, Images: []string{"nginx"}})
		many := object("Pod", "web", "many", "1", withImages(rand.New(rand.NewPCG(1, 1)), "spec"), func(u *unstructured.Unstructured) {
			_ = unstructured.SetNestedSlice(u.Object, []any{map[string]any{"image": "a"}, map[string]any{"image": "b"}}, "spec", "containers")
		})
		if _, err := s.ForCluster("east", storage.Unfenced).Apply(ctx, podsGVR, []storage.Change{storage.Upsert(many)}); err != nil {
			t.Fatal(err)
		}
		w.put("east", podsGVR, many)
		checkQuery(t, s, w, storage.ListQuery{GVR: podsGVR, Fields: fields.ParseSelectorOrDie("images=b").Requirements()})
		checkQuery(t, s, w, storage.ListQuery{GVR: podsGVR, Images: []string{"a"}})
	})
}

// TestImagesManyValues searches images among more distinct references
// than a search resolves to values (maxImageValues), on more rows than it
// reads to resolve them, where each row's images are tested instead, and
// among fewer.
func TestImagesManyValues(t *testing.T) {
	storagetest.ForEach(t, func(t *testing.T, b storagetest.Backend) {
		s := b.Open(t)
		w := &world{objects: map[storage.Key]*storage.Object{}}
		var changes []storage.Change
		for i := range storage.MaxListValues + 100 {
			changes = append(changes, storage.Upsert(object("Pod", "web", fmt.Sprint("p-", i), "1", func(u *unstructured.Unstructured) {
				_ = unstructured.SetNestedSlice(u.Object, []any{map[string]any{"image": fmt.Sprintf("registry.example/img-%d:1", i)}}, "spec", "containers")
			})))
		}
		if _, err := s.ForCluster("east", storage.Unfenced).Apply(context.Background(), podsGVR, changes); err != nil {
			t.Fatal(err)
		}
		for _, c := range changes {
			w.put("east", podsGVR, c.Object)
		}
		// Limit 300 reads up to 1200 image rows, 50 up to 200: "img-1"
		// is then on more rows, a common image.
		for _, images := range [][]string{{"img-"}, {"img-10", "img-2"}, {"img-1"}, {"registry.example/"}, {"nothing"}} {
			for _, limit := range []int64{300, 50} {
				checkQuery(t, s, w, storage.ListQuery{GVR: podsGVR, Images: images, Limit: limit})
			}
		}
	})
}

// TestStoredDeclarationRefused: a stored version with a declaration this
// binary refuses (a name built in since it was declared) neither fails
// writes nor the next declaration.
func TestStoredDeclarationRefused(t *testing.T) {
	storagetest.ForEach(t, func(t *testing.T, b storagetest.Backend) {
		s := b.Open(t)
		ctx := context.Background()
		db := sqlstore.GormDB(s)
		execAll(t, db,
			`INSERT INTO panorama_fields (version, declarations) VALUES (7, '{"builtin":0,"declared":[{"name":"images","paths":["spec.x"]},{"name":"team","paths":["metadata.annotations.team"]}]}')`,
			"UPDATE panorama_meta SET value = 7 WHERE name IN ('fields_declared', 'fields_indexed')",
		)
		w := &world{objects: map[storage.Key]*storage.Object{}}
		pod := object("Pod", "web", "p", "1", func(u *unstructured.Unstructured) {
			u.SetAnnotations(map[string]string{"team": "a"})
			_ = unstructured.SetNestedSlice(u.Object, []any{map[string]any{"image": "nginx"}}, "spec", "containers")
		})
		if _, err := s.ForCluster("east", storage.Unfenced).Apply(ctx, podsGVR, []storage.Change{storage.Upsert(pod)}); err != nil {
			t.Fatal(err)
		}
		w.put("east", podsGVR, pod)
		checkQuery(t, s, w, storage.ListQuery{GVR: podsGVR, Fields: fields.ParseSelectorOrDie("images=nginx").Requirements()})
		if err := s.DeclareFields(ctx, []storage.FieldDeclaration{teamField}); err != nil {
			t.Fatal(err)
		}
		fs, err := s.Fields(ctx)
		if err != nil || fs.Version != 8 {
			t.Fatalf("fields after declaring: %+v %v", fs, err)
		}
		checkQuery(t, s, describeAll(t, w, fs), storage.ListQuery{GVR: podsGVR, Fields: fields.ParseSelectorOrDie("team=a").Requirements()})
	})
}

// TestStoredDeclarationsPastLimits: declarations stored by a binary with
// wider limits (more fields of one resource than MaxFieldsPerResource) do
// not fail writes: the first ones within the limits are indexed, the rest
// left out.
func TestStoredDeclarationsPastLimits(t *testing.T) {
	storagetest.ForEach(t, func(t *testing.T, b storagetest.Backend) {
		s := b.Open(t)
		ctx := context.Background()
		var decls []string
		annotations := map[string]string{}
		for i := range storage.MaxFieldsPerResource + 1 {
			decls = append(decls, fmt.Sprintf(`{"name":"f%02d","paths":["metadata.annotations.f%02d"],"resources":["pods"]}`, i, i))
			annotations[fmt.Sprintf("f%02d", i)] = "v"
		}
		execAll(t, sqlstore.GormDB(s),
			`INSERT INTO panorama_fields (version, declarations) VALUES (7, '{"builtin":0,"declared":[`+strings.Join(decls, ",")+`]}')`,
			"UPDATE panorama_meta SET value = 7 WHERE name IN ('fields_declared', 'fields_indexed')",
		)
		pod := object("Pod", "web", "p", "1", func(u *unstructured.Unstructured) { u.SetAnnotations(annotations) })
		if _, err := s.ForCluster("east", storage.Unfenced).Apply(ctx, podsGVR, []storage.Change{storage.Upsert(pod)}); err != nil {
			t.Fatal(err)
		}
		fs, err := s.Fields(ctx)
		if err != nil {
			t.Fatal(err)
		}
		last := fmt.Sprintf("f%02d", storage.MaxFieldsPerResource)
		if !fs.Selectable("f00") || fs.Selectable(last) {
			t.Fatalf("selectable: f00 %v, %s %v; want the first %d only", fs.Selectable("f00"), last, fs.Selectable(last), storage.MaxFieldsPerResource)
		}
		res, err := s.List(ctx, &storage.ListQuery{GVR: podsGVR, Fields: fields.ParseSelectorOrDie(fmt.Sprintf("f%02d=v", storage.MaxFieldsPerResource-1)).Requirements()})
		if err != nil || len(res.Objects) != 1 {
			t.Fatalf("selecting by the last field indexed: %d objects, %v", len(res.Objects), err)
		}
	})
}
