package sqlstore

import (
	"context"
	"slices"
	"testing"
)

// TestQueueTakesFirstBatchesAhead lines up writes of initial syncs, too
// many rows for one group, and then control writes of clusters (taking
// one over, dropping its Secrets' data): each goes into the next group
// ahead of the other clusters' batches, after those of its own cluster and
// of no cluster queued before it, and no two batches of one cluster ever
// pass each other.
func TestQueueTakesFirstBatchesAhead(t *testing.T) {
	half := groupRows/2 + 1
	for _, tc := range []struct {
		name  string
		queue []*batch
		// withdraw is withdrawn before the groups are taken.
		withdraw string
		groups   [][]string
	}{{
		name: "a takeover passes other clusters' syncs",
		queue: []*batch{
			{cluster: "a", rows: half}, {cluster: "b", rows: half}, {cluster: "c", rows: half},
			{cluster: "d", first: true}, {cluster: "e", first: true},
		},
		groups: [][]string{{"a", "d*", "e*"}, {"b"}, {"c"}},
	}, {
		name: "a withdrawn takeover is not written",
		queue: []*batch{
			{cluster: "a", rows: half}, {cluster: "b", rows: half},
			{cluster: "d", first: true}, {cluster: "e", first: true},
		},
		withdraw: "d",
		groups:   [][]string{{"a", "e*"}, {"b"}},
	}, {
		name: "a control write follows its own cluster's and the fields' writes",
		queue: []*batch{
			{cluster: "a", rows: half}, {cluster: "b", rows: 10}, {cluster: "c", rows: half},
			{cluster: "", rows: 1}, {cluster: "d", rows: half}, {cluster: "b", rows: 500, first: true},
		},
		groups: [][]string{{"a", "b", "", "b*"}, {"c"}, {"d"}},
	}, {
		name: "a control write that does not fit waits for the next group, still ahead",
		queue: []*batch{
			{cluster: "a", rows: half}, {cluster: "b", rows: half}, {cluster: "c", rows: half},
			{cluster: "x", first: true}, {cluster: "b", rows: half, first: true},
		},
		groups: [][]string{{"a", "x*"}, {"b", "b*"}, {"c"}},
	}, {
		name: "the oldest batch goes whatever its size",
		queue: []*batch{
			{cluster: "a", rows: groupRows + 1}, {cluster: "b", first: true}, {cluster: "a", rows: 1},
		},
		groups: [][]string{{"b*"}, {"a"}, {"a"}},
	}, {
		name: "no first batch: in order, while they fit",
		queue: []*batch{
			{cluster: "a", rows: half}, {cluster: "b", rows: 1}, {cluster: "c", rows: half}, {cluster: "a", rows: 1},
		},
		groups: [][]string{{"a", "b"}, {"c", "a"}},
	}} {
		t.Run(tc.name, func(t *testing.T) {
			q := newQueue()
			for _, b := range tc.queue {
				b.ctx = context.Background()
				if err := q.push(b); err != nil {
					t.Fatal(err)
				}
			}
			if tc.withdraw != "" {
				i := slices.IndexFunc(tc.queue, func(b *batch) bool { return b.cluster == tc.withdraw })
				if !q.withdraw(tc.queue[i]) || q.withdraw(tc.queue[i]) {
					t.Fatal("a queued batch was not withdrawn exactly once")
				}
			}
			for i, want := range tc.groups {
				var got []string
				for _, b := range q.take() {
					name := b.cluster
					if b.first {
						name += "*"
					}
					got = append(got, name)
				}
				// A group is in queue order, which keeps each cluster's.
				if !slices.Equal(got, want) {
					t.Fatalf("group %d is %v, want %v", i, got, want)
				}
			}
			if n := q.len(); n != 0 {
				t.Fatalf("%d batches left, want none", n)
			}
		})
	}
}
