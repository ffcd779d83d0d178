package sqlstore

import (
	"context"
	"slices"
	"testing"
)

// TestQueueTakesFirstBatchesAhead lines up writes of an initial sync, too
// many rows for one group, and then a cluster being taken over: the
// takeover goes into the next group, ahead of the sync's batches queued
// before it, which keep their order and their bound.
func TestQueueTakesFirstBatchesAhead(t *testing.T) {
	q := newQueue()
	named := map[*batch]string{}
	add := func(name string, rows int, first bool) *batch {
		b := &batch{ctx: context.Background(), rows: rows, first: first}
		named[b] = name
		if err := q.push(b); err != nil {
			t.Fatal(err)
		}
		return b
	}
	names := func(group []*batch) []string {
		out := make([]string, len(group))
		for i, b := range group {
			out[i] = named[b]
		}
		return out
	}
	add("sync-1", groupRows/2+1, false)
	add("sync-2", groupRows/2+1, false)
	add("sync-3", groupRows/2+1, false)
	withdrawn := add("own-a", 0, true)
	add("own-b", 0, true)
	add("own-c", 0, true)
	if !q.withdraw(withdrawn) || q.withdraw(withdrawn) {
		t.Fatal("a queued takeover was not withdrawn exactly once")
	}
	if n := q.len(); n != 5 {
		t.Fatalf("%d batches queued, want 5", n)
	}
	want := [][]string{{"own-b", "own-c", "sync-1"}, {"sync-2"}, {"sync-3"}}
	for i, w := range want {
		if got := names(q.take()); !slices.Equal(got, w) {
			t.Fatalf("group %d is %v, want %v", i, got, w)
		}
	}
	if n := q.len(); n != 0 {
		t.Fatalf("%d batches left, want none", n)
	}

	// A batch over the bound by itself is still taken, alone or after the
	// takeovers only.
	add("huge", groupRows+1, false)
	add("own-d", 0, true)
	for _, w := range [][]string{{"own-d"}, {"huge"}} {
		if got := names(q.take()); !slices.Equal(got, w) {
			t.Fatalf("group is %v, want %v", got, w)
		}
	}
}
