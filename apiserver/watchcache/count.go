package watchcache

import (
	"context"
	"runtime"
	"slices"
	"sync"

	"github.com/RoaringBitmap/roaring/v2"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/panorama-io/panorama/storage"
)

// Count counts what q selects among the cached objects of its resource,
// grouped as storage.Interface.Count groups them, once the cache has
// applied revision atLeast (waited for up to Options.FreshnessTimeout).
// ok is false, and the store is to count, when the cache cannot answer:
// the resource is not loaded (a count never waits for a load, but starts
// one), the wait timed out, q filters by owner (which the cache does not
// resolve) or by a field the cache's objects are not described with yet.
func (c *Cache) Count(ctx context.Context, q *storage.CountQuery, atLeast int64) (res *storage.CountResult, ok bool, err error) {
	if err := q.Validate(); err != nil {
		return nil, false, err
	}
	r := c.loaded(q.Query.GVR, true)
	if r == nil || q.Query.HasOwnerFilter() || q.ValidateFields(r.fields.Load()) != nil {
		return nil, false, nil
	}
	if err := c.waitFresh(ctx, atLeast); err != nil {
		return nil, false, ctx.Err() // nil when it timed out: the store answers
	}
	counts, rev, ok := r.count(q, atLeast)
	if !ok {
		return nil, false, nil // dropped by a reset while waiting
	}
	return result(q, counts, rev), true, nil
}

// Holds reports whether the cache has loaded gvr, without loading it.
func (c *Cache) Holds(gvr schema.GroupVersionResource) bool { return c.loaded(gvr, false) != nil }

// loaded returns the cache of gvr if it is loaded and published. With
// start, one nobody asked for yet starts loading, as a list would load
// it, without waiting for it: the store counts until it is loaded (about
// a minute at a million objects, where the store's count of a selection
// can take longer than that on MariaDB), and the cache from then on.
func (c *Cache) loaded(gvr schema.GroupVersionResource, start bool) *resource {
	c.mu.Lock()
	r := c.resources[gvr]
	if r == nil && start && c.started {
		_, _ = c.startLoad(gvr, forRead) // not admitted: the store goes on counting
	}
	c.mu.Unlock()
	if r == nil {
		return nil
	}
	select {
	case <-r.loaded:
		if r.err == nil {
			c.touch(r)
			return r
		}
	default:
	}
	return nil
}

// groupKey is a group's values: set is false where the object lacks the
// label or field.
type groupKey [storage.MaxGroupBy]struct {
	v   string
	set bool
}

// count groups the objects q selects, at r's revision if that is atLeast;
// ok is false if r is not there yet or was dropped by a reset.
//
// The index selects what its sets can tell. When they tell everything and
// the groups are few enough for intersecting each group's set to beat
// reading the objects (costs below), the count is intersections under
// r's read lock. Otherwise the selected objects are read one by one, and
// that happens outside the lock: the cached objects are never modified,
// only replaced.
func (r *resource) count(q *storage.CountQuery, atLeast int64) (counts map[groupKey]int64, rev int64, ok bool) {
	// The cached objects share r's strings of their resource: compared to
	// the same strings, their resource is told by address, not content.
	lq := q.Query
	lq.GVR = r.gvr
	r.mu.RLock()
	if r.closed || r.revision < atLeast {
		r.mu.RUnlock()
		return nil, 0, false
	}
	rev = r.revision
	sel, residual := r.objects.selection(&lq)
	if !residual && r.objects.intersectable(q.GroupBy, sel.GetCardinality()) {
		counts = map[groupKey]int64{}
		r.objects.countGroups(counts, q.GroupBy, sel, groupKey{}, 0)
		r.mu.RUnlock()
		return counts, rev, true
	}
	objects := r.objects.objects(sel)
	r.mu.RUnlock()
	if !residual {
		lq = storage.ListQuery{GVR: r.gvr} // the index selected exactly
	}
	return scanCount(&lq, q.GroupBy, objects), rev, true
}

// The relative costs, in slots an intersection reads, of intersecting a
// group's set and of reading an object's labels and fields (map lookups),
// as BenchmarkCachedCount measures them.
// (Variables for the tests of both ways.)
var (
	intersectionCost = 50.0
	objectCost       = 500.0
)

// intersectable reports whether counting n selected objects by terms
// costs less by intersecting each group's set than by reading the
// objects. Each level intersects every group of the levels before with
// each value of its term, and reads the selected slots about once.
func (x *index) intersectable(terms []storage.GroupBy, n uint64) bool {
	cost, groups := 0.0, 1.0
	for _, t := range terms {
		values, _, _ := x.term(t)
		groups *= float64(len(values) + 1)
		cost += groups*intersectionCost + float64(n)
	}
	return cost < float64(n)*objectCost
}

// term returns the values of a grouping term, the slots that have one
// (nil when every object has: cluster and namespace), and whether values
// the store cannot keep are left out (fields': their objects are grouped
// as without a value).
func (x *index) term(t storage.GroupBy) (values postings, grouped *roaring.Bitmap, storableOnly bool) {
	switch t.Kind {
	case storage.GroupCluster:
		return x.clusters, nil, false
	case storage.GroupNamespace:
		return x.namespaces, nil, false
	case storage.GroupLabel:
		a := attributeIn(x.labels, t.Key)
		return a.values, a.has, false
	default:
		a := attributeIn(x.fields, t.Key)
		return a.values, a.groupedSlots(), true
	}
}

// countGroups counts the slots of sel into counts by terms[i:], key
// holding the values of the terms before: sel intersected with each
// value's slots, and without any of them.
func (x *index) countGroups(counts map[groupKey]int64, terms []storage.GroupBy, sel *roaring.Bitmap, key groupKey, i int) {
	values, grouped, storableOnly := x.term(terms[i])
	last := i == len(terms)-1
	for v, slots := range values {
		if storableOnly && !storage.StorableText(v) {
			continue
		}
		key[i].v, key[i].set = v, true
		if last {
			if n := slots.countIn(sel); n > 0 {
				counts[key] += n
			}
		} else if sub := roaring.And(sel, slots.bitmap()); !sub.IsEmpty() {
			x.countGroups(counts, terms, sub, key, i+1)
		}
	}
	if grouped == nil {
		return
	}
	key[i].v, key[i].set = "", false
	if last {
		if n := int64(sel.GetCardinality() - sel.AndCardinality(grouped)); n > 0 {
			counts[key] += n
		}
	} else if sub := roaring.AndNot(sel, grouped); !sub.IsEmpty() {
		x.countGroups(counts, terms, sub, key, i+1)
	}
}

// minCountPart is the fewest objects worth counting on a processor of
// their own (a variable for the tests of the parts' sum).
var minCountPart = 10_000

// scanCount groups the objects among candidates that q selects, reading
// each object, as the store's count does: an object lacking a label or
// field is in the group without a value, and one with several values of
// a field in the group of each.
func scanCount(q *storage.ListQuery, terms []storage.GroupBy, candidates []*storage.Object) map[groupKey]int64 {
	// Each processor counts a part into a map of its own.
	parts := min(runtime.GOMAXPROCS(0), 1+len(candidates)/minCountPart)
	partial := make([]map[groupKey]int64, parts)
	var wg sync.WaitGroup
	for p := range parts {
		wg.Go(func() {
			counts := map[groupKey]int64{}
			for _, o := range candidates[p*len(candidates)/parts : (p+1)*len(candidates)/parts] {
				if q.Matches(o, nil) {
					addGroups(counts, terms, o, groupKey{}, 0)
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
	return counts
}

// result orders the counted groups as the store does and applies q's
// limit.
func result(q *storage.CountQuery, counts map[groupKey]int64, rev int64) *storage.CountResult {
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
