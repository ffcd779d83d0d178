package sqlstore

import (
	"fmt"
	"testing"

	"github.com/panorama-io/panorama/storage"
)

// TestNameLists: every key is looked up once, in statements of at most
// lookupKeys keys and lookupLists lists, each list the names of one
// cluster's namespace.
func TestNameLists(t *testing.T) {
	var keys []clusterKey
	for i := range 1200 {
		// 3 clusters; one big namespace, and 40 small ones.
		ns := "big"
		if i%3 == 0 {
			ns = fmt.Sprint("ns-", i%40)
		}
		keys = append(keys, clusterKey{fmt.Sprint("c", i%3), storage.NamespacedName{Namespace: ns, Name: fmt.Sprint("n-", i)}})
	}
	for _, d := range []*dialect{{lookupKeys: 500, lookupLists: 10}, {lookupKeys: 20, lookupLists: 20}, {lookupKeys: 7, lookupLists: 1}} {
		for _, n := range []int{0, 1, 13, len(keys)} {
			t.Run(fmt.Sprintf("%d-keys-%d-%d", n, d.lookupKeys, d.lookupLists), func(t *testing.T) {
				seen := map[clusterKey]int{}
				for _, lists := range nameLists(keys[:n], d) {
					if len(lists) == 0 || len(lists) > d.lookupLists {
						t.Fatalf("a statement of %d lists", len(lists))
					}
					total := 0
					for _, l := range lists {
						total += len(l.names)
						for _, name := range l.names {
							seen[clusterKey{l.cluster, storage.NamespacedName{Namespace: l.namespace, Name: name}}]++
						}
					}
					if total > d.lookupKeys {
						t.Fatalf("a statement of %d keys", total)
					}
				}
				if len(seen) != n {
					t.Fatalf("%d keys looked up, want %d", len(seen), n)
				}
				for _, k := range keys[:n] {
					if seen[k] != 1 {
						t.Fatalf("%v looked up %d times", k, seen[k])
					}
				}
			})
		}
	}
}
