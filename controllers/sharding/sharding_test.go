package sharding_test

import (
	"fmt"
	"testing"

	"github.com/panorama-io/panorama/controllers/sharding"
)

// A replica joining takes shards only for itself, one leaving gives only its
// own away, and the shards spread over the replicas.
func TestAssignmentMovesOnlyWhatItMust(t *testing.T) {
	const shards = 64
	three := []string{"r0", "r1", "r2"}
	four := append([]string{"r3"}, three...) // order does not matter
	counts := map[string]int{}
	for shard := range shards {
		before, after := sharding.Assignment(three, shard), sharding.Assignment(four, shard)
		if after != before && after != "r3" {
			t.Fatalf("shard %d moved from %s to %s when r3 joined", shard, before, after)
		}
		without := sharding.Assignment([]string{"r0", "r2"}, shard)
		if before != "r1" && without != before {
			t.Fatalf("shard %d moved from %s to %s when r1 left", shard, before, without)
		}
		counts[after]++
	}
	for _, r := range four {
		if counts[r] < shards/4/2 {
			t.Fatalf("assignment of %d shards over four replicas: %v", shards, counts)
		}
	}
	if got := sharding.Assignment(nil, 0); got != "" {
		t.Fatalf("no members: %q", got)
	}
}

func TestShardOfSpreads(t *testing.T) {
	const shards = 16
	counts := make([]int, shards)
	for i := range 1600 {
		s := sharding.ShardOf(fmt.Sprintf("cluster-%d", i), shards)
		if s != sharding.ShardOf(fmt.Sprintf("cluster-%d", i), shards) {
			t.Fatal("not deterministic")
		}
		counts[s]++
	}
	for s, n := range counts {
		if n < 50 {
			t.Fatalf("shard %d has %d of 1600 clusters: %v", s, n, counts)
		}
	}
}
