package sqlstore_test

import (
	"context"
	"testing"
	"time"

	"github.com/panorama-io/panorama/storage"
	"github.com/panorama-io/panorama/storage/sqlstore"
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
			before := sqlstore.WriteStages()
			start := time.Now()
			if _, err := w.Apply(context.Background(), podsGVR, []storage.Change{
				storage.Upsert(object("Pod", "ns", "a", memberRV)),
				storage.Upsert(object("Pod", "ns", "b", memberRV)),
			}); err != nil {
				t.Fatal(err)
			}
			took := time.Since(start)
			var spent float64
			for i, after := range sqlstore.WriteStages() {
				if groups := after.Groups - before[i].Groups; groups != 1 {
					t.Errorf("member resourceVersion %s: stage %s observed %d groups, want 1", memberRV, after.Name, groups)
				}
				s := after.Seconds - before[i].Seconds
				if s <= 0 {
					t.Errorf("member resourceVersion %s: stage %s took %gs", memberRV, after.Name, s)
				}
				spent += s
			}
			if spent > took.Seconds() {
				t.Errorf("member resourceVersion %s: the stages took %gs in all, the write %v", memberRV, spent, took)
			}
		}
	})
}
