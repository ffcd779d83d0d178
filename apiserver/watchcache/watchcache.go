// Package watchcache keeps, per resource, the current objects and a ring of
// recent changes in memory, fed by tailing the storage change log. It
// serves watches and resourceVersion=0 lists without touching the database.
//
// The tail follows "events after the last revision applied": in-process
// writes wake it at once (storage.Interface.Changed), writes by other
// processes sharing the database are seen at the next poll.
package watchcache

import (
	"context"
	"slices"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"
	"sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/panorama-io/panorama/storage"
)

// Defaults.
const (
	DefaultPollInterval = time.Second
	DefaultRingSize     = 10000
	tailBatch           = 1000
	initPage            = 5000
)

// Cache is the watch cache of every resource that was asked for.
type Cache struct {
	store    storage.Interface
	poll     time.Duration
	ringSize int

	mu        sync.Mutex
	cond      *sync.Cond // broadcast when revision moves
	revision  int64      // the last revision applied
	started   bool
	resources map[schema.GroupVersionResource]*resource
}

// New makes a cache over store; Run feeds it.
func New(store storage.Interface, poll time.Duration, ringSize int) *Cache {
	if poll <= 0 {
		poll = DefaultPollInterval
	}
	if ringSize <= 0 {
		ringSize = DefaultRingSize
	}
	c := &Cache{store: store, poll: poll, ringSize: ringSize, resources: map[schema.GroupVersionResource]*resource{}}
	c.cond = sync.NewCond(&c.mu)
	return c
}

// Run tails the log until ctx ends.
func (c *Cache) Run(ctx context.Context) error {
	logger := log.FromContext(ctx).WithName("watchcache")
	cur, _, err := c.store.Revision(ctx)
	if err != nil {
		return err
	}
	c.mu.Lock()
	c.revision, c.started = cur, true
	c.cond.Broadcast()
	c.mu.Unlock()
	ticker := time.NewTicker(c.poll)
	defer ticker.Stop()
	for {
		changed := c.store.Changed()
		n, err := c.step(ctx)
		switch {
		case ctx.Err() != nil:
			c.closeAll()
			return nil
		case storage.IsTooOld(err):
			// Compaction overtook the tail: what was missed is unknown, so
			// every resource starts again from a fresh list.
			logger.Info("change log compacted past the cache; resetting")
			c.reset(ctx)
			continue
		case err != nil:
			logger.Error(err, "reading the change log")
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
		case <-ticker.C:
		}
	}
}

// step applies the next batch of the log.
func (c *Cache) step(ctx context.Context) (int, error) {
	c.mu.Lock()
	since := c.revision
	c.mu.Unlock()
	events, err := c.store.Events(ctx, since, tailBatch)
	if err != nil || len(events) == 0 {
		return 0, err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	for i := range events {
		e := &events[i]
		if e.Revision <= c.revision {
			continue // a reset raced this read
		}
		if r := c.resources[e.Key.GVR]; r != nil {
			if err := r.apply(e); err != nil {
				log.FromContext(ctx).Error(err, "decoding a logged object", "revision", e.Revision)
			}
		}
		c.revision = e.Revision
	}
	c.cond.Broadcast()
	return len(events), nil
}

func (c *Cache) reset(ctx context.Context) {
	cur, _, err := c.store.Revision(ctx)
	if err != nil {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	for gvr, r := range c.resources {
		r.closeWatchers()
		delete(c.resources, gvr)
	}
	c.revision = cur
	c.cond.Broadcast()
}

func (c *Cache) closeAll() {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, r := range c.resources {
		r.closeWatchers()
	}
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

// resourceLocked returns the cache of gvr, filling it from storage at the
// current revision the first time. c.mu is held, so no change is applied
// between the list and the registration.
func (c *Cache) resourceLocked(ctx context.Context, gvr schema.GroupVersionResource) (*resource, error) {
	if r := c.resources[gvr]; r != nil {
		return r, nil
	}
	for !c.started {
		c.cond.Wait()
	}
	r := newResource(gvr, c.revision, c.ringSize)
	if c.revision > 0 {
		q := storage.ListQuery{GVR: gvr, Revision: c.revision, Limit: initPage}
		for {
			page, err := c.store.List(ctx, &q)
			if err != nil {
				return nil, err
			}
			for i := range page.Objects {
				o, err := storage.DecodeStored(page.Objects[i].Data)
				if err != nil {
					return nil, err
				}
				o.Cluster, o.GVR = page.Objects[i].Cluster, gvr
				r.objects[o.Key] = &o
			}
			if page.Continue == "" {
				break
			}
			q.Continue = page.Continue
		}
	}
	if c.revision > 0 {
		history, compacted, err := c.store.History(ctx, gvr, c.revision, c.ringSize)
		if err != nil {
			return nil, err
		}
		if err := r.remember(history, compacted); err != nil {
			return nil, err
		}
	}
	c.resources[gvr] = r
	return r, nil
}

// List returns the objects of q.GVR that q selects, in q's order, and the
// revision they are at. Owner filters are not supported here.
func (c *Cache) List(ctx context.Context, q *storage.ListQuery) ([]storage.Object, int64, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	r, err := c.resourceLocked(ctx, q.GVR)
	if err != nil {
		return nil, 0, err
	}
	var out []storage.Object
	for _, o := range r.objects {
		if q.Matches(o, nil) {
			out = append(out, *o)
		}
	}
	order := q.Order()
	slices.SortFunc(out, func(a, b storage.Object) int { return storage.Compare(order, &a, &b) })
	return out, c.revision, nil
}

// WatchOptions say where a watch starts.
type WatchOptions struct {
	// ResourceVersion: events after it are sent. 0 means "now, after the
	// current state as ADDED events".
	ResourceVersion int64
	// SendInitialEvents sends the current state as ADDED events first, then a
	// bookmark marking their end (the watch-list protocol).
	SendInitialEvents bool
	// Bookmarks are sent about every BookmarkInterval.
	Bookmarks        bool
	BookmarkInterval time.Duration
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

// Watch starts a watch of what q selects.
func (c *Cache) Watch(ctx context.Context, q *storage.ListQuery, opts WatchOptions) (*Watcher, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	r, err := c.resourceLocked(ctx, q.GVR)
	if err != nil {
		return nil, err
	}
	w := newWatcher(q, opts, c.ringSize)
	switch {
	case opts.SendInitialEvents || opts.ResourceVersion == 0:
		order := q.Order()
		for _, o := range r.objects {
			if q.Matches(o, nil) {
				w.initial = append(w.initial, Event{Type: watch.Added, Revision: o.Revision, Object: o})
			}
		}
		slices.SortFunc(w.initial, func(a, b Event) int { return storage.Compare(order, a.Object, b.Object) })
		if opts.SendInitialEvents && opts.Bookmarks {
			w.initial = append(w.initial, Event{Type: watch.Bookmark, Revision: c.revision, InitialEventsEnd: true})
		}
		w.lastSent = c.revision
	case opts.ResourceVersion < r.oldest:
		return nil, &storage.TooOldError{Requested: opts.ResourceVersion, Compacted: r.oldest}
	default:
		w.initial = r.since(opts.ResourceVersion, w)
		w.lastSent = max(opts.ResourceVersion, c.revision)
	}
	r.watchers[w] = struct{}{}
	w.stop = func() {
		c.mu.Lock()
		delete(r.watchers, w)
		c.mu.Unlock()
	}
	go w.run(ctx)
	return w, nil
}

// sendBookmarks queues a bookmark at the current revision for each watcher
// that is due one. It runs after a batch is applied, so every change up to
// that revision is already queued ahead of it.
func (c *Cache) sendBookmarks() {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, r := range c.resources {
		for w := range r.watchers {
			if w.bookmarkDue() {
				w.push(Event{Type: watch.Bookmark, Revision: c.revision})
			}
		}
	}
}
