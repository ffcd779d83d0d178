package sqlstore_test

import (
	"context"
	"maps"
	"slices"
	"testing"
	"time"

	"github.com/panorama-io/panorama/storage"
	"github.com/panorama-io/panorama/storage/storagetest"
)

// TestWriteStagesTimeEachGroup: a committed write group observes every
// stage of panorama_storage_write_seconds once, each for some time, and
// the stages add up to no more than the write took, objects added or
// updated.
func TestWriteStagesTimeEachGroup(t *testing.T) {
	storagetest.ForEach(t, func(t *testing.T, be storagetest.Backend) {
		w := be.Open(t).ForCluster("east", storage.Unfenced)
		for _, memberRV := range []string{"1", "2"} {
			before := storagetest.WriteStages(t)
			start := time.Now()
			if _, err := w.Apply(context.Background(), podsGVR, []storage.Change{
				storage.Upsert(object("Pod", "ns", "a", memberRV)),
				storage.Upsert(object("Pod", "ns", "b", memberRV)),
			}); err != nil {
				t.Fatal(err)
			}
			took := time.Since(start)
			after := storagetest.WriteStages(t)
			var spent float64
			for _, name := range []string{"lock", "read", "plan", "write", "commit"} {
				if groups := after[name].Groups - before[name].Groups; groups != 1 {
					t.Errorf("member resourceVersion %s: stage %s observed %d groups, want 1", memberRV, name, groups)
				}
				s := after[name].Seconds - before[name].Seconds
				if s <= 0 {
					t.Errorf("member resourceVersion %s: stage %s took %gs", memberRV, name, s)
				}
				spent += s
			}
			if len(after) != 5 {
				t.Errorf("stages %v, want lock, read, plan, write and commit", slices.Collect(maps.Keys(after)))
			}
			if spent > took.Seconds() {
				t.Errorf("member resourceVersion %s: the stages took %gs in all, the write %v", memberRV, spent, took)
			}
		}
	})
}
