package watchcache

import (
	"context"
	"runtime"
	"slices"
	"sync"

	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/panorama-io/panorama/storage"
)

// Count counts what q selects among the cached objects of its resource,
// grouped as storage.Interface.Count groups them, once the cache has
// applied revision atLeast (waited for up to Options.FreshnessTimeout).
// ok is false, and the store is to count, when the cache cannot answer:
// the resource is not loaded (a count never loads one, nor waits for a
// load), the wait timed out, q filters by owner (which the cache does not
// resolve) or by a field the cache's objects are not described with yet.
func (c *Cache) Count(ctx context.Context, q *storage.CountQuery, atLeast int64) (res *storage.CountResult, ok bool, err error) {
	if err := q.Validate(); err != nil {
		return nil, false, err
	}
	r := c.loaded(q.Query.GVR)
	if r == nil || q.Query.HasOwnerFilter() || q.ValidateFields(r.fields) != nil {
		return nil, false, nil
	}
	if err := c.waitFresh(ctx, atLeast); err != nil {
		return nil, false, ctx.Err() // nil when it timed out: the store answers
	}
	all, rev, ok := r.snapshotAt(atLeast)
	if !ok {
		return nil, false, nil // dropped by a reset while waiting
	}
	return count(q, r.gvr, all, rev), true, nil
}

// loaded returns the cache of gvr if it is loaded and published, without
// loading it.
func (c *Cache) loaded(gvr schema.GroupVersionResource) *resource {
	c.mu.Lock()
	r := c.resources[gvr]
	c.mu.Unlock()
	if r == nil {
		return nil
	}
	select {
	case <-r.loaded:
		if r.err == nil {
			return r
		}
	default:
	}
	return nil
}

// minCountPart is the fewest objects worth counting on a processor of
// their own (a variable for the tests of the parts' sum).
var minCountPart = 10_000

// groupKey is a group's values: set is false where the object lacks the
// label or field.
type groupKey [storage.MaxGroupBy]struct {
	v   string
	set bool
}

// count groups the objects q selects among all, gvr's at revision rev,
// as the store's count does: an object lacking a label or field is in the
// group without a value, and one with several values of a field in the
// group of each.
func count(q *storage.CountQuery, gvr schema.GroupVersionResource, all []*storage.Object, rev int64) *storage.CountResult {
	// The cached objects share gvr's strings (decode): compared to the
	// same strings, their resource is told by address, not by content.
	lq := q.Query
	lq.GVR = gvr
	// Each processor counts a part into a map of its own.
	parts := min(runtime.GOMAXPROCS(0), 1+len(all)/minCountPart)
	partial := make([]map[groupKey]int64, parts)
	var wg sync.WaitGroup
	for p := range parts {
		wg.Go(func() {
			counts := map[groupKey]int64{}
			for _, o := range all[p*len(all)/parts : (p+1)*len(all)/parts] {
				if lq.Matches(o, nil) {
					addGroups(counts, q.GroupBy, o, groupKey{}, 0)
				}
			}
			partial[p] = counts
		})
	}
	wg.Wait()
	counts := partial[0]
	for _, more := range partial[1:] {
		for k, n := range more {
			counts[k] += n
		}
	}
	var groups []storage.CountGroup // nil for none, as the store's
	for k, n := range counts {
		g := storage.CountGroup{Values: make([]*string, len(q.GroupBy)), Count: n}
		for i := range g.Values {
			if k[i].set {
				g.Values[i] = &k[i].v
			}
		}
		groups = append(groups, g)
	}
	slices.SortFunc(groups, func(a, b storage.CountGroup) int { return storage.CompareGroups(&a, &b) })
	res := &storage.CountResult{Groups: groups, Revision: rev}
	limit := q.Limit
	if limit == 0 {
		limit = storage.DefaultCountLimit
	}
	if len(groups) > limit {
		res.Groups, res.RemainingGroups = groups[:limit], int64(len(groups)-limit)
	}
	return res
}

// addGroups counts o once in each group its values of terms[i:] make,
// with key holding its values of the terms before.
func addGroups(counts map[groupKey]int64, terms []storage.GroupBy, o *storage.Object, key groupKey, i int) {
	if i == len(terms) {
		counts[key]++
		return
	}
	switch t := terms[i]; t.Kind {
	case storage.GroupCluster:
		key[i].v, key[i].set = o.Cluster, true
	case storage.GroupNamespace:
		key[i].v, key[i].set = o.Namespace, true
	case storage.GroupLabel:
		key[i].v, key[i].set = o.Labels[t.Key]
	case storage.GroupField:
		counted := false
		for _, v := range o.Fields[t.Key] {
			// The store keeps no value no database can hold (fieldRows).
			if storage.StorableText(v) {
				key[i].v, key[i].set = v, true
				addGroups(counts, terms, o, key, i+1)
				counted = true
			}
		}
		if counted {
			return
		}
	}
	addGroups(counts, terms, o, key, i+1)
}
