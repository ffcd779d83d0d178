package watchcache

import (
	"context"
	"math"
	"math/bits"
	"slices"

	"github.com/panorama-io/panorama/storage"
)

// Page returns one page of the list q as the store's List would, with
// the same continue tokens: the state at the revision of q's continue
// token, or at q.Revision, or, when q has neither, the cache's current
// state once it has applied revision current. current and compacted are
// the store's revisions, read just before. This is how kube-apiserver
// 1.37 serves consistent and paged lists from its watch cache
// (ConsistentListFromCache, ListFromCacheSnapshot), but without keeping a
// snapshot per revision: a past state is the current one with the ring's
// changes since undone.
//
// A revision below compacted is a TooOldError, as the store answers it;
// one above current is left to the store to refuse. ok is false, and the
// store is to list, when the cache cannot answer: q is not Pageable; the
// resource is not loaded (Page starts loading it, without waiting); the
// ring no longer reaches back to the page's revision; or the cache did
// not reach the revision within the freshness timeout.
func (c *Cache) Page(ctx context.Context, q *storage.ListQuery, current, compacted int64) (page *storage.ListResult, ok bool, err error) {
	if !Pageable(q) {
		return nil, false, nil
	}
	at := q.Revision
	var after *storage.Key
	if q.Continue != "" {
		rev, last, err := storage.DecodeContinue(q.Continue, q.Order())
		if err != nil {
			return nil, false, err
		}
		at, after = rev, &last.Key
	}
	switch {
	case at != 0 && at < compacted:
		return nil, false, &storage.TooOldError{Requested: at, Compacted: compacted}
	case at > current:
		return nil, false, nil
	}
	r := c.loaded(q.GVR, true)
	if r == nil || q.ValidateFields(r.fields) != nil {
		return nil, false, nil
	}
	// A page at a token's revision waits for that revision only.
	need := current
	if at != 0 {
		need = at
	}
	if err := c.waitFresh(ctx, need); err != nil {
		return nil, false, ctx.Err() // nil when it timed out: the store answers
	}
	r.mu.RLock()
	if at == 0 {
		at = r.revision
	}
	// A closed resource was dropped by a reset and is no longer kept
	// current.
	if r.closed || at < r.oldest || at > r.revision {
		r.mu.RUnlock()
		return nil, false, nil
	}
	objs := r.page(q, at, after)
	r.mu.RUnlock()

	page = &storage.ListResult{Revision: at}
	if q.Limit > 0 && int64(len(objs)) > q.Limit {
		objs = objs[:q.Limit]
		page.Continue = storage.EncodeContinue(at, q.Order(), objs[len(objs)-1])
	}
	page.Objects = values(objs)
	return page, true, nil
}

// values copies the objects; cached objects are never modified, only
// replaced, so this needs no lock.
func values(objs []*storage.Object) []storage.Object {
	out := make([]storage.Object, len(objs))
	for i, o := range objs {
		out[i] = *o
	}
	return out
}

// Pageable reports whether Page may serve q, as far as q tells: q is in
// key order and neither filters by owner, reads history nor wants the
// remaining count.
func Pageable(q *storage.ListQuery) bool {
	return !q.HasOwnerFilter() && !q.History && !q.WithRemainingCount && q.InKeyOrder()
}

// page returns, in key order, the objects q selects in the state at
// revision at whose keys follow after (all, when after is nil): q.Limit+1
// of them at most, the last only telling that more follow. r's lock is
// held; at is between r.oldest and r.revision.
func (r *resource) page(q *storage.ListQuery, at int64, after *storage.Key) []*storage.Object {
	// The state at `at` is the current one with the changes since undone:
	// then holds, for each key changed since, its object at `at`, nil if
	// it had none.
	then := map[storage.Key]*storage.Object{}
	for _, ch := range r.since(at) {
		if _, seen := then[ch.obj.Key]; !seen {
			then[ch.obj.Key] = ch.prev
		}
	}
	follows := func(k storage.Key) bool { return after == nil || compareKeys(k, *after) > 0 }
	var past []*storage.Object // the objects of then that q selects, in key order
	for k, o := range then {
		if o != nil && follows(k) && q.Matches(o, nil) {
			past = append(past, o)
		}
	}
	slices.SortFunc(past, func(a, b *storage.Object) int { return compareKeys(a.Key, b.Key) })

	want := -1 // unbounded; so is a limit no list reaches
	if q.Limit > 0 && q.Limit < math.MaxInt32 {
		want = int(q.Limit) + 1
	}
	var out []*storage.Object
	full := func() bool { return want >= 0 && len(out) >= want }
	// take adds o, an object of the current state, after the past ones
	// before it; it reports whether the page wants more.
	take := func(o *storage.Object) bool {
		for len(past) > 0 && compareKeys(past[0].Key, o.Key) < 0 && !full() {
			out, past = append(out, past[0]), past[1:]
		}
		if full() {
			return false
		}
		out = append(out, o)
		return !full()
	}

	sel, residual := r.objects.selection(q)
	// selected tells whether a current object q selects is one of the
	// state at `at`, given that the index selects it.
	selected := func(o *storage.Object) bool {
		_, changed := then[o.Key]
		return !changed && follows(o.Key) && (!residual || q.Matches(o, nil))
	}
	if walkCosts(want, sel.GetCardinality(), uint64(r.objects.len())) {
		visit := func(k keyed) bool {
			if !sel.Contains(k.slot) || !selected(k.obj) {
				return true
			}
			return take(k.obj)
		}
		if after == nil {
			r.objects.order.Ascend(visit)
		} else {
			r.objects.order.AscendGreaterOrEqual(keyed{obj: &storage.Object{Key: *after}}, visit)
		}
	} else {
		var objs []*storage.Object
		for it := sel.Iterator(); it.HasNext(); {
			if o := r.objects.slots[it.Next()]; selected(o) {
				objs = append(objs, o)
			}
		}
		slices.SortFunc(objs, func(a, b *storage.Object) int { return compareKeys(a.Key, b.Key) })
		for _, o := range objs {
			if !take(o) {
				break
			}
		}
	}
	for len(past) > 0 && !full() {
		out, past = append(out, past[0]), past[1:]
	}
	return out
}

// walkCosts reports whether a page of want objects (-1: all) is found
// faster by walking the objects in key order, testing each against the
// selection, than by sorting the selected ones: a walk visits about
// want × live / selected objects, a sort costs about selected × log2
// selected comparisons.
func walkCosts(want int, selected, live uint64) bool {
	if selected == 0 {
		return false
	}
	walk := live
	if want >= 0 {
		walk = min(live, uint64(want)*live/selected)
	}
	return walk <= sortCost*selected*uint64(bits.Len64(selected))
}

// sortCost weighs a sort's comparisons against a walk's visits; tests
// set it to take either way.
var sortCost uint64 = 1
