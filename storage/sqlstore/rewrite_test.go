package sqlstore_test

import (
	"context"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/panorama-io/panorama/storage"
	"github.com/panorama-io/panorama/storage/storagetest"
)

// TestRewriteAtTheStoredVersion: an upsert at the stored member
// resourceVersion is skipped, a rewrite at it is stored and logged as
// MODIFIED, and a rewrite older than the stored object is skipped too.
func TestRewriteAtTheStoredVersion(t *testing.T) {
	storagetest.ForEach(t, func(t *testing.T, b storagetest.Backend) {
		s := b.Open(t)
		ctx := context.Background()
		w := s.ForCluster("east", storage.Unfenced)
		withNote := func(note string) func(*unstructured.Unstructured) {
			return func(u *unstructured.Unstructured) { u.SetAnnotations(map[string]string{"note": note}) }
		}
		apply := func(c storage.Change) int64 {
			t.Helper()
			rev, err := w.Apply(ctx, podsGVR, []storage.Change{c})
			if err != nil {
				t.Fatal(err)
			}
			return rev
		}
		note := func() string {
			t.Helper()
			o, err := s.Get(ctx, storage.Key{Cluster: "east", GVR: podsGVR, Namespace: "ns", Name: "a"})
			if err != nil {
				t.Fatal(err)
			}
			var u unstructured.Unstructured
			if err := u.UnmarshalJSON(o.Data); err != nil {
				t.Fatal(err)
			}
			return u.GetAnnotations()["note"]
		}
		written := apply(storage.Upsert(object("Pod", "ns", "a", "7", withNote("first"))))

		if rev := apply(storage.Upsert(object("Pod", "ns", "a", "7", withNote("upsert")))); rev != written || note() != "first" {
			t.Fatalf("an upsert at the stored version moved the revision from %d to %d, stored note %q; want it skipped", written, rev, note())
		}
		rewritten := apply(storage.Rewrite(object("Pod", "ns", "a", "7", withNote("rewrite"))))
		if rewritten != written+1 || note() != "rewrite" {
			t.Fatalf("a rewrite at the stored version: revision %d, note %q; want %d, %q", rewritten, note(), written+1, "rewrite")
		}
		changes, _, err := s.Changes(ctx, written, 10)
		if err != nil {
			t.Fatal(err)
		}
		if len(changes) != 1 || changes[0].Type != watch.Modified || changes[0].Revision != rewritten {
			t.Fatalf("logged after the rewrite: %+v; want one MODIFIED at %d", changes, rewritten)
		}
		var logged unstructured.Unstructured
		if err := logged.UnmarshalJSON(changes[0].Object); err != nil {
			t.Fatal(err)
		}
		if got := logged.GetAnnotations()["note"]; got != "rewrite" {
			t.Errorf("the log's object has note %q, want %q", got, "rewrite")
		}

		if rev := apply(storage.Rewrite(object("Pod", "ns", "a", "6", withNote("older")))); rev != rewritten || note() != "rewrite" {
			t.Fatalf("a rewrite older than the stored object moved the revision from %d to %d, stored note %q; want it skipped", rewritten, rev, note())
		}
	})
}
