package storage_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/panorama-io/panorama/storage"
	"github.com/panorama-io/panorama/storage/storagetest"
)

// TestCompactor checks that each tick compacts to the revision of the tick
// before, never past what a reader could still be using.
func TestCompactor(t *testing.T) {
	s := storagetest.Backends()[0].Open(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	pods := schema.GroupVersionResource{Version: "v1", Resource: "pods"}
	write := func(i int) int64 {
		u := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "Pod",
			"metadata": map[string]any{"name": fmt.Sprint("p", i), "namespace": "ns", "resourceVersion": "1"}}}
		rev, err := s.ForCluster("east", storage.Unfenced).Apply(ctx, pods, []storage.Change{storage.Upsert(u)})
		if err != nil {
			t.Fatal(err)
		}
		return rev
	}
	write(0)
	const interval = 300 * time.Millisecond
	go storage.RunCompactor(ctx, s, interval, storage.DefaultHistoryRetention)
	// Keep writing while watching for the first compaction: it must leave
	// the changes of the last interval in the log.
	deadline := time.Now().Add(10 * time.Second)
	for i := 1; ; i++ {
		time.Sleep(interval / 3)
		write(i)
		current, compacted, err := s.Revision(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if compacted > 0 {
			if compacted >= current {
				t.Fatalf("compacted to %d with the current revision %d: nothing left to resume from", compacted, current)
			}
			if _, _, err := s.Changes(ctx, compacted-1, 10); !storage.IsTooOld(err) {
				t.Fatalf("events below the compaction at %d: %v", compacted, err)
			}
			if ev, _, err := s.Changes(ctx, compacted, 100); err != nil || len(ev) != int(current-compacted) {
				t.Fatalf("events after the compaction at %d: %d, %v", compacted, len(ev), err)
			}
			return
		}
		if time.Now().After(deadline) {
			t.Fatal("never compacted")
		}
	}
}
