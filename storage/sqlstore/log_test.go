package sqlstore_test

import (
	"bytes"
	"context"
	"fmt"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/panorama-io/panorama/storage"
	"github.com/panorama-io/panorama/storage/sqlstore"
	"github.com/panorama-io/panorama/storage/storagetest"
)

// TestLogStoresEachVersionOnce writes versions of two pods one change at a
// time and checks that the log holds no object of its own (each version is
// the resources row of its revision, then the next entry's pre-image), that
// objects are stored compressed and pre-images of changes kept against the
// object that replaced them, at most MaxDeltaChain of a key in a row, and
// that every reader still gets each version byte for byte as Get served
// it: the log's tail, History with its pre-images, and lists at older
// revisions; after compaction of the entries before, and across rows
// written uncompressed, in full and without a chain count as earlier
// versions did.
func TestLogStoresEachVersionOnce(t *testing.T) {
	storagetest.ForEach(t, func(t *testing.T, b storagetest.Backend) {
		s := b.Open(t)
		ctx := context.Background()
		db := sqlstore.GormDB(s)
		served := map[int64][]byte{} // revision -> the object Get served once it was written
		names := map[int64]string{}  // revision -> the pod it wrote
		// The annotation makes the pods big enough for compression to show.
		pod := func(name, rv string) *unstructured.Unstructured {
			return object("Pod", "default", name, rv, func(u *unstructured.Unstructured) {
				u.SetAnnotations(map[string]string{"note": fmt.Sprintf("%s %s %0200d", name, rv, 7)})
			})
		}
		write := func(c storage.Change) int64 {
			t.Helper()
			rev, err := s.ForCluster("east", storage.Unfenced).Apply(ctx, podsGVR, []storage.Change{c})
			if err != nil {
				t.Fatal(err)
			}
			if c.Object != nil {
				o, err := s.Get(ctx, storage.Key{Cluster: "east", GVR: podsGVR, Namespace: "default", Name: c.Name})
				if err != nil || o.Revision != rev {
					t.Fatalf("get after writing %s at %d: %+v, %v", c.Name, rev, o, err)
				}
				served[rev], names[rev] = o.Data, c.Name
			}
			return rev
		}
		write(storage.Upsert(pod("a", "1")))        // 1
		write(storage.Upsert(pod("b", "1")))        // 2
		write(storage.Upsert(pod("a", "2")))        // 3
		write(storage.Delete("default", "b"))       // 4
		cur := write(storage.Upsert(pod("a", "3"))) // 5

		var inLog int64
		if err := db.Raw("SELECT COUNT(*) FROM events WHERE LENGTH(object) > 0").Scan(&inLog).Error; err != nil || inLog != 0 {
			t.Fatalf("%d log entries hold an object of their own (%v), want none", inLog, err)
		}
		var stored [][]byte
		if err := db.Raw("SELECT object FROM resources UNION ALL SELECT prev_object FROM events WHERE prev_object IS NOT NULL").Scan(&stored).Error; err != nil {
			t.Fatal(err)
		}
		if len(stored) != 4 { // a at 5, and the pre-images of 3, 4 and 5
			t.Fatalf("%d stored objects, want 4", len(stored))
		}
		var deltas int
		for _, o := range stored {
			if bytes.HasPrefix(o, sqlstore.KeptAgainstNext) {
				deltas++
				continue
			}
			if !bytes.HasPrefix(o, []byte{0x28, 0xb5, 0x2f, 0xfd}) || len(o) >= len(served[cur]) {
				t.Fatalf("a stored object of %d bytes is not compressed: %q", len(o), o)
			}
		}
		if deltas != 2 { // the pre-images of 3 and 5; the deleted pod's at 4 is whole
			t.Fatalf("%d pre-images kept against the next version, want 2", deltas)
		}

		check := func(since int64) {
			t.Helper()
			events, _, err := s.Changes(ctx, since, 100)
			if err != nil {
				t.Fatal(err)
			}
			if int64(len(events)) != cur-since {
				t.Fatalf("%d events after %d, want %d", len(events), since, cur-since)
			}
			for _, e := range events {
				checkEventObject(t, e, served)
			}
			// One entry at a time: the entry replacing each is not among
			// those read.
			for rev := since; rev < cur; rev++ {
				one, _, err := s.Changes(ctx, rev, 1)
				if err != nil || len(one) != 1 {
					t.Fatalf("the event after %d: %v, %v", rev, one, err)
				}
				checkEventObject(t, one[0], served)
				if hist, _, err := s.History(ctx, podsGVR, rev+1, 1); err != nil || len(hist) != 1 {
					t.Fatalf("history up to %d: %v, %v", rev+1, hist, err)
				} else {
					checkEventObject(t, hist[0], served)
				}
			}
			hist, _, err := s.History(ctx, podsGVR, cur, 100)
			if err != nil || int64(len(hist)) != cur-since {
				t.Fatalf("history after %d: %d entries, %v", since, len(hist), err)
			}
			for _, e := range hist {
				checkEventObject(t, e, served)
				var want []byte // the last version before, unless the entry created the pod
				for r := e.Revision - 1; r > 0 && e.Type != watch.Added; r-- {
					if names[r] == e.Key.Name {
						want = served[r]
						break
					}
				}
				if !bytes.Equal(e.Prev, want) {
					t.Fatalf("history entry %d: pre-image\n%s\nwant\n%s", e.Revision, e.Prev, want)
				}
			}
			// A list at each revision the log reaches back to serves the
			// objects as they were then.
			for rev := max(since, 1); rev <= cur; rev++ {
				res, err := s.List(ctx, &storage.ListQuery{GVR: podsGVR, Revision: rev})
				if err != nil {
					t.Fatal(err)
				}
				for _, o := range res.Objects {
					if !bytes.Equal(o.Data, served[o.Revision]) || o.Revision > rev {
						t.Fatalf("list at %d: %s at %d serves\n%s\nwant\n%s", rev, o.Name, o.Revision, o.Data, served[o.Revision])
					}
				}
				if want := map[bool]int{true: 2, false: 1}[rev == 2 || rev == 3]; len(res.Objects) != want {
					t.Fatalf("list at %d: %d objects, want %d", rev, len(res.Objects), want)
				}
			}
		}
		check(0)
		if err := s.Compact(ctx, 3, true); err != nil {
			t.Fatal(err)
		}
		check(3)

		// Rows an earlier version wrote: uncompressed, without a chain
		// count, and the entry with its object in full.
		if err := db.Exec("UPDATE resources SET object = ?, delta_chain = NULL WHERE revision = ?", served[cur], cur).Error; err != nil {
			t.Fatal(err)
		}
		if err := db.Exec("UPDATE events SET object = ? WHERE revision = ?", served[cur], cur).Error; err != nil {
			t.Fatal(err)
		}
		cur = write(storage.Upsert(pod("a", "4"))) // 6
		check(3)

		// A key changed more often than MaxDeltaChain: every pre-image
		// after MaxDeltaChain kept against the next is whole, so no reader
		// walks more.
		first := cur + 1
		for i := range 2*sqlstore.MaxDeltaChain + 3 {
			cur = write(storage.Upsert(pod("a", fmt.Sprint(5+i))))
		}
		var prevs [][]byte
		if err := db.Raw("SELECT prev_object FROM events WHERE revision >= ? ORDER BY revision", first).Scan(&prevs).Error; err != nil {
			t.Fatal(err)
		}
		run, whole := 1, 0 // the pre-image of 6 was kept against it
		for i, p := range prevs {
			if !bytes.HasPrefix(p, sqlstore.KeptAgainstNext) {
				run, whole = 0, whole+1
				continue
			}
			if run++; run > sqlstore.MaxDeltaChain {
				t.Fatalf("the pre-image of %d is the %dth kept against the next in a row", first+int64(i), run)
			}
		}
		if whole != 2 {
			t.Fatalf("%d whole pre-images among %d changes, want 2", whole, len(prevs))
		}
		check(3)
		if err := s.Compact(ctx, first+3, true); err != nil { // into history, within a chain
			t.Fatal(err)
		}
		check(first + 3)
		// Every version of a, from the history rows compaction made and
		// from the log.
		versions, err := s.ObjectHistory(ctx, storage.Key{Cluster: "east", GVR: podsGVR, Namespace: "default", Name: "a"}, 0)
		if err != nil {
			t.Fatal(err)
		}
		for _, v := range versions {
			if !bytes.Equal(v.Object, served[v.Revision]) {
				t.Fatalf("version %d of a:\n%s\nwant\n%s", v.Revision, v.Object, served[v.Revision])
			}
		}
		if want := 4 + int(cur-first+1); len(versions) != want { // 1, 3, 5, 6 and the chain's
			t.Fatalf("%d versions of a, want %d", len(versions), want)
		}
	})
}

// checkEventObject fails unless e carries the object Get served at its
// revision, or for a delete the last one served with the deletion's
// revision.
func checkEventObject(t *testing.T, e storage.LoggedChange, served map[int64][]byte) {
	t.Helper()
	if e.Type != watch.Deleted {
		if !bytes.Equal(e.Object, served[e.Revision]) {
			t.Fatalf("%s %d carries\n%s\nwant\n%s", e.Type, e.Revision, e.Object, served[e.Revision])
		}
		return
	}
	o, err := storage.DecodeStored(e.Object)
	if err != nil || o.Revision != e.Revision || o.Name != e.Key.Name || o.MemberResourceVersion != "1" {
		t.Fatalf("DELETED %d carries %+v (%v)", e.Revision, o, err)
	}
}

// TestDeletedEventKeepsLargeIntegers: a DELETED event carries the last
// state at the deletion's revision, rewritten from the stored JSON; an
// integer beyond float64's precision must come back as it was stored.
func TestDeletedEventKeepsLargeIntegers(t *testing.T) {
	storagetest.ForEach(t, func(t *testing.T, b storagetest.Backend) {
		s := b.Open(t)
		ctx := context.Background()
		const large = int64(1<<53 + 1)
		pod := object("Pod", "default", "a", "1", func(u *unstructured.Unstructured) {
			u.Object["spec"] = map[string]any{"priority": large}
		})
		created, err := s.ForCluster("east", storage.Unfenced).Apply(ctx, podsGVR, []storage.Change{storage.Upsert(pod)})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := s.ForCluster("east", storage.Unfenced).Apply(ctx, podsGVR, []storage.Change{storage.Delete("default", "a")}); err != nil {
			t.Fatal(err)
		}
		events, _, err := s.Changes(ctx, created, 10)
		if err != nil || len(events) != 1 || events[0].Type != watch.Deleted {
			t.Fatalf("events after %d: %+v, %v", created, events, err)
		}
		if want := []byte(`"priority":9007199254740993`); !bytes.Contains(events[0].Object, want) {
			t.Fatalf("DELETED event's object %s, want it to hold %s", events[0].Object, want)
		}
	})
}
