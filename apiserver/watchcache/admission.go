package watchcache

// Admission: a read of a resource the cache does not hold starts its
// load only when caching it is worth what it evicts.
//
// Past the budget a load evicts the least recently read resources. Alone,
// that is least-recently-used caching, whose worst case is a scan: lists
// going over more resources in turn than the budget holds (a backup, a
// dashboard's pages, an inventory) miss every time, and each miss loads
// its resource beside the store's answer only to evict the next one read
// (BenchmarkBudgetedCache). So, as TinyLFU admits an entry into a cache,
// a read that misses loads its resource only if the room it takes is
// free, or if the resource was read clearly more often of late than the
// resources its load would evict together; else the store answers, and
// nothing is loaded or evicted. A scan's resources, read about as often
// as the ones held, then leave those held. How often is counted in
// requests (Reads), each page of a list one, answered by the cache or the
// store, halved every window of reads so that what is read often now
// overtakes what was read often before. A resource's size is the last the
// cache held of it, or, never held, the most one held.
//
// A watch is always admitted when its resource fits: watches are what
// the cache is for, it pins their resource, and a watch from the log
// reads the whole change log (logwatch.go).

import (
	"cmp"
	"slices"
	"sync"

	"k8s.io/apimachinery/pkg/runtime/schema"
)

// readsPerResource is how many reads of each resource counted a window
// holds: counts are halved once that many reads per resource have been
// counted. A window spans many turns of a scan, each of a list's pages:
// aged within one, the resource held would lose to each resource read in
// turn after it.
const readsPerResource = 1024

// readsOverVictims is how many times as often as the resources it would
// evict a resource must have been read to be loaded. A load costs the
// store a read of the whole resource, and each resource it evicts another
// when next loaded: a resource read about as often as those, in a scan,
// is left to the store, where counting by strictly more reads would have
// it loaded on one read more.
const readsOverVictims = 2

// demand is what a request wants a resource loaded for.
type demand int

const (
	forRead demand = iota
	forWatch
)

// readCounts counts the recent reads of each resource and remembers the
// size of those the cache held. Its lock is taken under c.mu and r.mu,
// never the other way.
type readCounts struct {
	mu     sync.Mutex
	counts map[schema.GroupVersionResource]int64
	// window counts the reads since counts were last halved.
	window int
	sizes  map[schema.GroupVersionResource]int64
}

func newReadCounts() *readCounts {
	return &readCounts{counts: map[schema.GroupVersionResource]int64{}, sizes: map[schema.GroupVersionResource]int64{}}
}

// add counts a read of gvr, halving every count at the end of a window.
// A resource whose count halves to zero is forgotten, so that the counts
// hold only what is read.
func (rc *readCounts) add(gvr schema.GroupVersionResource) {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	rc.counts[gvr]++
	if rc.window++; rc.window < readsPerResource*len(rc.counts) {
		return
	}
	rc.window = 0
	for k, n := range rc.counts {
		if rc.counts[k] = n / 2; n < 2 {
			delete(rc.counts, k)
		}
	}
}

// count is how often gvr was read of late.
func (rc *readCounts) count(gvr schema.GroupVersionResource) int64 {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	return rc.counts[gvr]
}

// sized remembers what the cache holds of gvr as it publishes or evicts
// it, or what a load of it read before the loads under way left it no
// room: at least that much, which its next loads are then expected to
// take rather than what any other took.
func (rc *readCounts) sized(gvr schema.GroupVersionResource, bytes int64) {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	rc.sizes[gvr] = bytes
}

// size is what gvr is expected to hold: what it held last, or, never
// held, the most any other did (0 when none was). That errs on the side
// of what is held: a resource refused for it is answered by the store,
// and once read more often than what it would evict, loaded and known.
func (rc *readCounts) size(gvr schema.GroupVersionResource) int64 {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	if n, ok := rc.sizes[gvr]; ok {
		return n
	}
	var most int64
	for _, n := range rc.sizes {
		most = max(most, n)
	}
	return most
}

// errNotAdmitted answers a read whose resource is not worth loading now
// (admits): the store answers it.
var errNotAdmitted = notCachedError("the resource was read less often of late than those loading it would evict from the watch cache")

// notCachedError is a reason the cache does not hold a resource.
type notCachedError string

func (e notCachedError) Error() string { return string(e) }

func (notCachedError) Is(target error) bool { return target == errOverBudget }

// admits decides whether a request of demand d loads gvr, which the cache
// does not hold or load: the one place that is decided. It does not if
// gvr alone exceeds the budget, or exceeded it beside the resources
// watches pin and none was unpinned since; for a read, if the room gvr is
// expected to take is not free and gvr was read no more often than the
// least recently read resources that would be evicted for it. c.mu is
// held.
func (c *Cache) admits(gvr schema.GroupVersionResource, d demand) error {
	if c.notCached[gvr] {
		return errOverBudget
	}
	if at, ok := c.crowded[gvr]; ok && at == c.unpins.Load() {
		return crowdedError{at}
	}
	if d == forWatch || c.opts.MemoryBudget <= 0 {
		return nil
	}
	free := c.opts.MemoryBudget - c.loading.Load()
	var evictable []*resource
	for _, r := range c.resources {
		select {
		case <-r.loaded:
		default:
			free -= max(c.reads.size(r.gvr)-r.reserved.Load(), 0) // a load under way, beyond what it reserved
			continue
		}
		if r.err != nil {
			continue
		}
		r.mu.RLock()
		free -= r.bytes
		if len(r.watchers) == 0 {
			evictable = append(evictable, r)
		}
		r.mu.RUnlock()
	}
	need := c.reads.size(gvr)
	if need <= free {
		return nil
	}
	// The victims are those evict would take, least recently read first.
	slices.SortFunc(evictable, func(a, b *resource) int { return cmp.Compare(a.used.Load(), b.used.Load()) })
	var victimReads int64
	for _, r := range evictable {
		if need <= free {
			break
		}
		r.mu.RLock()
		free += r.bytes
		r.mu.RUnlock()
		victimReads += c.reads.count(r.gvr)
	}
	if need <= free && c.reads.count(gvr) > readsOverVictims*victimReads {
		return nil
	}
	return errNotAdmitted
}
