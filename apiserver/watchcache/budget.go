package watchcache

// The memory budget (Options.MemoryBudget) bounds what the cache holds.
//
// What a resource holds is estimated as it changes (resource.bytes): each
// object costs its JSON, its description (labels and indexed fields) and
// a fixed share of the index's sets and maps; each entry of the ring a
// fixed overhead and its pre-image, plus the object it names while that
// object is no longer current (the ring alone keeps it then). The
// estimate is checked against the heap by TestHeldBytesEstimate.
//
// Past the budget, whole resources are evicted, least recently read
// first: a resource is what a load reads and the tail keeps current, and
// clients list a resource of every cluster at once, so a resource is the
// unit that is used, or not, as a whole. A resource with open watches is
// pinned, counted against the budget but never evicted: its watches read
// the ring (Watcher.catchUp), which would otherwise have to be rebuilt
// from the log; the others are evicted first. A resource that fits the
// budget alone but not beside the pinned ones would be evicted as soon as
// loaded: it is not cached until a watch ends (Cache.crowded), rather than
// loaded again for every read and watch. A resource that alone exceeds the
// budget is not cached at all: its load stops as soon as it does. A load
// counts what it has read against the budget as it reads it, page by page
// (Cache.reserve, loadPage), so that loads under way cannot overshoot it
// together, nor a load beside what it evicts. A read loads a resource
// only if that is worth what it evicts (admission.go). What is
// not cached has its reads served by the store (Reads) and its watches by
// the log (logwatch.go). What the cache does not hold, the store serves with the
// same semantics: the store's continue tokens are the cache's.

import (
	"errors"
	"math"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/component-base/metrics/legacyregistry"

	"github.com/panorama-io/panorama/internal/containermemory"
	"github.com/panorama-io/panorama/storage"
)

// Fixed costs of the estimate, beyond the bytes of strings and JSON: an
// object's struct, its slot, key-order and key-map entries and its share
// of the postings; a label or field entry's map slot and posting, and a
// word's; a ring entry and its pre-image's struct. TestHeldBytesEstimate
// keeps them honest against the heap.
const (
	objectOverhead = 600
	entryOverhead  = 80
	changeOverhead = 200
)

// objectBytes estimates what o costs the cache while it holds it.
func objectBytes(o *storage.Object) int64 {
	n := objectOverhead + len(o.Data) + len(o.Namespace) + len(o.Name) + len(o.UID) + len(o.MemberResourceVersion)
	for k, v := range o.Labels {
		n += entryOverhead + len(k) + len(v)
	}
	for k, vs := range o.Fields {
		n += entryOverhead + len(k)
		for _, v := range vs {
			n += len(v)
		}
	}
	for _, w := range o.Keywords { // the word, and its entries in the object and the postings
		n += entryOverhead + len(w)
	}
	return int64(n)
}

// changeBytes estimates what a ring entry costs beyond its object.
func changeBytes(ch *change) int64 {
	if ch.prev == nil {
		return changeOverhead
	}
	return changeOverhead + int64(len(ch.prev.deflated))
}

// errOverBudget stops the load of a resource that alone exceeds the
// budget: it is not cached.
var errOverBudget = errors.New("the resource alone exceeds the watch cache's memory budget")

// crowdedError stops the publication of a resource that fits the budget
// alone but not beside the resources watches pin: it is not cached until
// a watch unpins one (Cache.crowded), since unpins was counted.
type crowdedError struct{ unpins int64 }

func (crowdedError) Error() string {
	return "the resource does not fit the watch cache's memory budget beside the resources watches hold"
}

func (crowdedError) Is(target error) bool { return target == errOverBudget }

// IsNotCached reports whether err says the cache does not hold a resource
// and does not load it for the request: the store answers its reads.
func IsNotCached(err error) bool { return errors.Is(err, errOverBudget) }

// fits reports whether a resource of the given estimate may be cached.
func (c *Cache) fits(bytes int64) bool {
	return c.opts.MemoryBudget <= 0 || bytes <= c.opts.MemoryBudget
}

// evict drops the least recently used unwatched resources until what the
// published resources and the loads under way hold is within the budget.
// It returns by how much what it does not evict, the watched resources
// and the loads, still exceeds the budget. c.tail is held.
func (c *Cache) evict() (over int64) {
	held := map[*resource]int64{}
	var total int64
	for _, r := range c.tailing {
		r.mu.RLock()
		held[r] = r.bytes
		r.mu.RUnlock()
		total += held[r]
	}
	heldBytes.Set(float64(total))
	total += c.loading.Load()
	for c.opts.MemoryBudget > 0 && total > c.opts.MemoryBudget {
		var lru *resource
		for r := range held {
			if r.watched() {
				continue // pinned
			}
			if lru == nil || r.used.Load() < lru.used.Load() {
				lru = r
			}
		}
		if lru == nil {
			break // what is left is watched, or loading
		}
		if !lru.closeUnwatched() {
			delete(held, lru) // a watch started since: pinned
			continue
		}
		c.dropWhere(func(r *resource) bool { return r == lru })
		c.reads.sized(lru.gvr, held[lru])
		total -= held[lru]
		delete(held, lru)
		evictions.WithLabelValues(lru.gvr.Group, lru.gvr.Resource).Inc()
		heldBytes.Set(float64(total - c.loading.Load()))
	}
	if c.opts.MemoryBudget <= 0 {
		return 0
	}
	return total - c.opts.MemoryBudget
}

// reserve counts what the load of r holds so far against the budget, as
// it grows, so that loads under way cannot take the cache past the budget
// together before they are published: it evicts for r, and stops r's
// load where that is not enough. Beside what watches pin, r is crowded
// (see crowdedError); beside other loads, the load that reserves last
// stops, and a later read decides again (admits).
func (c *Cache) reserve(r *resource) error {
	if !c.fits(r.bytes) {
		return errOverBudget
	}
	if c.opts.MemoryBudget <= 0 {
		return nil
	}
	c.tail.Lock()
	defer c.tail.Unlock()
	c.loading.Add(r.bytes - r.reserved.Swap(r.bytes))
	over := c.evict()
	switch {
	case over <= 0:
		return nil
	case over > c.loading.Load()-r.bytes:
		return crowdedError{c.unpins.Load()}
	default:
		return errNoRoom
	}
}

// A load holds what a page of its resource takes, the store's answer and
// the objects decoded from it, before it reserves them. Pages of initPage
// objects and a log read at once would have a load hold a whole resource
// of fewer objects, and then its log, beside what it is to evict: past
// the budget by as much (BenchmarkBudgetedCache's peaks). Under a budget,
// a load's pages, of objects (fill) and of the log (remember), are sized
// to hold about a loadShare-th of it each, going by what those read so
// far took, between minLoadPage items and initPage: smaller pages would
// cost a load more queries for little.
const (
	loadShare   = 32
	minLoadPage = 100
)

// loadPage is how many items the next page of a load reads, after it
// read n items which took bytes.
func (c *Cache) loadPage(bytes int64, n int) int {
	if c.opts.MemoryBudget <= 0 {
		return initPage
	}
	if n == 0 {
		return minLoadPage // what the items take is not known yet
	}
	each := max(bytes/int64(n), 1)
	return int(min(max(c.opts.MemoryBudget/loadShare/each, minLoadPage), initPage))
}

// unreserve uncounts what r's load reserved: it was published, which
// counts it from then on, or it stopped.
func (c *Cache) unreserve(r *resource) { c.loading.Add(-r.reserved.Swap(0)) }

// errNoRoom stops a load that the loads under way leave no room for.
var errNoRoom = notCachedError("the watch cache's memory budget is taken by other loads under way")

// touch marks r as used now, for evict's order.
func (c *Cache) touch(r *resource) { r.used.Store(c.clock.Add(1)) }

// DefaultMemoryBudget is the budget of the cache of an API server alone
// in a container whose cgroup file system is at root: the one whose
// GoMemoryLimit is nine tenths of the container's limit, so that Go's soft
// limit is the same whichever of the two the operator sets; at least a
// quarter of the limit, in a container too small for the server's own
// memory beside it; 0 (unlimited) when it has no limit. Without a limit
// the operator chose none, and there is no figure to derive one from: the
// cache holds what is read, as it did before budgets.
func DefaultMemoryBudget(root string) int64 {
	limit := containermemory.Limit(root)
	return max(sharedBudget(limit), budgetWithin(containermemory.SoftLimit(limit)))
}

// SharedMemoryBudget is the default budget of a cache that shares its
// container with the controller manager (panorama serve): a quarter of
// the container's memory limit, the rest left to the controller's syncs,
// the server and the collector, whose soft limit the budget then does not
// set (it would not describe the controller's memory).
func SharedMemoryBudget(root string) int64 { return sharedBudget(containermemory.Limit(root)) }

// sharedBudget is SharedMemoryBudget under a container memory limit.
func sharedBudget(limit int64) int64 { return limit / 4 }

// serverMemory is what an API server holds beside its watch cache: its
// clients, informers, requests in flight and the runtime.
const serverMemory = 300 << 20

// heapTenths is how many tenths of the budget Go's soft limit lets the
// heap hold (GoMemoryLimit): issue 35's bound, 1.3 × the budget.
const heapTenths = 13

// budgetWithin is GoMemoryLimit's inverse: the budget whose soft limit is
// limit, to within GoMemoryLimit's rounding to tens of bytes.
func budgetWithin(limit int64) int64 { return (limit - serverMemory) / heapTenths * 10 }

// GoMemoryLimit is Go's soft memory limit for an API server whose cache
// has budget (0 when unlimited: none). The cache's estimate of its heap
// is mostly above the heap (TestHeldBytesEstimate), and the live heap
// peaked under the budget at scale; with the collector free to let the
// heap grow to twice what is live, resident memory grew to about twice
// the budget, while under this limit it stays within issue 35's bound,
// 1.3 × the budget + serverMemory, at no cost in the latency of reads
// (BenchmarkBudgetedCache, operations.md "Memory of the API server").
// Past it (watched resources held beyond the budget), Go collects more
// often and lets the heap grow on.
func GoMemoryLimit(budget int64) int64 {
	if budget <= 0 {
		return 0
	}
	if budget > budgetWithin(math.MaxInt64) {
		return math.MaxInt64 // no bound in reach
	}
	return budget/10*heapTenths + serverMemory
}

// The cache's metrics, measured here.
var (
	heldBytes = prometheus.NewGauge(prometheus.GaugeOpts{
		Name: "panorama_apiserver_watch_cache_bytes",
		Help: "Estimated heap the watch cache's resources hold: objects, indexes and rings of recent changes.",
	})
	budgetBytes = prometheus.NewGauge(prometheus.GaugeOpts{
		Name: "panorama_apiserver_watch_cache_budget_bytes",
		Help: "The watch cache's memory budget (--watch-cache-memory-budget); 0 when unlimited.",
	})
	evictions = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "panorama_apiserver_watch_cache_evictions_total",
		Help: "Resources evicted from the watch cache to stay within its memory budget, or not cached because one alone exceeds it, by group and resource.",
	}, []string{"group", "resource"})
)

func init() {
	legacyregistry.Registerer().MustRegister(heldBytes, budgetBytes, evictions)
}

// refused counts a resource not cached because it alone exceeds the
// budget.
func refused(gvr schema.GroupVersionResource) {
	evictions.WithLabelValues(gvr.Group, gvr.Resource).Inc()
}
