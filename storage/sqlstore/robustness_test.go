package sqlstore_test

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"slices"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/panorama-io/panorama/storage"
	"github.com/panorama-io/panorama/storage/sqlstore"
	"github.com/panorama-io/panorama/storage/storagetest"
)

var (
	rolesGVR   = schema.GroupVersionResource{Group: "rbac.authorization.k8s.io", Version: "v1", Resource: "roles"}
	secretsGVR = schema.GroupVersionResource{Version: "v1", Resource: "secrets"}
	eventsGVR  = schema.GroupVersionResource{Version: "v1", Resource: "events"}
)

func names(t *testing.T, s storage.Interface, q storage.ListQuery) []string {
	t.Helper()
	out, _ := namesAt(t, s, q)
	return out
}

// namesAt returns the names q lists and the revision it lists them at.
func namesAt(t *testing.T, s storage.Interface, q storage.ListQuery) ([]string, int64) {
	t.Helper()
	res, err := s.List(context.Background(), &q)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, o := range res.Objects {
		out = append(out, o.Name)
	}
	return out, res.Revision
}

func TestPoisonObjectsAreRefusedAlone(t *testing.T) {
	storagetest.ForEach(t, func(t *testing.T, b storagetest.Backend) {
		s := b.Open(t)
		ctx := context.Background()
		for _, tc := range []struct {
			gvr    schema.GroupVersionResource
			poison *unstructured.Unstructured
		}{
			{rolesGVR, object("Role", "ns", "a\x00b", "1")},
			{rolesGVR, object("Role", "ns", "bad\xffutf8", "1")},
			{secretsGVR, object("Secret", "ns", "s", "1", func(u *unstructured.Unstructured) { u.Object["type"] = "x\x00y" })},
			{eventsGVR, object("Event", "ns", "e", "1", func(u *unstructured.Unstructured) { u.Object["reason"] = "r\x00" })},
			{eventsGVR, object("Event", "ns", "l", "1", func(u *unstructured.Unstructured) { u.SetLabels(map[string]string{"k": "v\x00"}) })},
		} {
			good := object("Role", "ns", "good-"+tc.gvr.Resource, "1")
			_, err := s.ForCluster("east", storage.Unfenced).Apply(ctx, tc.gvr, []storage.Change{storage.Upsert(tc.poison), storage.Upsert(good)})
			var inv *storage.InvalidObjectError
			if !errors.As(err, &inv) || !storage.IsInvalid(err) || len(inv.Refused) != 1 || inv.Refused[0].Name != tc.poison.GetName() {
				t.Fatalf("%s %q: %v, want the poison refused by name", tc.gvr.Resource, tc.poison.GetName(), err)
			}
			if _, err := s.Get(ctx, storage.Key{Cluster: "east", GVR: tc.gvr, Namespace: "ns", Name: good.GetName()}); err != nil {
				t.Fatalf("%s: the rest of the batch did not land: %v", tc.gvr.Resource, err)
			}
		}
		if got := names(t, s, storage.ListQuery{GVR: rolesGVR}); len(got) != 1 || got[0] != "good-roles" {
			t.Fatalf("roles: %q", got)
		}
	})
}

func TestInvalidUTF8QueriesAreInvalid(t *testing.T) {
	storagetest.ForEach(t, func(t *testing.T, b storagetest.Backend) {
		s := b.Open(t)
		bad := "x\xff"
		for _, q := range []storage.ListQuery{
			{GVR: podsGVR, Names: []string{bad}},
			{GVR: podsGVR, Namespaces: []string{bad}},
			{GVR: podsGVR, Clusters: []string{bad}},
			{GVR: podsGVR, FuzzyName: bad},
			{GVR: podsGVR, Fields: fields.Requirements{{Field: "spec.nodeName", Operator: "=", Value: bad}}},
			{GVR: podsGVR, Continue: storage.EncodeContinue(1, []storage.OrderBy{{Field: storage.OrderCluster}, {Field: storage.OrderNamespace}, {Field: storage.OrderName}},
				&storage.Object{Key: storage.Key{Name: "a\x00"}})},
		} {
			if _, err := s.List(context.Background(), &q); !storage.IsInvalid(err) {
				t.Fatalf("%s: %v, want invalid", describe(q), err)
			}
		}
	})
}

func TestTrailingSpaceIsSignificant(t *testing.T) {
	storagetest.ForEach(t, func(t *testing.T, b storagetest.Backend) {
		s := b.Open(t)
		ctx := context.Background()
		typed := func(name, typ string) storage.Change {
			return storage.Upsert(object("Service", "ns", name, "1", func(u *unstructured.Unstructured) {
				_ = unstructured.SetNestedField(u.Object, typ, "spec", "type")
				u.SetLabels(map[string]string{"tier": typ})
			}))
		}
		if _, err := s.ForCluster("east", storage.Unfenced).Apply(ctx, podsGVR, []storage.Change{typed("a", "plain "), typed("a ", "other")}); err != nil {
			t.Fatal(err)
		}
		if got := names(t, s, storage.ListQuery{GVR: podsGVR}); len(got) != 2 {
			t.Fatalf(`"a" and "a " are not two objects: %q`, got)
		}
		if got := names(t, s, storage.ListQuery{GVR: podsGVR, Fields: fields.Requirements{{Field: "spec.type", Operator: "=", Value: "plain"}}}); len(got) != 0 {
			t.Fatalf(`spec.type=plain matched %q`, got)
		}
		if got := names(t, s, storage.ListQuery{GVR: podsGVR, Labels: mustReqs("tier=plain")}); len(got) != 0 {
			t.Fatalf(`tier=plain matched %q`, got)
		}
		if got := names(t, s, storage.ListQuery{GVR: podsGVR, Names: []string{"a"}}); len(got) != 1 || got[0] != "a" {
			t.Fatalf(`name a matched %q`, got)
		}
	})
}

func TestApplyNeverGoesBackInTime(t *testing.T) {
	storagetest.ForEach(t, func(t *testing.T, b storagetest.Backend) {
		s := b.Open(t)
		ctx := context.Background()
		key := storage.Key{Cluster: "east", GVR: podsGVR, Namespace: "ns", Name: "p"}
		rev, err := s.ForCluster("east", storage.Unfenced).Apply(ctx, podsGVR, []storage.Change{storage.Upsert(object("Pod", "ns", "p", "10"))})
		if err != nil {
			t.Fatal(err)
		}
		for _, c := range []storage.Change{
			storage.Upsert(object("Pod", "ns", "p", "9")),
			storage.DeleteAt("ns", "p", "9"),
		} {
			got, err := s.ForCluster("east", storage.Unfenced).Apply(ctx, podsGVR, []storage.Change{c})
			if err != nil || got != rev {
				t.Fatalf("older change: revision %d -> %d, %v", rev, got, err)
			}
			if o, err := s.Get(ctx, key); err != nil || o.MemberResourceVersion != "10" {
				t.Fatalf("older change replaced the object: %+v %v", o, err)
			}
		}
		if got, err := s.ForCluster("east", storage.Unfenced).Apply(ctx, podsGVR, []storage.Change{storage.Upsert(object("Pod", "ns", "p", "11"))}); err != nil || got != rev+1 {
			t.Fatalf("newer upsert: %d, %v", got, err)
		}
		if _, err := s.ForCluster("east", storage.Unfenced).Apply(ctx, podsGVR, []storage.Change{storage.DeleteAt("ns", "p", "12")}); err != nil {
			t.Fatal(err)
		}
		if _, err := s.Get(ctx, key); !errors.Is(err, storage.ErrNotFound) {
			t.Fatalf("newer delete: %v", err)
		}
	})
}

func TestDeleteOrphans(t *testing.T) {
	storagetest.ForEach(t, func(t *testing.T, b storagetest.Backend) {
		s := b.Open(t)
		ctx := context.Background()
		// "unknown" is kept whole: a zero GVR stands for all its resources.
		clusters := []string{"east", "gone", "unknown"}
		for _, cluster := range clusters {
			for _, gvr := range []schema.GroupVersionResource{podsGVR, secretsGVR} {
				if _, err := s.ForCluster(cluster, storage.Unfenced).Apply(ctx, gvr, []storage.Change{storage.Upsert(object("X", "ns", "o", "1"))}); err != nil {
					t.Fatal(err)
				}
			}
		}
		if _, err := s.DeleteOrphans(ctx, []storage.ClusterResource{{Cluster: "east", GVR: podsGVR}, {Cluster: "unknown"}}, nil); err != nil {
			t.Fatal(err)
		}
		for _, cluster := range clusters {
			for _, gvr := range []schema.GroupVersionResource{podsGVR, secretsGVR} {
				_, err := s.Get(ctx, storage.Key{Cluster: cluster, GVR: gvr, Namespace: "ns", Name: "o"})
				if kept := cluster == "unknown" || cluster == "east" && gvr == podsGVR; kept != (err == nil) {
					t.Fatalf("%s %s: kept %v, err %v", cluster, gvr.Resource, kept, err)
				}
			}
		}
		evs, _, err := s.Changes(ctx, 0, 100)
		if err != nil || len(evs) != 9 {
			t.Fatalf("want 6 adds and 3 logged deletes, got %d events, %v", len(evs), err)
		}
	})
}

// A MySQL database made by schema version 1 (PAD SPACE utf8mb4_bin) gets
// the NO PAD collation when a store opens it.
func TestMigrationToNoPadCollation(t *testing.T) {
	b := storagetest.Backends()[1]
	if b.Name != "mysql" {
		t.Fatalf("backend 1 is %s, want mysql", b.Name)
	}
	opts := b.Options(t)
	s, err := sqlstore.Open(context.Background(), opts)
	if err != nil {
		t.Fatal(err)
	}
	db, err := sql.Open("mysql", opts.DSN)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	for _, stmt := range []string{
		"ALTER TABLE resources CONVERT TO CHARACTER SET utf8mb4 COLLATE utf8mb4_bin",
	} {
		if _, err := db.Exec(stmt); err != nil {
			t.Fatal(err)
		}
	}
	toLegacyAttributes(t, "mysql", sqlstore.GormDB(s), true, "utf8mb4_bin", 2)
	_ = s.Close()
	if s, err = sqlstore.Open(context.Background(), opts); err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	var collation string
	if err := db.QueryRow("SELECT collation_name FROM information_schema.columns WHERE table_schema = DATABASE() AND table_name = 'resources' AND column_name = 'name'").Scan(&collation); err != nil || collation != "utf8mb4_nopad_bin" {
		t.Fatalf("name collation %q, %v", collation, err)
	}
	ctx := context.Background()
	if _, err := s.ForCluster("east", storage.Unfenced).Apply(ctx, podsGVR, []storage.Change{storage.Upsert(object("Pod", "ns", "a", "1")), storage.Upsert(object("Pod", "ns", "a ", "1"))}); err != nil {
		t.Fatal(err)
	}
}

// Log entries written before schema version 3 have no creation time. A
// list ordered by it, at a revision before them, must still see the state
// they hold; and migration 3 runs again harmlessly (two replicas starting).
func TestEntriesWithoutCreationTime(t *testing.T) {
	storagetest.ForEach(t, func(t *testing.T, b storagetest.Backend) {
		ctx := context.Background()
		opts := b.Options(t)
		s, err := sqlstore.Open(ctx, opts)
		if err != nil {
			t.Fatal(err)
		}
		costFixture(t, s)
		byCreated := []storage.OrderBy{{Field: storage.OrderCreated, Desc: true}}
		atPin, err := s.List(ctx, &storage.ListQuery{GVR: podsGVR, OrderBy: byCreated})
		if err != nil {
			t.Fatal(err)
		}
		var changes []storage.Change
		for i := 0; i < costObjects/3; i += 3 {
			if i%2 == 0 {
				changes = append(changes, storage.Delete(fmt.Sprintf("ns-%d", i%7), fmt.Sprintf("pod-%05d", i)))
			} else {
				changes = append(changes, storage.Upsert(costPod(i, "2")))
			}
		}
		cur, err := s.ForCluster(clusters[0], storage.Unfenced).Apply(ctx, podsGVR, changes)
		if err != nil {
			t.Fatal(err)
		}
		db := sqlstore.GormDB(s)
		if err := db.Exec("UPDATE events SET created_at = NULL WHERE revision > ?", atPin.Revision).Error; err != nil {
			t.Fatal(err)
		}
		if err := db.Exec("DELETE FROM panorama_schema_migrations WHERE version = 3").Error; err != nil {
			t.Fatal(err)
		}
		_ = s.Close()
		if s, err = sqlstore.Open(ctx, opts); err != nil {
			t.Fatalf("migrating again: %v", err)
		}
		defer s.Close()
		// Reading entries without a creation time works as before.
		if evs, _, err := s.Changes(ctx, atPin.Revision, 1000); err != nil || int64(len(evs)) != cur-atPin.Revision {
			t.Fatalf("events after the pin: %d, %v", len(evs), err)
		}
		if evs, _, err := s.History(ctx, podsGVR, cur, 10); err != nil || len(evs) != 10 {
			t.Fatalf("history: %d, %v", len(evs), err)
		}
		for _, desc := range []bool{true, false} {
			q := storage.ListQuery{GVR: podsGVR, Limit: 40, Revision: atPin.Revision, OrderBy: []storage.OrderBy{{Field: storage.OrderCreated, Desc: desc}}}
			_, got, _ := listAll(t, s, q, nil)
			want := slices.Clone(atPin.Objects)
			if !desc {
				slices.Reverse(want)
			}
			if len(got) != len(want) {
				t.Fatalf("desc %v: %d objects at the pin, want %d", desc, len(got), len(want))
			}
			for i := range want {
				if got[i].Key != want[i].Key || got[i].Revision != want[i].Revision {
					t.Fatalf("desc %v: object %d is %v at %d, want %v at %d", desc, i, got[i].Key, got[i].Revision, want[i].Key, want[i].Revision)
				}
			}
		}
	})
}

// TestConcurrentMigrations opens several stores on one new database at once,
// as the controller manager and the API server replicas do when installed
// together: each must come up (PostgreSQL fails concurrent CREATE TABLE IF
// NOT EXISTS without the schema lock).
func TestConcurrentMigrations(t *testing.T) {
	storagetest.ForEach(t, func(t *testing.T, b storagetest.Backend) {
		opts := b.Options(t)
		errs := make(chan error, 4)
		for range cap(errs) {
			go func() {
				s, err := sqlstore.Open(context.Background(), opts)
				if err == nil {
					_, _, err = s.Revision(context.Background())
					_ = s.Close()
				}
				errs <- err
			}()
		}
		for range cap(errs) {
			if err := <-errs; err != nil {
				t.Errorf("opening a store while others migrate: %v", err)
			}
		}
	})
}

// TestMigrationDropsUIDIndex: a store made before version 12 loses its
// index of uids, and a new one never has it.
func TestMigrationDropsUIDIndex(t *testing.T) {
	storagetest.ForEach(t, func(t *testing.T, b storagetest.Backend) {
		opts := b.Options(t)
		s, err := sqlstore.Open(context.Background(), opts)
		if err != nil {
			t.Fatal(err)
		}
		db := sqlstore.GormDB(s)
		if db.Migrator().HasIndex("resources", "resources_uid") {
			t.Fatal("a new store has resources_uid")
		}
		apply(t, s, podsGVR, storage.Upsert(object("Pod", "default", "a", "1")))
		// As version 11 left it.
		execAll(t, db,
			"CREATE INDEX resources_uid ON resources (uid)",
			"DELETE FROM panorama_schema_migrations WHERE version = 12",
		)
		_ = s.Close()
		s = storagetest.OpenStore(t, opts)
		if sqlstore.GormDB(s).Migrator().HasIndex("resources", "resources_uid") {
			t.Error("resources_uid is still there after migrating")
		}
		if o, err := s.Get(context.Background(), storage.Key{Cluster: "east", GVR: podsGVR, Namespace: "default", Name: "a"}); err != nil || o.MemberResourceVersion != "1" {
			t.Errorf("the pod after migrating: %+v, %v", o, err)
		}
	})
}
