package sqlstore_test

import (
	"context"
	"errors"
	"maps"
	"slices"
	"testing"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/panorama-io/panorama/storage"
	"github.com/panorama-io/panorama/storage/storagetest"
)

// Two replicas, each a Store of its own on one database, hand a cluster
// over: once the second has taken ownership, every write of the first is
// refused with nothing of it written, while the new owner's, and unfenced
// writes, go on.
func TestFencedWrites(t *testing.T) {
	storagetest.ForEach(t, func(t *testing.T, b storagetest.Backend) {
		opts := b.Options(t)
		first, second := storagetest.OpenStore(t, opts), storagetest.OpenStore(t, opts)
		ctx := context.Background()

		// Never owned: a fenced write has no owner to match.
		if _, err := first.ForCluster("east", 1).Apply(ctx, podsGVR, []storage.Change{storage.Upsert(object("Pod", "default", "a", "1"))}); !isFenced(err, 1, storage.NeverOwned) {
			t.Fatalf("write to a cluster never owned: %v, want fenced as owned by none", err)
		}

		old, err := first.Own(ctx, "east")
		if err != nil || old != 1 {
			t.Fatalf("first Own: %d, %v; want epoch 1", old, err)
		}
		rev, err := first.ForCluster("east", old).Apply(ctx, podsGVR, []storage.Change{storage.Upsert(object("Pod", "default", "a", "1"))})
		if err != nil || rev != 1 {
			t.Fatalf("owner's write: rev %d, %v", rev, err)
		}

		epoch, err := second.Own(ctx, "east")
		if err != nil || epoch != 2 {
			t.Fatalf("second Own: %d, %v; want epoch 2", epoch, err)
		}
		if other, err := second.Own(ctx, "west"); err != nil || other != 1 {
			t.Fatalf("Own of another cluster: %d, %v; want its own epoch 1", other, err)
		}

		// The former owner: an upsert, a delete, a whole resource, a batch
		// sharing its group with the new owner's.
		stale := []func() error{
			func() error {
				_, err := first.ForCluster("east", old).Apply(ctx, podsGVR, []storage.Change{storage.Upsert(object("Pod", "default", "b", "2"))})
				return err
			},
			func() error {
				_, err := first.ForCluster("east", old).Apply(ctx, podsGVR, []storage.Change{storage.Delete("default", "a")})
				return err
			},
			func() error {
				_, err := first.ForCluster("east", old).DeleteResource(ctx, podsGVR)
				return err
			},
		}
		for i, write := range stale {
			if err := write(); !isFenced(err, 1, 2) {
				t.Fatalf("stale write %d: %v, want fenced at 2", i, err)
			}
		}
		errs := make(chan error, 2)
		go func() {
			_, err := second.ForCluster("east", old).Apply(ctx, podsGVR, []storage.Change{storage.Upsert(object("Pod", "default", "c", "3"))})
			errs <- err
		}()
		go func() {
			_, err := second.ForCluster("east", epoch).Apply(ctx, podsGVR, []storage.Change{storage.Upsert(object("Pod", "default", "d", "4"))})
			errs <- err
		}()
		var fenced, ok int
		for range 2 {
			switch err := <-errs; {
			case err == nil:
				ok++
			case isFenced(err, 1, 2):
				fenced++
			default:
				t.Fatalf("concurrent writes: %v", err)
			}
		}
		if fenced != 1 || ok != 1 {
			t.Fatalf("concurrent writes: %d fenced, %d written; want 1 and 1", fenced, ok)
		}

		// Nothing of the stale writes is stored or logged: a is as the first
		// owner wrote it, d is the new owner's, and the log has the two.
		got, err := second.MemberVersions(ctx, "east", podsGVR)
		if err != nil {
			t.Fatal(err)
		}
		want := map[storage.NamespacedName]string{{Namespace: "default", Name: "a"}: "1", {Namespace: "default", Name: "d"}: "4"}
		if len(got) != len(want) || got[storage.NamespacedName{Namespace: "default", Name: "a"}] != "1" || got[storage.NamespacedName{Namespace: "default", Name: "d"}] != "4" {
			t.Fatalf("stored %v, want %v", got, want)
		}
		events, _, err := second.Changes(ctx, 0, 100)
		if err != nil || len(events) != 2 || events[0].Key.Name != "a" || events[1].Key.Name != "d" {
			t.Fatalf("log %+v, %v; want the adds of a and d", events, err)
		}

		// Unfenced writes, as a single controller makes, are not checked.
		if _, err := first.ForCluster("east", storage.Unfenced).Apply(ctx, podsGVR, []storage.Change{storage.Upsert(object("Pod", "default", "e", "5"))}); err != nil {
			t.Fatalf("unfenced write: %v", err)
		}
	})
}

// A sweep of orphans judged with epochs read before another replica took
// clusters over deletes nothing of them, and skips them without failing:
// a cluster it synced whose owner changed since (its epoch is stale), a
// cluster it saw no Cluster of, owned or never owned then, that has an
// owner now. What is still orphaned goes, fenced or not.
func TestFencedSweep(t *testing.T) {
	storagetest.ForEach(t, func(t *testing.T, b storagetest.Backend) {
		opts := b.Options(t)
		sweeper, other := storagetest.OpenStore(t, opts), storagetest.OpenStore(t, opts)
		ctx := context.Background()
		put := func(epoch int64, cluster string, gvr schema.GroupVersionResource) {
			t.Helper()
			if _, err := other.ForCluster(cluster, epoch).Apply(ctx, gvr, []storage.Change{storage.Upsert(object("X", "ns", "o", "1"))}); err != nil {
				t.Fatal(err)
			}
		}
		// The sweeper syncs the pods of "mine" and "lost"; their secrets are
		// deselected. "gone" and "gone-owned" have no Cluster, and neither
		// have "taken" and "retaken" as the sweeper lists them.
		mine, lost := storagetest.Owned(t, ctx, sweeper, "mine"), storagetest.Owned(t, ctx, sweeper, "lost")
		for _, c := range []struct {
			epoch   int64
			cluster string
		}{{mine, "mine"}, {lost, "lost"}, {storage.Unfenced, "gone"}, {storagetest.Owned(t, ctx, other, "gone-owned"), "gone-owned"}, {storagetest.Owned(t, ctx, other, "retaken"), "retaken"}} {
			put(c.epoch, c.cluster, podsGVR)
			put(c.epoch, c.cluster, secretsGVR)
		}
		epochs, err := sweeper.Epochs(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if want := map[string]int64{"mine": 1, "lost": 1, "gone-owned": 1, "retaken": 1}; !maps.Equal(epochs, want) {
			t.Fatalf("epochs %v, want %v", epochs, want)
		}
		// A single controller syncs "single", owned once by a replica
		// before: its deletes are not fenced.
		put(storagetest.Owned(t, ctx, other, "single"), "single", secretsGVR)
		epochs["single"] = 0
		// Meanwhile another replica takes "lost" over, and "taken" and
		// "retaken" are created (again) and written by their new owner.
		put(storagetest.Owned(t, ctx, other, "lost"), "lost", secretsGVR)
		put(storagetest.Owned(t, ctx, other, "taken"), "taken", podsGVR)
		put(storagetest.Owned(t, ctx, other, "retaken"), "retaken", podsGVR)
		before, _, err := sweeper.Revision(ctx)
		if err != nil {
			t.Fatal(err)
		}

		keep := []storage.ClusterResource{{Cluster: "mine", GVR: podsGVR}, {Cluster: "lost", GVR: podsGVR}, {Cluster: "single", GVR: podsGVR}}
		if _, err := sweeper.DeleteOrphans(ctx, keep, epochs); err != nil {
			t.Fatalf("a sweep with fenced clusters: %v, want them skipped", err)
		}
		for _, c := range []struct {
			cluster string
			gvr     schema.GroupVersionResource
			kept    bool
		}{
			{"mine", podsGVR, true}, {"mine", secretsGVR, false},
			{"lost", podsGVR, true}, {"lost", secretsGVR, true},
			{"gone", podsGVR, false}, {"gone", secretsGVR, false},
			{"gone-owned", podsGVR, false}, {"gone-owned", secretsGVR, false},
			{"taken", podsGVR, true},
			{"retaken", podsGVR, true}, {"retaken", secretsGVR, true},
			{"single", secretsGVR, false},
		} {
			_, err := sweeper.Get(ctx, storage.Key{Cluster: c.cluster, GVR: c.gvr, Namespace: "ns", Name: "o"})
			if c.kept != (err == nil) {
				t.Errorf("%s %s: want kept %v, got %v", c.cluster, c.gvr.Resource, c.kept, err)
			}
		}
		// Nothing else was logged: the fenced deletes wrote nothing.
		evs, _, err := sweeper.Changes(ctx, before, 100)
		if err != nil {
			t.Fatal(err)
		}
		var deleted []string
		for _, e := range evs {
			if e.Type != watch.Deleted {
				t.Fatalf("the sweep logged %s of %s", e.Type, e.Key.Cluster)
			}
			deleted = append(deleted, e.Key.Cluster+"/"+e.Key.GVR.Resource)
		}
		slices.Sort(deleted)
		if want := []string{"gone-owned/pods", "gone-owned/secrets", "gone/pods", "gone/secrets", "mine/secrets", "single/secrets"}; !slices.Equal(deleted, want) {
			t.Fatalf("the sweep deleted %v, want %v", deleted, want)
		}
	})
}

func isFenced(err error, epoch, current int64) bool {
	var f *storage.FencedError
	return errors.As(err, &f) && f.Cluster == "east" && f.Epoch == epoch && f.Current == current
}
