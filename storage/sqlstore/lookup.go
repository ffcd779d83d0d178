package sqlstore

import (
	"slices"
	"strings"

	"gorm.io/gorm"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/panorama-io/panorama/storage"
)

// Lookups of a group. An Apply plans against the stored rows of its keys,
// and a fenced write checks its cluster's owner epoch. Read one batch at a
// time, they cost two statements a batch, which under many synchronizers'
// churn took nearly as long as writing the rows and their attributes
// (BenchmarkUpdateChurn on MariaDB). So a
// group reads them for a run of its batches at once, one statement per
// resource and d.lookupKeys keys (in d.lookupLists lists of names) and
// one for the epochs, right before the first of them runs. That reads
// what each of them would have read itself as long as none of them reads
// rows that the group has planned and not written (those are written
// before a batch that reads them, see pending.holds), and none takes a
// cluster over (Own): the run ends before a batch that would.

// keyLookup names the rows that an Apply batch reads: those of its keys,
// in one resource of its cluster.
type keyLookup struct {
	gvr  schema.GroupVersionResource
	keys []storage.NamespacedName // each once
}

func newKeyLookup(gvr schema.GroupVersionResource, changes []storage.Change) *keyLookup {
	l := &keyLookup{gvr: gvr, keys: make([]storage.NamespacedName, 0, len(changes))}
	seen := make(map[storage.NamespacedName]bool, len(changes))
	for _, c := range changes {
		if k := (storage.NamespacedName{Namespace: c.Namespace, Name: c.Name}); !seen[k] {
			seen[k] = true
			l.keys = append(l.keys, k)
		}
	}
	return l
}

// storedRows are the stored rows of a batch's keys; a key without one is
// not stored.
type storedRows map[storage.NamespacedName]*resourceRow

// lookupRun returns the batches whose keys the group looks up when
// group[0] is about to run, p holding the rows planned before it (none
// that group[0] reads: they were written first): group[0] and the batches
// after it that have keys, up to the first that has none or reads rows
// that p or one of the run plans. A batch plans rows of its keys' resource
// of its cluster only, so no two of a run share one.
func lookupRun(group []*batch, p *pending) []*batch {
	if group[0].keys == nil {
		return group[:1]
	}
	planned := map[storage.ClusterResource]bool{}
	for i, b := range group {
		if b.keys == nil {
			return group[:i]
		}
		cr := storage.ClusterResource{Cluster: b.cluster, GVR: b.keys.gvr}
		if planned[cr] || (i > 0 && p.holds(b)) {
			return group[:i]
		}
		planned[cr] = true
	}
	return group
}

// runReads are what a group read for a run of its batches.
type runReads struct {
	stored map[*batch]storedRows
	// epochs are the owner epochs of the run's fenced clusters.
	epochs map[string]int64
}

// readRun reads, for run (from lookupRun), the stored rows of their keys
// and the epochs of their clusters they are fenced by.
func readRun(tx *gorm.DB, d *dialect, run []*batch) (runReads, error) {
	stored, err := lookupKeys(tx, d, run)
	if err != nil {
		return runReads{}, err
	}
	var fenced []string
	for _, b := range run {
		if b.epoch != 0 && !slices.Contains(fenced, b.cluster) {
			fenced = append(fenced, b.cluster)
		}
	}
	epochs, err := ownerEpochs(tx, fenced)
	return runReads{stored: stored, epochs: epochs}, err
}

// lookupKeys reads the stored rows of the keys of batches, no two of
// which share a cluster's resource: one statement per resource and
// d.lookupKeys keys (in d.lookupLists lists), whatever the number of
// batches.
func lookupKeys(tx *gorm.DB, d *dialect, batches []*batch) (map[*batch]storedRows, error) {
	out := make(map[*batch]storedRows, len(batches))
	byGVR := map[schema.GroupVersionResource]map[string]*batch{}
	var gvrs []schema.GroupVersionResource
	for _, b := range batches {
		if b.keys == nil {
			continue
		}
		out[b] = storedRows{}
		g := b.keys.gvr
		if byGVR[g] == nil {
			byGVR[g] = map[string]*batch{}
			gvrs = append(gvrs, g)
		}
		byGVR[g][b.cluster] = b
	}
	for _, g := range gvrs {
		var keys []clusterKey
		for _, b := range batches {
			if b.keys != nil && b.keys.gvr == g {
				for _, k := range b.keys.keys {
					keys = append(keys, clusterKey{b.cluster, k})
				}
			}
		}
		for _, lists := range nameLists(keys, d) {
			var rows []resourceRow
			cond, vars := listsCondition(lists)
			if err := whereResource(tx, g).Where(cond, vars...).Find(&rows).Error; err != nil {
				return nil, err
			}
			for i := range rows {
				r := &rows[i]
				if b := byGVR[g][r.Cluster]; b != nil {
					out[b][storage.NamespacedName{Namespace: r.Namespace, Name: r.Name}] = r
				}
			}
		}
	}
	return out, nil
}

// clusterKey is a key of one resource.
type clusterKey struct {
	cluster string
	storage.NamespacedName
}

// nameList is names of one cluster's namespace.
type nameList struct {
	cluster, namespace string
	names              []string
}

// nameLists groups keys of one resource by cluster and namespace, a
// statement's worth at a time: at most d.lookupKeys keys in at most
// d.lookupLists lists.
func nameLists(keys []clusterKey, d *dialect) [][]nameList {
	var lists []nameList
	at := map[[2]string]int{}
	for _, k := range keys {
		space := [2]string{k.cluster, k.Namespace}
		i, ok := at[space]
		if !ok || len(lists[i].names) == d.lookupKeys {
			i = len(lists)
			at[space] = i
			lists = append(lists, nameList{cluster: k.cluster, namespace: k.Namespace})
		}
		lists[i].names = append(lists[i].names, k.Name)
	}
	var statements [][]nameList
	for start := 0; start < len(lists); {
		end, n := start, 0
		for end < len(lists) && end-start < d.lookupLists && n+len(lists[end].names) <= d.lookupKeys {
			n += len(lists[end].names)
			end++
		}
		statements = append(statements, lists[start:end])
		start = end
	}
	return statements
}

// listsCondition selects keys of one resource as whole keys, each a seek
// of resources_key: (cluster = ? AND namespace = ? AND name IN (...)) OR
// .... By the names alone, MariaDB read every cluster's copy of each
// through resources_name (500 rows for a write of 10 names in 50
// clusters). Written as a list of (cluster, namespace, name) tuples,
// PostgreSQL seeks the tuples' shared cluster and namespace and filters
// the names where its statistics are stale, reading the whole namespace.
func listsCondition(lists []nameList) (string, []any) {
	var cond strings.Builder
	vars := make([]any, 0, 3*len(lists))
	for i, l := range lists {
		if i > 0 {
			cond.WriteString(" OR ")
		}
		cond.WriteString("(cluster = ? AND namespace = ? AND name IN ?)")
		vars = append(vars, l.cluster, l.namespace, l.names)
	}
	return "(" + cond.String() + ")", vars
}
