package sqlstore_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/panorama-io/panorama/storage"
	"github.com/panorama-io/panorama/storage/sqlstore"
	"github.com/panorama-io/panorama/storage/storagetest"
)

var (
	secretsGVRForget = storage.SecretsResource
	configMapsGVR    = schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}
)

// password is what every Secret of the tests holds, in data (base64),
// stringData and the last-applied annotation: none of the stored states
// may hold it once dropped.
const password = "cGFzc3dvcmQtb2YtdGhlLWRi"

// secret is a member Secret as a Cluster that keeps Secret data stores
// it, or without its contents (as one that drops them does) when plain.
func secret(name, rv string, plain bool, mutate ...func(*unstructured.Unstructured)) *unstructured.Unstructured {
	u := object("Secret", "default", name, rv, mutate...)
	if !plain {
		u.Object["data"] = map[string]any{"password": password, "rv": rv}
		u.Object["stringData"] = map[string]any{"user": password}
		u.SetAnnotations(map[string]string{storage.LastAppliedAnnotation: `{"data":{"password":"` + password + `"}}`})
	}
	return u
}

func labeled(k, v string) func(*unstructured.Unstructured) {
	return func(u *unstructured.Unstructured) { u.SetLabels(map[string]string{k: v}) }
}

// keepSecrets writes east's Secrets as a Cluster that keeps their data
// would over a few changes: db changed twice, gone created and deleted,
// and, beside them, a ConfigMap's data and west's Secret, which keep
// theirs. It returns the revision before the first.
func keepSecrets(t *testing.T, s storage.Interface) int64 {
	t.Helper()
	ctx := context.Background()
	start, _, err := s.Revision(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, step := range []struct {
		cluster string
		gvr     schema.GroupVersionResource
		change  storage.Change
	}{
		{"east", secretsGVRForget, storage.Upsert(secret("db", "10", false))},
		{"east", secretsGVRForget, storage.Upsert(secret("gone", "11", false))},
		{"east", configMapsGVR, storage.Upsert(object("ConfigMap", "default", "settings", "12", func(u *unstructured.Unstructured) {
			u.Object["data"] = map[string]any{"kept": password}
		}))},
		{"west", secretsGVRForget, storage.Upsert(secret("db", "13", false))},
		{"east", secretsGVRForget, storage.Upsert(secret("db", "14", false, labeled("tier", "back")))},
		{"east", secretsGVRForget, storage.DeleteAt("default", "gone", "15")},
		{"east", secretsGVRForget, storage.Upsert(secret("db", "16", false, labeled("tier", "front")))},
	} {
		if _, err := s.ForCluster(step.cluster, storage.Unfenced).Apply(ctx, step.gvr, []storage.Change{step.change}); err != nil {
			t.Fatal(err)
		}
	}
	return start
}

// dropSecrets switches east to dropping Secret data as the synchronizer
// pool does: its Secrets are removed and synced afresh, without.
func dropSecrets(t *testing.T, s storage.Interface) {
	t.Helper()
	ctx := context.Background()
	if _, err := s.ForCluster("east", storage.Unfenced).DeleteResource(ctx, secretsGVRForget); err != nil {
		t.Fatal(err)
	}
	if _, err := s.ForCluster("east", storage.Unfenced).Apply(ctx, secretsGVRForget, []storage.Change{storage.Upsert(secret("db", "16", true, labeled("tier", "front")))}); err != nil {
		t.Fatal(err)
	}
}

func compact(t *testing.T, s storage.Interface) {
	t.Helper()
	ctx := context.Background()
	current, _, err := s.Revision(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Compact(ctx, current, true); err != nil {
		t.Fatal(err)
	}
}

// storedStates reads every state the store serves of cluster's objects
// of gvr since revision start: each version of each object's history, a
// list at each revision, the log and what a watch cache loads. what
// names each.
func storedStates(t *testing.T, s storage.Interface, cluster string, gvr schema.GroupVersionResource, names []string, start int64) map[string][]byte {
	t.Helper()
	ctx := context.Background()
	out := map[string][]byte{}
	for _, name := range names {
		versions, err := s.ObjectHistory(ctx, storage.Key{Cluster: cluster, GVR: gvr, Namespace: "default", Name: name}, 0)
		if err != nil && !errors.Is(err, storage.ErrNotFound) {
			t.Fatalf("history of %s: %v", name, err)
		}
		for _, v := range versions {
			out[fmt.Sprintf("history of %s at %d", name, v.Revision)] = v.Object
			out[fmt.Sprintf("history patch of %s at %d", name, v.Revision)] = v.Patch
		}
	}
	current, _, err := s.Revision(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for rev := start + 1; rev <= current; rev++ {
		res, err := s.List(ctx, &storage.ListQuery{GVR: gvr, Clusters: []string{cluster}, Revision: rev, History: true})
		if err != nil {
			t.Fatalf("list at %d: %v", rev, err)
		}
		for _, o := range res.Objects {
			out[fmt.Sprintf("%s in the list at %d", o.Name, rev)] = o.Data
		}
	}
	_, compacted, err := s.Revision(ctx)
	if err != nil {
		t.Fatal(err)
	}
	events, _, err := s.Changes(ctx, compacted, 10000)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range events {
		if e.Key.Cluster == cluster && e.Key.GVR == gvr {
			out[fmt.Sprintf("%s event at %d", e.Type, e.Revision)] = e.Object
		}
	}
	loaded, _, err := s.History(ctx, gvr, current, 1000)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range loaded {
		if e.Key.Cluster == cluster {
			out[fmt.Sprintf("%s event at %d, loaded", e.Type, e.Revision)] = e.Object
			out[fmt.Sprintf("pre-image of %d, loaded", e.Revision)] = e.Prev
		}
	}
	return out
}

// holding returns the names of the states that hold the password.
func holding(states map[string][]byte) []string {
	var out []string
	for name, data := range states {
		if bytes.Contains(data, []byte(password)) {
			out = append(out, name)
		}
	}
	return out
}

func dropSecretData(t *testing.T, s storage.Interface, cluster string) {
	t.Helper()
	if err := s.ForCluster(cluster, storage.Unfenced).DropSecretData(context.Background()); err != nil {
		t.Fatal(err)
	}
}

// checkDropped fails unless no state of east's Secrets holds their
// contents, and every other object's data is as written.
func checkDropped(t *testing.T, s storage.Interface, start int64, stage string) {
	t.Helper()
	states := storedStates(t, s, "east", secretsGVRForget, []string{"db", "gone"}, start)
	if len(states) == 0 {
		t.Fatalf("%s: nothing read", stage)
	}
	if held := holding(states); len(held) > 0 {
		t.Errorf("%s: %d states hold the Secrets' contents, such as %s", stage, len(held), held[0])
	}
	for _, other := range []struct {
		cluster string
		gvr     schema.GroupVersionResource
		name    string
	}{{"east", configMapsGVR, "settings"}, {"west", secretsGVRForget, "db"}} {
		if len(holding(storedStates(t, s, other.cluster, other.gvr, []string{other.name}, start))) == 0 {
			t.Errorf("%s: %s of %s lost its data", stage, other.name, other.cluster)
		}
	}
}

// TestDropSecretDataWithoutSecrets: dropping the Secret data of a cluster
// that stored no Secret (a new Cluster's first reconcile) waits for no
// write, while the store's writer is held by others'; one that stored
// some has their data dropped. On MariaDB and PostgreSQL, where a
// transaction holding the revision counter holds the writer alone
// (SQLite's one write lock would hold the drop's own mark too).
func TestDropSecretDataWithoutSecrets(t *testing.T) {
	storagetest.ForEach(t, func(t *testing.T, b storagetest.Backend) {
		if b.Name == "sqlite" {
			return
		}
		s := b.Open(t)
		start := keepSecrets(t, s)
		held := sqlstore.GormDB(s).Begin()
		t.Cleanup(func() { held.Rollback() }) // before the database is dropped
		var revision int64
		if err := held.Raw("SELECT value FROM panorama_meta WHERE name = 'revision' FOR UPDATE").Scan(&revision).Error; err != nil {
			t.Fatal(err)
		}
		done := make(chan error, 1)
		go func() { done <- s.ForCluster("fresh", storage.Unfenced).DropSecretData(context.Background()) }()
		select {
		case err := <-done:
			if err != nil {
				t.Fatal(err)
			}
		case <-time.After(time.Minute):
			t.Fatal("dropping the Secret data of a cluster that stored none waited for the writer")
		}
		if err := held.Rollback().Error; err != nil {
			t.Fatal(err)
		}
		dropSecretData(t, s, "east")
		checkDropped(t, s, start, "dropped")
	})
}

// TestDropSecretData switches a cluster's Secrets from kept to dropped
// contents and reads every state kept of them: no version of their
// history, list as of a past revision, log entry or pre-image holds any,
// whether the changes were compacted into history before the switch, are
// compacted after it, or the current objects still held theirs (the
// setting changed while no controller ran). A second switch, after the
// Secrets were kept again, drops what was written since.
func TestDropSecretData(t *testing.T) {
	storagetest.ForEach(t, func(t *testing.T, b storagetest.Backend) {
		for _, tc := range []struct {
			name string
			// before runs between keeping and dropping: compaction, or none.
			before func(t *testing.T, s storage.Interface)
			// resync: the synchronizers were replaced, so the Secrets were
			// removed and synced again; else they still hold their data.
			resync bool
		}{
			{name: "log", before: func(*testing.T, storage.Interface) {}, resync: true},
			{name: "compacted", before: compact, resync: true},
			{name: "current", before: compact},
		} {
			t.Run(tc.name, func(t *testing.T) {
				s := b.Open(t)
				ctx := context.Background()
				start := keepSecrets(t, s)
				if held := holding(storedStates(t, s, "east", secretsGVRForget, []string{"db", "gone"}, start)); len(held) == 0 {
					t.Fatal("the Secrets kept hold nothing: the test shows nothing")
				}
				tc.before(t, s)
				if tc.resync {
					dropSecrets(t, s)
				}
				before, _, err := s.Revision(ctx)
				if err != nil {
					t.Fatal(err)
				}
				dropSecretData(t, s, "east")
				checkDropped(t, s, start, "dropped")
				if !tc.resync {
					// The current object was written again, at the member's
					// resourceVersion, as a change that watches see.
					events, _, err := s.Changes(ctx, before, 100)
					if err != nil {
						t.Fatal(err)
					}
					if len(events) != 1 || events[0].Type != watch.Modified || events[0].Key.Name != "db" {
						t.Fatalf("dropping wrote %+v, want db MODIFIED", events)
					}
					if v, err := s.MemberVersions(ctx, "east", secretsGVRForget); err != nil || v[storage.NamespacedName{Namespace: "default", Name: "db"}] != "16" {
						t.Fatalf("member versions %v (%v), want db at 16", v, err)
					}
				}
				dropSecretData(t, s, "east") // again: nothing changes
				checkDropped(t, s, start, "dropped twice")
				compact(t, s)
				checkDropped(t, s, start, "compacted after")

				// Kept again, changed, compacted, then dropped again.
				if _, err := s.ForCluster("east", storage.Unfenced).DeleteResource(ctx, secretsGVRForget); err != nil {
					t.Fatal(err)
				}
				if _, err := s.ForCluster("east", storage.Unfenced).Apply(ctx, secretsGVRForget, []storage.Change{storage.Upsert(secret("db", "17", false))}); err != nil {
					t.Fatal(err)
				}
				if _, err := s.ForCluster("east", storage.Unfenced).Apply(ctx, secretsGVRForget, []storage.Change{storage.Upsert(secret("db", "18", false, labeled("tier", "back")))}); err != nil {
					t.Fatal(err)
				}
				compact(t, s)
				if len(holding(storedStates(t, s, "east", secretsGVRForget, []string{"db"}, start))) == 0 {
					t.Fatal("kept again, the Secrets hold nothing")
				}
				dropSecrets(t, s)
				dropSecretData(t, s, "east")
				checkDropped(t, s, start, "dropped again")
			})
		}
	})
}

// TestDeselectedSecretsDropData removes the Secrets of a cluster that no
// longer selects them as the orphan sweep does: what it removed of them
// keeps no contents, in the log or in history.
func TestDeselectedSecretsDropData(t *testing.T) {
	storagetest.ForEach(t, func(t *testing.T, b storagetest.Backend) {
		s := b.Open(t)
		start := keepSecrets(t, s)
		compact(t, s)
		keep := []storage.ClusterResource{{Cluster: "east", GVR: configMapsGVR}, {Cluster: "west"}}
		if _, err := s.DeleteOrphans(context.Background(), keep, nil); err != nil {
			t.Fatal(err)
		}
		checkDropped(t, s, start, "deselected")
		compact(t, s)
		checkDropped(t, s, start, "deselected, compacted")
	})
}

// TestForgetCluster deletes a Cluster whose objects have history, as its
// finalizer does, and creates one under the same name: none of the
// first one's versions is in the history of the second's objects, nor in
// lists as of before it, once the log has been compacted. A cluster
// whose Cluster went while no controller ran is forgotten by the orphan
// sweep alike.
func TestForgetCluster(t *testing.T) {
	storagetest.ForEach(t, func(t *testing.T, b storagetest.Backend) {
		s := b.Open(t)
		ctx := context.Background()
		start := keepSecrets(t, s)
		apply(t, s, deploymentsGVR, storage.Upsert(object("Deployment", "default", "web", "20", labeled("app", password))))
		apply(t, s, deploymentsGVR, storage.Upsert(object("Deployment", "default", "web", "21", labeled("app", password+"-2"))))
		compact(t, s)
		apply(t, s, deploymentsGVR, storage.Upsert(object("Deployment", "default", "web", "22", labeled("app", password+"-3"))))
		if _, err := s.ForCluster("east", storage.Unfenced).DeleteResource(ctx, schema.GroupVersionResource{}); err != nil {
			t.Fatal(err)
		}
		if err := s.ForCluster("east", storage.Unfenced).ForgetCluster(ctx); err != nil {
			t.Fatal(err)
		}
		// The log keeps the deletions for watches, but no Secret contents.
		if held := holding(storedStates(t, s, "east", secretsGVRForget, nil, start)); len(held) > 0 {
			t.Errorf("forgotten, the log holds the Secrets' contents: %v", held)
		}
		web := storage.Key{Cluster: "east", GVR: deploymentsGVR, Namespace: "default", Name: "web"}
		if v, err := s.ObjectHistory(ctx, web, 0); !errors.Is(err, storage.ErrNotFound) {
			t.Errorf("forgotten, web has %d versions (%v)", len(v), err)
		}
		// Created again.
		again := apply(t, s, deploymentsGVR, storage.Upsert(object("Deployment", "default", "web", "1", labeled("app", "new"))))
		compact(t, s)
		checkForgotten(t, s, start, again, "east")

		// Gone while no controller ran: the sweep removes and forgets it.
		keepSecrets(t, s)
		compact(t, s)
		if _, err := s.DeleteOrphans(ctx, []storage.ClusterResource{{Cluster: "west"}}, nil); err != nil {
			t.Fatal(err)
		}
		again = apply(t, s, deploymentsGVR, storage.Upsert(object("Deployment", "default", "web", "1", labeled("app", "new"))))
		compact(t, s)
		checkForgotten(t, s, start, again, "east")
	})
}

// checkForgotten fails unless the cluster's objects show nothing before
// revision since: web has the one version written at since, and lists
// before it are empty.
func checkForgotten(t *testing.T, s *sqlstore.Store, start, since int64, cluster string) {
	t.Helper()
	ctx := context.Background()
	versions, err := s.ObjectHistory(ctx, storage.Key{Cluster: cluster, GVR: deploymentsGVR, Namespace: "default", Name: "web"}, 0)
	if err != nil || len(versions) != 1 || versions[0].Revision != since {
		t.Errorf("web's history is %d versions (%v), want the one at %d", len(versions), err, since)
	}
	for _, gvr := range []schema.GroupVersionResource{deploymentsGVR, secretsGVRForget, configMapsGVR} {
		for rev := start + 1; rev < since; rev++ {
			res, err := s.List(ctx, &storage.ListQuery{GVR: gvr, Clusters: []string{cluster}, Revision: rev, History: true})
			if err != nil {
				t.Fatalf("list of %s at %d: %v", gvr.Resource, rev, err)
			}
			if len(res.Objects) > 0 {
				t.Fatalf("%s as of %d, before %s was created again, lists %s", gvr.Resource, rev, cluster, res.Objects[0].Data)
			}
		}
	}
}
