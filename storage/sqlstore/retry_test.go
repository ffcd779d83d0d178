package sqlstore_test

import (
	"context"
	"testing"

	"github.com/panorama-io/panorama/storage"
	"github.com/panorama-io/panorama/storage/sqlstore"
	"github.com/panorama-io/panorama/storage/storagetest"
)

// TestFailedApplySendsAgain fails a write after its batch has been planned
// (the database refuses a row), then sends the same objects again, as a
// synchronizer does after an error: they still carry the member's
// resourceVersion, so the second write stores that, and a third finds it
// unchanged.
func TestFailedApplySendsAgain(t *testing.T) {
	s := storagetest.Backends()[0].Open(t) // SQLite: the refusal is a trigger
	ctx := context.Background()
	accept := refuseObjects(t, s)
	changes := []storage.Change{storage.Upsert(object("Pod", "ns", "p", "42"))}
	if _, err := s.ForCluster("east", storage.Unfenced).Apply(ctx, podsGVR, changes); err == nil {
		t.Fatal("the refused write succeeded")
	}
	if rv := changes[0].Object.GetResourceVersion(); rv != "42" {
		t.Fatalf("after a failed write the object carries resourceVersion %q, not the member's", rv)
	}
	accept()
	rev, err := s.ForCluster("east", storage.Unfenced).Apply(ctx, podsGVR, changes)
	if err != nil {
		t.Fatal(err)
	}
	o, err := s.Get(ctx, storage.Key{Cluster: "east", GVR: podsGVR, Namespace: "ns", Name: "p"})
	if err != nil || o.MemberResourceVersion != "42" {
		t.Fatalf("stored member resourceVersion %q (%v), want 42", o.MemberResourceVersion, err)
	}
	again, err := s.ForCluster("east", storage.Unfenced).Apply(ctx, podsGVR, []storage.Change{storage.Upsert(object("Pod", "ns", "p", "42"))})
	if err != nil || again != rev {
		t.Fatalf("sent once more: revision %d (%v), want %d: unchanged", again, err, rev)
	}
}

// refuseObjects has s, on SQLite, refuse every object written, as a
// database refuses a row after the batch was planned, until accept.
func refuseObjects(t *testing.T, s *sqlstore.Store) (accept func()) {
	t.Helper()
	db := sqlstore.GormDB(s)
	if err := db.Exec(`CREATE TRIGGER refuse BEFORE INSERT ON resources BEGIN SELECT RAISE(ABORT, 'refused by trigger'); END`).Error; err != nil {
		t.Fatal(err)
	}
	return func() {
		t.Helper()
		if err := db.Exec("DROP TRIGGER refuse").Error; err != nil {
			t.Fatal(err)
		}
	}
}
