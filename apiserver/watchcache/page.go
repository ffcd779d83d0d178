package watchcache

import (
	"context"
	"math/bits"
	"slices"
	"time"

	"github.com/RoaringBitmap/roaring/v2"

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
	at, after, err := pageStart(q)
	if err != nil {
		return nil, false, err
	}
	switch {
	case at != 0 && at < compacted:
		return nil, false, &storage.TooOldError{Requested: at, Compacted: compacted}
	case at > current:
		return nil, false, nil
	}
	// A page at a token's revision waits for that revision only.
	need := current
	if at != 0 {
		need = at
	}
	return c.page(ctx, q, at, after, need)
}

// staleCompaction is how many poll intervals PageApplied trusts the
// compacted revision the tail last read; beyond that, Page reads it.
const staleCompaction = 10

// PageApplied returns the page q continues, as Page does, without the
// store's revisions, when the cache has applied the revision of q's
// continue token. Such a page needs no consistent read, and its revision
// is checked against the compaction the tail last read rather than the
// store's (a tail reads it at least every poll, from the replica the
// cache tails where there is one): that saves the store a read for every
// page of a list but its first. ok is false for a first page, an Exact
// list's included, for a page at a revision the cache has yet to apply,
// and while the tail has not read the log for staleCompaction polls: Page
// answers those, with the store's revisions.
func (c *Cache) PageApplied(ctx context.Context, q *storage.ListQuery) (page *storage.ListResult, ok bool, err error) {
	if q.Continue == "" || !Pageable(q) {
		return nil, false, nil
	}
	if err := ctx.Err(); err != nil {
		return nil, false, err // as a read of the store would end
	}
	at, after, err := pageStart(q)
	if err != nil {
		return nil, false, err
	}
	c.mu.Lock()
	applied, compacted, read := c.revision, c.compacted, c.readCompacted
	c.mu.Unlock()
	switch {
	case at > applied, time.Since(read) > staleCompaction*c.opts.PollInterval:
		// A tail that has not read the log for that long (the store or its
		// replica failing) may have missed a compaction.
		return nil, false, nil
	case at < compacted:
		return nil, false, &storage.TooOldError{Requested: at, Compacted: compacted}
	}
	return c.page(ctx, q, at, after, at)
}

// pageStart is the revision of q's page, 0 for the latest, and the key
// it starts after, if any.
func pageStart(q *storage.ListQuery) (at int64, after *storage.Key, err error) {
	if q.Continue == "" {
		return q.Revision, nil, nil
	}
	rev, last, err := storage.DecodeContinue(q.Continue, q.Order())
	if err != nil {
		return 0, nil, err
	}
	return rev, &last.Key, nil
}

// page reads the page of q at revision at (0: the latest) after key
// after, once the cache has applied revision need.
func (c *Cache) page(ctx context.Context, q *storage.ListQuery, at int64, after *storage.Key, need int64) (page *storage.ListResult, ok bool, err error) {
	r := c.loaded(q.GVR, true)
	if r == nil || q.ValidateFields(r.fields.Load()) != nil {
		return nil, false, nil
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
	read := r.readPage(q, at, after)
	r.mu.RUnlock()
	objs, err := read.finish()
	if err != nil {
		return nil, false, err
	}

	page = &storage.ListResult{Revision: at}
	if limit := min(q.Limit, storage.MaxLimit); limit > 0 && int64(len(objs)) > limit {
		objs = objs[:limit]
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

// pageRead is what a page reads of a resource under its lock; finish
// makes the page of it outside the lock.
type pageRead struct {
	q    *storage.ListQuery
	want int // how many objects the page needs, -1 for all
	// past are the first changes since the page's revision of the keys
	// whose objects then q selects, in key order: their pre-images are
	// those objects.
	past []change
	// walked are the current objects of the page, in key order, when the
	// page walked the key order; else selected are those the index
	// selects, in no order, still to be matched against q when residual.
	walked, selected []*storage.Object
	residual         bool
}

// readPage reads, under r's lock, the objects of q in the state at
// revision at whose keys follow after (all when after is nil); at is
// between r.oldest and r.revision. The page wants q.Limit+1 of them, the
// last only telling that more follow.
func (r *resource) readPage(q *storage.ListQuery, at int64, after *storage.Key) *pageRead {
	p := &pageRead{q: q, want: -1} // unbounded; so is a limit beyond MaxLimit
	if q.Limit > 0 {
		p.want = int(min(q.Limit, storage.MaxLimit)) + 1
	}
	// The state at `at` is the current one with the changes since undone:
	// then holds, for each key changed since, the first change after
	// `at`, whose pre-image is the key's object at `at`, if it had one.
	// The changes are copied: the ring's slots are reused once the lock
	// is released.
	then := map[storage.Key]change{}
	r.changesAfter(at, func(ch *change) {
		if _, seen := then[ch.obj.Key]; !seen {
			then[ch.obj.Key] = *ch
		}
	})
	follows := func(k storage.Key) bool { return after == nil || storage.CompareKeys(k, *after) > 0 }
	for k, ch := range then {
		if ch.prev != nil && follows(k) && q.Matches(&ch.prev.described, nil) {
			p.past = append(p.past, ch)
		}
	}
	slices.SortFunc(p.past, func(a, b change) int { return storage.CompareKeys(a.obj.Key, b.obj.Key) })

	sel, residual := r.objects.selection(q)
	// An object is current at `at` unless it changed since.
	unchanged := func(o *storage.Object) bool {
		_, changed := then[o.Key]
		return !changed
	}
	card := sel.GetCardinality()
	if p.want >= 0 && walkCosts(p.want, card, uint64(r.objects.len())) {
		// The walk matches what it takes against q: finish has nothing left
		// to match.
		if p.walked = r.walk(q, after, sel, residual, unchanged, p.want, walkBudget(card)); p.walked != nil {
			return p
		}
	}
	// Sorting is left for finish, outside the lock; an unbounded list
	// never walks, which would hold the lock for the whole walk.
	p.residual = residual
	p.selected = make([]*storage.Object, 0, card)
	for it := sel.Iterator(); it.HasNext(); {
		if o := r.objects.slots[it.Next()]; unchanged(o) && follows(o.Key) {
			p.selected = append(p.selected, o)
		}
	}
	return p
}

// walk returns up to want current objects q selects (in sel, unchanged
// and, when residual, matching q) in key order after after, within the
// clusters and namespaces q is limited to, over whose gaps it seeks; nil
// when it would visit more than budget objects, where sorting the
// selection is cheaper.
func (r *resource) walk(q *storage.ListQuery, after *storage.Key, sel *roaring.Bitmap, residual bool, unchanged func(*storage.Object) bool, want int, budget uint64) []*storage.Object {
	ranges := keyRangesOf(q)
	from := ranges.first()
	// The walk starts at after, or at a range beyond it: only its first
	// key may be after itself, which it skips, so the keys it visits are
	// not compared with after each (a quarter of a paged list's time).
	skip := after != nil && storage.CompareKeys(*after, from) >= 0
	if skip {
		from = *after
	}
	out := []*storage.Object{}
	visits := uint64(0)
	for seeking := true; seeking; {
		seeking = false
		r.objects.order.AscendGreaterOrEqual(keyed{obj: &storage.Object{Key: from}}, func(k keyed) bool {
			if visits++; visits > budget {
				out = nil
				return false
			}
			if skip {
				skip = false
				if storage.CompareKeys(k.obj.Key, *after) == 0 {
					return true
				}
			}
			next, ok := ranges.seek(k.obj.Key)
			if !ok {
				return false
			}
			if next != k.obj.Key {
				from, seeking = next, true
				return false
			}
			if sel.Contains(k.slot) && unchanged(k.obj) && (!residual || q.Matches(k.obj, nil)) {
				out = append(out, k.obj)
			}
			return len(out) < want
		})
	}
	return out
}

// keyRanges are the parts of the key order a query can select: its
// clusters, and in each its namespaces, sorted; nil for any. A walk seeks
// from one to the next rather than visiting the keys between: a page of
// one namespace across all clusters visited the namespaces before it in
// every cluster, until it gave up for a sort (BenchmarkCachedSearch's
// namespace search).
type keyRanges struct{ clusters, namespaces []string }

func keyRangesOf(q *storage.ListQuery) keyRanges {
	sorted := func(vs []string) []string {
		if len(vs) == 0 {
			return nil
		}
		out := slices.Clone(vs)
		slices.Sort(out)
		return slices.Compact(out)
	}
	return keyRanges{clusters: sorted(q.Clusters), namespaces: sorted(q.Namespaces)}
}

// first is the first key of the ranges, or before it.
func (kr keyRanges) first() storage.Key {
	var k storage.Key
	if kr.clusters != nil {
		k.Cluster = kr.clusters[0]
	}
	if kr.namespaces != nil {
		k.Namespace = kr.namespaces[0]
	}
	return k
}

// seek returns k when the ranges hold it, else the first key of the
// ranges after it (or before that key, with no name); false when no range
// follows k.
func (kr keyRanges) seek(k storage.Key) (storage.Key, bool) {
	if kr.clusters != nil {
		i, found := slices.BinarySearch(kr.clusters, k.Cluster)
		if !found {
			if i == len(kr.clusters) {
				return storage.Key{}, false
			}
			return storage.Key{Cluster: kr.clusters[i], Namespace: kr.first().Namespace}, true
		}
	}
	if kr.namespaces == nil {
		return k, true
	}
	i, found := slices.BinarySearch(kr.namespaces, k.Namespace)
	switch {
	case found:
		return k, true
	case i < len(kr.namespaces):
		return storage.Key{Cluster: k.Cluster, Namespace: kr.namespaces[i]}, true
	default:
		// Past the cluster's last namespace: the next cluster's first,
		// "\x00" making the least cluster name after this one.
		return kr.seek(storage.Key{Cluster: k.Cluster + "\x00"})
	}
}

// finish makes the page of what readPage read: the past and current
// objects merged in key order, want of them at most. Only the past
// objects the page returns have their JSON inflated.
func (p *pageRead) finish() ([]*storage.Object, error) {
	cur := p.walked
	if cur == nil {
		cur = p.selected
		if p.residual {
			cur = slices.DeleteFunc(cur, func(o *storage.Object) bool { return !p.q.Matches(o, nil) })
		}
		slices.SortFunc(cur, func(a, b *storage.Object) int { return storage.CompareKeys(a.Key, b.Key) })
	}
	n := len(cur) + len(p.past)
	if p.want >= 0 {
		n = min(n, p.want)
	}
	out := make([]*storage.Object, 0, n)
	past := p.past
	for len(out) < n {
		if len(past) > 0 && (len(cur) == 0 || storage.CompareKeys(past[0].obj.Key, cur[0].Key) < 0) {
			o, err := past[0].before()
			if err != nil {
				return nil, err
			}
			out, past = append(out, o), past[1:]
		} else {
			out, cur = append(out, cur[0]), cur[1:]
		}
	}
	return out, nil
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
	return walk <= sorting(selected)
}

// sorting is what sorting the selected objects costs, in a walk's visits.
func sorting(selected uint64) uint64 {
	return sortCost * selected * uint64(bits.Len64(selected))
}

// walkBudget is how many objects a walk may visit before sorting the
// selected ones would have been cheaper: where the selection is not
// spread evenly over the key order, a walk can find its page later than
// walkCosts expects, and stops for a sort at this many visits.
func walkBudget(selected uint64) uint64 {
	if maxVisits > 0 {
		return maxVisits
	}
	return sorting(selected)
}

// sortCost weighs a sort's comparisons against a walk's visits, and
// maxVisits, when set, bounds a walk; tests set them to take each way.
var (
	sortCost  uint64 = 1
	maxVisits uint64
)
