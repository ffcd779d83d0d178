// Package watchcache keeps, per resource, the current objects and a ring of
// recent changes in memory, fed by tailing the storage change log. It
// serves watches, lists and their pages (page.go) and counts (count.go)
// without touching the database.
//
// The tail follows "events after the last revision applied": in-process
// writes wake it at once (storage.Interface.Changed), and writes by other
// processes sharing the database as soon as the store learns of them
// (storage.Log.Follow: PostgreSQL notifies, MySQL/MariaDB is probed every
// Options.ProbeInterval), or a read waits for a revision the cache has not
// applied (it nudges the tail); the poll is the safety net behind them.
//
// Locking: no lock is held during database reads that a list or watch waits
// on, nor while a list is filtered and sorted or a watch's initial events
// are sent; a page holds its resource's read lock while it walks the key
// order, for about as many objects as it returns. Cache.mu guards only the
// revision and the index of resources, each resource has its own lock, and Cache.tail serializes the writers of
// the cached state (the tail, a resource being published, a reset). A
// resource is loaded from a snapshot without any lock, caught up from the
// log, and only then published to the tail; one big resource loading or
// being listed stalls neither the watches nor the lists of the others.
//
// Memory: what the resources hold is estimated as they change and kept
// within Options.MemoryBudget by evicting whole resources, least recently
// read first, never one that is watched; a read loads a resource only if
// it was read clearly more often than what it evicts (admission.go); a
// resource that alone exceeds the budget is not cached. The reads of
// what is not cached are the store's, its watches the log's (budget.go,
// logwatch.go).
package watchcache

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-logr/logr"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/klog/v2"

	"github.com/panorama-io/panorama/storage"
)

const (
	tailBatch = 1000
	// initPage is the most objects a load reads a page; a budget bounds
	// a page further (loadPage).
	initPage = 5000
)

// Cache is the watch cache of every resource that was asked for.
type Cache struct {
	store Store
	opts  Options

	// tail serializes the writers of the cached state: applying the log,
	// publishing a loaded resource, resets. Lists and watches never take it.
	tail sync.Mutex
	// tailing are the published resources, which the tail keeps current.
	// Guarded by tail.
	tailing map[schema.GroupVersionResource]*resource
	// nudge asks the tail to read the log now: a read is waiting for a
	// revision the store has and the cache has not applied yet, which
	// the probe or the poll would find only later.
	nudge chan struct{}

	// mu guards what follows; it is held only briefly, never during I/O.
	// revision and started change under both tail and mu.
	mu       sync.Mutex
	cond     *sync.Cond // broadcast when revision moves
	revision int64      // the last revision applied
	// compacted is the store's compacted revision as the tail last read
	// it, at readCompacted: the pages at a revision the cache has applied
	// check their revision against it rather than read the store's
	// (PageApplied).
	compacted     int64
	readCompacted time.Time
	started       bool
	ctx           context.Context // Run's, for loads shared by several requests
	resources     map[schema.GroupVersionResource]*resource
	// notCached are the resources that alone exceeded the memory budget
	// when loaded: the store answers them until a reset.
	notCached map[schema.GroupVersionResource]bool
	// feeds read the log for the watches of resources not cached.
	feeds map[schema.GroupVersionResource]*logFeed
	// crowded are the resources that fitted the budget alone but not
	// beside the resources watches pin, by the count of unpins then: the
	// store answers them until a watch unpins a resource (or a reset), so
	// that reads and watches of them do not load what is evicted at once.
	crowded map[schema.GroupVersionResource]int64
	// fields are the indexed fields objects are described with.
	fields  *storage.FieldSet
	watches int
	perUser map[string]int

	// secretsRewritten is the store's count of rewrites of logged Secrets
	// (storage.Interface.SecretsRewritten) that the cached Secrets
	// reflect. Run's alone.
	secretsRewritten int64

	// clock orders the resources by use (touch).
	clock atomic.Int64
	// unpins counts the resources whose last watch ended: each may make
	// room for a crowded one.
	unpins atomic.Int64
	// reads counts the reads of each resource, for admits.
	reads *readCounts
	// loading is what the loads under way reserved (reserve).
	loading atomic.Int64
}

// Store is what a cache reads: the objects, which it loads, and the
// change log, which it tails. A cache never writes.
type Store interface {
	storage.Reader
	storage.Log
}

// New makes a cache over store; Run feeds it.
func New(store Store, opts Options) *Cache {
	if opts.PollInterval <= 0 {
		opts.PollInterval = DefaultPollInterval
	}
	if opts.ProbeInterval <= 0 {
		opts.ProbeInterval = DefaultProbeInterval
	}
	if opts.RingSize <= 0 {
		opts.RingSize = DefaultRingSize
	}
	if opts.WatchBuffer <= 0 {
		opts.WatchBuffer = DefaultWatchBuffer
	}
	if opts.FreshnessTimeout <= 0 {
		opts.FreshnessTimeout = DefaultFreshnessTimeout
	}
	c := &Cache{
		store: store, opts: opts, tailing: map[schema.GroupVersionResource]*resource{}, nudge: make(chan struct{}, 1),
		resources: map[schema.GroupVersionResource]*resource{}, notCached: map[schema.GroupVersionResource]bool{},
		crowded: map[schema.GroupVersionResource]int64{}, feeds: map[schema.GroupVersionResource]*logFeed{},
		perUser: map[string]int{}, reads: newReadCounts(),
	}
	budgetBytes.Set(float64(opts.MemoryBudget))
	c.cond = sync.NewCond(&c.mu)
	return c
}

// Run tails the log until ctx ends.
func (c *Cache) Run(ctx context.Context) error {
	logger := klog.FromContext(ctx).WithName("watchcache")
	cur, compacted, err := c.store.Revision(ctx)
	if err != nil {
		return err
	}
	fields, err := c.store.Fields(ctx)
	if err != nil {
		return err
	}
	if c.secretsRewritten, err = c.store.SecretsRewritten(ctx); err != nil {
		return err
	}
	c.sawCompacted(compacted)
	c.tail.Lock()
	c.mu.Lock()
	c.revision, c.started, c.ctx, c.fields = cur, true, ctx, fields
	c.cond.Broadcast()
	c.mu.Unlock()
	c.tail.Unlock()
	wake := c.follow(ctx, cur)
	ticker := time.NewTicker(c.opts.PollInterval)
	defer ticker.Stop()
	for {
		changed := c.store.Changed()
		c.followStore(ctx, logger)
		n, err := c.step(ctx)
		switch {
		case ctx.Err() != nil:
			c.closeAll()
			return nil
		case storage.IsTooOld(err):
			// Compaction overtook the tail: what was missed is unknown, so
			// every resource starts again from a fresh list.
			logger.Info("Change log compacted past the cache, resetting")
			c.reset(ctx)
			continue
		case err != nil:
			logger.Error(err, "Reading the change log failed")
		}
		c.sendBookmarks()
		if n == tailBatch {
			continue
		}
		select {
		case <-ctx.Done():
			c.closeAll()
			return nil
		case <-changed:
		case <-wake:
		case <-c.nudge:
		case <-ticker.C:
		}
	}
}

// followStore catches up with what the store changed besides appending
// to its log. Objects are described with the fields every stored row is
// indexed with: when those change, the resources they describe otherwise
// are loaded again. States of Secrets rewritten in place (their contents
// dropped) are gone from the store's log, and so from the cache: its
// Secrets are loaded again, and their watches end, so that their clients
// resume from the log as it now is, or relist.
func (c *Cache) followStore(ctx context.Context, logger logr.Logger) {
	if fields, err := c.store.Fields(ctx); err == nil && fields.Version != c.fieldsVersion() {
		logger.Info("Indexed fields changed, reloading the resources they describe otherwise", "version", fields.Version)
		c.switchFields(fields)
	}
	if n, err := c.store.SecretsRewritten(ctx); err == nil && n != c.secretsRewritten {
		logger.Info("Logged states of Secrets were rewritten, reloading them")
		c.secretsRewritten = n
		c.tail.Lock()
		c.dropWhere(func(r *resource) bool { return r.gvr.GroupResource() == storage.SecretsResource.GroupResource() })
		c.tail.Unlock()
	}
}

// switchFields has objects described with fields from now on. The
// resources whose objects fields describe as before keep them, their
// watches and rings, and switch; the others are dropped.
func (c *Cache) switchFields(fields *storage.FieldSet) {
	c.tail.Lock()
	defer c.tail.Unlock()
	c.mu.Lock()
	c.fields = fields
	c.mu.Unlock()
	c.dropWhere(func(r *resource) bool { return !r.fields.Load().ExtractsAlike(fields, r.gvr.GroupResource()) })
	// Selectors are checked against the new set, which names the fields
	// of other resources too.
	c.mu.Lock()
	for _, r := range c.resources {
		r.fields.Store(fields)
	}
	c.mu.Unlock()
}

// step applies the next batch of the log to the published resources.
func (c *Cache) step(ctx context.Context) (int, error) {
	c.tail.Lock()
	defer c.tail.Unlock()
	events, compacted, err := c.store.Changes(ctx, c.revision, tailBatch)
	if err != nil {
		return 0, err
	}
	c.sawCompacted(compacted)
	if len(events) == 0 {
		return 0, nil
	}
	for i := range events {
		e := &events[i]
		if r := c.tailing[e.Key.GVR]; r != nil {
			if err := r.applyLocking(e); err != nil {
				klog.FromContext(ctx).Error(err, "Decoding a logged object failed", "revision", e.Revision)
			}
		}
	}
	last := events[len(events)-1].Revision
	for _, r := range c.tailing {
		r.mu.Lock()
		r.revision = last // every change of r up to last is applied
		r.mu.Unlock()
	}
	c.mu.Lock()
	c.revision = last
	c.cond.Broadcast()
	c.mu.Unlock()
	c.evict()
	return len(events), nil
}

// reset drops every resource, whose watches end (their clients resume or
// relist); the next request of each loads it again at revision cur.
func (c *Cache) reset(ctx context.Context) {
	cur, compacted, err := c.store.Revision(ctx)
	if err != nil {
		return
	}
	c.sawCompacted(compacted)
	c.drop(cur)
}

// sawCompacted notes the store's compacted revision, read by the tail.
func (c *Cache) sawCompacted(rev int64) {
	c.mu.Lock()
	c.compacted, c.readCompacted = max(c.compacted, rev), time.Now()
	c.mu.Unlock()
}

// closeAll ends every watch as the cache stops.
func (c *Cache) closeAll() { c.drop(c.Revision()) }

// drop drops every resource and has the tail go on from revision.
func (c *Cache) drop(revision int64) {
	c.tail.Lock()
	defer c.tail.Unlock()
	c.mu.Lock()
	c.revision = revision
	c.cond.Broadcast()
	c.mu.Unlock()
	c.dropWhere(func(*resource) bool { return true })
	c.mu.Lock()
	clear(c.notCached) // they may have shrunk: the next read tries again
	clear(c.crowded)
	c.mu.Unlock()
	heldBytes.Set(0)
}

// dropWhere drops the resources that match, loaded or loading: the
// watches of those loaded end (their clients resume or relist), and the
// next request of each loads it again. Loads under way see their
// resource gone from the index when they publish, and start again. c.tail
// is held.
func (c *Cache) dropWhere(match func(*resource) bool) {
	var dropped []*resource
	c.mu.Lock()
	for gvr, r := range c.resources {
		if match(r) {
			delete(c.resources, gvr)
			dropped = append(dropped, r)
		}
	}
	c.mu.Unlock()
	for _, r := range dropped {
		if c.tailing[r.gvr] == r {
			delete(c.tailing, r.gvr)
			r.close()
		}
	}
}

func (c *Cache) fieldsVersion() int64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.fields.Version
}

// Revision is the last revision the cache has applied.
func (c *Cache) Revision() int64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.revision
}

// WaitForRevision waits until the cache has applied rev, or ctx ends.
func (c *Cache) WaitForRevision(ctx context.Context, rev int64) error {
	stop := context.AfterFunc(ctx, func() {
		c.mu.Lock()
		c.cond.Broadcast()
		c.mu.Unlock()
	})
	defer stop()
	c.mu.Lock()
	defer c.mu.Unlock()
	for !c.started || c.revision < rev {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		c.cond.Wait()
	}
	return nil
}

// waitFresh waits, for at most the freshness timeout, until the cache has
// applied rev; then it is a TooLargeError, as kube-apiserver's watch cache
// answers a resourceVersion it has not seen.
func (c *Cache) waitFresh(ctx context.Context, rev int64) error {
	if c.Revision() < rev {
		select {
		case c.nudge <- struct{}{}:
		default: // the tail is nudged already
		}
	}
	waitCtx, cancel := context.WithTimeout(ctx, c.opts.FreshnessTimeout)
	defer cancel()
	err := c.WaitForRevision(waitCtx, rev)
	if err != nil && ctx.Err() == nil {
		return &storage.TooLargeError{Requested: rev, Current: c.Revision()}
	}
	return err
}

// errReloading says a resource's load was overtaken by a reset.
var errReloading = errors.New("the watch cache was reset while loading")

// resource returns the cache of gvr for a request of demand d, loading it
// the first time if admitted. Requests for it wait for the load; requests
// for other resources do not.
func (c *Cache) resource(ctx context.Context, gvr schema.GroupVersionResource, d demand) (*resource, error) {
	if err := c.WaitForRevision(ctx, 0); err != nil {
		return nil, err
	}
	for {
		c.mu.Lock()
		r := c.resources[gvr]
		if r == nil {
			var err error
			if r, err = c.startLoad(gvr, d); err != nil {
				c.mu.Unlock()
				return nil, err
			}
		}
		c.mu.Unlock()
		select {
		case <-r.loaded:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
		if !errors.Is(r.err, errReloading) {
			if r.err == nil {
				c.touch(r)
			}
			return r, r.err
		}
	}
}

// startLoad adds the cache of gvr, which the cache does not hold, for a
// request of demand d, and loads it in the background, if admitted.
// c.mu is held.
func (c *Cache) startLoad(gvr schema.GroupVersionResource, d demand) (*resource, error) {
	if err := c.admits(gvr, d); err != nil {
		return nil, err
	}
	r := newResource(gvr, c.opts.RingSize, c.fields)
	c.resources[gvr] = r
	go c.load(c.ctx, r, c.revision)
	return r, nil
}

// load fills r with the state at revision at, catches it up with the log
// and publishes it to the tail. Only the last catch-up, a few changes at
// most, holds the tail.
func (c *Cache) load(ctx context.Context, r *resource, at int64) {
	err := c.fill(ctx, r, at)
	if err == nil {
		at, err = c.catchUp(ctx, r, at, c.Revision())
	}
	if err == nil {
		err = c.publish(ctx, r, at)
	}
	c.unreserve(r) // a stopped load's (publish counts a published one's as held)
	switch {
	case err == nil:
	case storage.IsTooOld(err) || errors.Is(err, errReloading):
		r.err = errReloading // a reset or compaction overtook the load: start again
	case errors.Is(err, errNoRoom):
		r.err = err
		c.reads.sized(r.gvr, r.bytes) // loaded again only once there is room
	case errors.Is(err, errOverBudget):
		r.err = err
		var crowded crowdedError
		c.mu.Lock()
		if errors.As(err, &crowded) {
			c.crowded[r.gvr] = crowded.unpins
		} else {
			c.notCached[r.gvr] = true
		}
		c.mu.Unlock()
		refused(r.gvr)
	default:
		r.err = fmt.Errorf("loading %s into the watch cache: %w", r.gvr, err)
	}
	if r.err != nil {
		c.mu.Lock()
		if c.resources[r.gvr] == r {
			delete(c.resources, r.gvr) // the next request loads again
		}
		c.mu.Unlock()
	}
	close(r.loaded)
}

// fill reads the state of r's resource at revision at, and its recent log.
// r is not published yet: no lock is needed.
func (c *Cache) fill(ctx context.Context, r *resource, at int64) error {
	r.revision, r.oldest = at, at
	if at == 0 {
		return nil // nothing was ever written
	}
	q := storage.ListQuery{GVR: r.gvr, Revision: at, Limit: int64(c.loadPage(0, 0))}
	read := 0
	for {
		page, err := c.store.List(ctx, &q)
		if err != nil {
			return err
		}
		for i := range page.Objects {
			o, err := r.decode(page.Objects[i].Data, page.Objects[i].Key, page.Objects[i].Revision)
			if err != nil {
				return err
			}
			r.hold(o)
		}
		read += len(page.Objects)
		if err := c.reserve(r); err != nil {
			return err
		}
		if page.Continue == "" {
			break
		}
		q.Continue, q.Limit = page.Continue, int64(c.loadPage(r.bytes, read))
	}
	if err := c.remember(ctx, r, at); err != nil {
		return err
	}
	return c.reserve(r)
}

// catchUp applies to the unpublished r the changes of its resource after
// from up to and including to.
func (c *Cache) catchUp(ctx context.Context, r *resource, from, to int64) (int64, error) {
read:
	for from < to {
		events, _, err := c.store.Changes(ctx, from, tailBatch)
		if err != nil {
			return from, err
		}
		if len(events) == 0 {
			break
		}
		for i := range events {
			e := &events[i]
			if e.Revision > to {
				break read
			}
			if e.Key.GVR == r.gvr {
				if err := r.apply(e); err != nil {
					return from, err
				}
			}
			from = e.Revision
		}
	}
	r.revision = to
	return to, nil
}

// publish catches r up to the tail's revision and hands it to the tail.
// Holding the tail, nothing is applied between the two.
func (c *Cache) publish(ctx context.Context, r *resource, at int64) error {
	c.tail.Lock()
	defer c.tail.Unlock()
	if _, err := c.catchUp(ctx, r, at, c.revision); err != nil {
		return err
	}
	c.mu.Lock()
	current := c.resources[r.gvr] == r
	c.mu.Unlock()
	if !current {
		return errReloading
	}
	c.tailing[r.gvr] = r
	c.unreserve(r)
	c.reads.sized(r.gvr, r.bytes)
	c.touch(r)
	unpins := c.unpins.Load()
	c.evict()
	r.mu.RLock()
	evicted := r.closed
	r.mu.RUnlock()
	if evicted {
		// Evicted at once, the least recently used being r alone beside
		// what watches pin: loading it again would only be evicted again.
		return crowdedError{unpins}
	}
	return nil
}

// List returns the objects of q.GVR that q selects, in q's order, and the
// revision they are at. Owner filters are not supported here. The whole
// selection is returned, as kube-apiserver 1.37's watch cache does for
// resourceVersion=0 (its computeListLimit ignores limit when
// resourceVersion is "0"; limit and continue are honored only for the
// consistent and exact reads it serves from snapshots).
func (c *Cache) List(ctx context.Context, q *storage.ListQuery) ([]storage.Object, int64, error) {
	r, err := c.resource(ctx, q.GVR, forRead)
	if err != nil {
		return nil, 0, err
	}
	// A field the store indexes now but the cache has not described its
	// objects with yet is refused rather than matched against nothing.
	if err := q.ValidateFields(r.fields.Load()); err != nil {
		return nil, 0, err
	}
	r.mu.RLock()
	candidates, residual := r.selected(q)
	rev := r.revision
	r.mu.RUnlock()
	// Filtering, copying and sorting happen outside any lock: the cached
	// objects are never modified, only replaced.
	var out []storage.Object
	for _, o := range candidates {
		if !residual || q.Matches(o, nil) {
			out = append(out, *o)
		}
	}
	order := q.Order()
	slices.SortFunc(out, func(a, b storage.Object) int { return storage.Compare(order, &a, &b) })
	return out, rev, nil
}

// WatchOptions say where a watch starts.
type WatchOptions struct {
	// ResourceVersion: events after it are sent. 0 means "now, after the
	// current state as ADDED events". A revision the cache has not reached
	// is waited for, up to Options.FreshnessTimeout.
	ResourceVersion int64
	// SendInitialEvents sends the current state as ADDED events first, then a
	// bookmark marking their end (the watch-list protocol).
	SendInitialEvents bool
	// Bookmarks are sent about every BookmarkInterval.
	Bookmarks        bool
	BookmarkInterval time.Duration
	// User is who asked, for the per-user limit.
	User string
}

// Event is one watch event.
type Event struct {
	Type     watch.EventType
	Revision int64
	// Object is the served JSON; nil for a bookmark.
	Object *storage.Object
	// InitialEventsEnd marks the bookmark that ends the initial events.
	InitialEventsEnd bool
}

// TooManyWatchesError refuses a watch beyond the limits; the API answers
// 429 Too Many Requests.
type TooManyWatchesError struct {
	// User is set when the user's own limit was reached.
	User  string
	Limit int
}

func (e *TooManyWatchesError) Error() string {
	if e.User != "" {
		return fmt.Sprintf("user %q has %d watches open, the most allowed", e.User, e.Limit)
	}
	return fmt.Sprintf("the server has %d watches open, the most allowed", e.Limit)
}

// admit counts a new watch of user against the limits; release uncounts it.
func (c *Cache) admit(user string) (release func(), err error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if limit := c.opts.MaxWatches; limit > 0 && c.watches >= limit {
		return nil, &TooManyWatchesError{Limit: limit}
	}
	if limit := c.opts.MaxWatchesPerUser; limit > 0 && c.perUser[user] >= limit {
		return nil, &TooManyWatchesError{User: user, Limit: limit}
	}
	c.watches++
	c.perUser[user]++
	var once sync.Once
	return func() {
		once.Do(func() {
			c.mu.Lock()
			defer c.mu.Unlock()
			c.watches--
			if c.perUser[user]--; c.perUser[user] == 0 {
				delete(c.perUser, user)
			}
		})
	}, nil
}

// Watch starts a watch of what q selects.
func (c *Cache) Watch(ctx context.Context, q *storage.ListQuery, opts WatchOptions) (*Watcher, error) {
	release, err := c.admit(opts.User)
	if err != nil {
		return nil, err
	}
	w, err := c.watch(ctx, q, opts, release)
	if err != nil {
		release()
	}
	return w, err
}

func (c *Cache) watch(ctx context.Context, q *storage.ListQuery, opts WatchOptions, release func()) (*Watcher, error) {
	if opts.ResourceVersion > 0 {
		if err := c.waitFresh(ctx, opts.ResourceVersion); err != nil {
			return nil, err
		}
	}
	w := newWatcher(q, opts, c.opts.WatchBuffer)
	// Under r's lock only what must be atomic with the registration:
	// taking the state or the changes to replay. Filtering and sorting
	// them happen after, while new changes queue up behind.
	var state []*storage.Object
	var residual bool // whether state is still to be matched against q
	var replay []change
	fromState := opts.SendInitialEvents || opts.ResourceVersion == 0
	var r *resource
	for {
		var err error
		if r, err = c.resource(ctx, q.GVR, forWatch); IsNotCached(err) {
			return c.watchLog(ctx, q, opts, release)
		} else if err != nil {
			return nil, err
		}
		r.mu.Lock()
		if !r.closed {
			break
		}
		r.mu.Unlock() // dropped by a reset since: load it again
	}
	if err := q.ValidateFields(r.fields.Load()); err != nil { // as in List
		r.mu.Unlock()
		return nil, err
	}
	if !fromState && opts.ResourceVersion < r.oldest {
		r.mu.Unlock()
		return nil, &storage.TooOldError{Requested: opts.ResourceVersion, Compacted: r.oldest}
	}
	if fromState {
		state, residual = r.selected(q)
	} else {
		replay = r.since(opts.ResourceVersion)
	}
	rev := r.revision
	w.r, w.lastSent = r, max(opts.ResourceVersion, rev)
	r.watchers[w] = struct{}{}
	r.mu.Unlock()
	w.stop = func() {
		r.mu.Lock()
		delete(r.watchers, w)
		if len(r.watchers) == 0 {
			c.unpins.Add(1)
		}
		r.mu.Unlock()
		release()
	}

	for _, o := range state {
		if !residual || q.Matches(o, nil) {
			w.initialObjects = append(w.initialObjects, o)
		}
	}
	order := q.Order()
	slices.SortFunc(w.initialObjects, func(a, b *storage.Object) int { return storage.Compare(order, a, b) })
	for i := range replay {
		if ev, ok := w.filter(&replay[i]); ok {
			w.initial = append(w.initial, ev)
		}
	}
	if opts.SendInitialEvents && opts.Bookmarks {
		w.initial = append(w.initial, Event{Type: watch.Bookmark, Revision: rev, InitialEventsEnd: true})
	}
	go w.run(ctx)
	return w, nil
}

// sendBookmarks queues a bookmark at each resource's revision for each of
// its watchers that is due one. Every change up to that revision is
// already queued ahead of it.
func (c *Cache) sendBookmarks() {
	c.tail.Lock()
	defer c.tail.Unlock()
	for _, r := range c.tailing {
		r.mu.Lock()
		for w := range r.watchers {
			if w.bookmarkDue() {
				w.push(Event{Type: watch.Bookmark, Revision: r.revision})
			}
		}
		r.mu.Unlock()
	}
}
