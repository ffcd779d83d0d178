package watchcache

import (
	"context"
	"slices"
	"time"

	"k8s.io/apimachinery/pkg/watch"

	"github.com/panorama-io/panorama/storage"
)

// logPage is how many objects a watch read from the log lists at a time.
const logPage = 500

// watchLog serves a watch of a resource the cache does not hold (it alone
// exceeds the memory budget) from the store and its change log, with the
// semantics of a cached watch: the initial state from a list, then every
// change after its revision, an object entering or leaving the selection
// as ADDED or DELETED. The log holds no pre-images, so the watch keeps
// the keys it selects, and no objects: what it costs grows with its
// selection's keys, not with its objects. Its changes are read behind the
// tail, which reads the same log, once for all the watches of the
// resource (logfeed.go).
func (c *Cache) watchLog(ctx context.Context, q *storage.ListQuery, opts WatchOptions, release func()) (*Watcher, error) {
	w := newWatcher(q, opts, c.opts.WatchBuffer)
	w.stop = release
	selected := map[storage.Key]bool{}
	from := opts.ResourceVersion
	fromState := opts.SendInitialEvents || from == 0
	if fromState {
		from = c.Revision() // the state as of now, as the cache's
	} else {
		// The keys selected at the watch's revision, so that a change
		// after it is told ADDED, MODIFIED or DELETED as the cache tells
		// it; a revision compacted away is a TooOldError, as cached.
		if _, err := c.listStore(ctx, q, from, func(o *storage.Object) bool { selected[o.Key] = true; return true }); err != nil {
			return nil, err
		}
	}
	go w.runLog(ctx, c, fromState, from, selected)
	return w, nil
}

// listStore lists q at revision at (0: the latest) from the store, a page
// at a time, calling fn with each object until it returns false; it
// returns the revision listed.
func (c *Cache) listStore(ctx context.Context, q *storage.ListQuery, at int64, fn func(*storage.Object) bool) (int64, error) {
	pq := *q
	pq.Revision, pq.Limit, pq.Continue = at, logPage, ""
	for {
		page, err := c.store.List(ctx, &pq)
		if err != nil {
			return 0, err
		}
		for i := range page.Objects {
			if !fn(&page.Objects[i]) {
				return page.Revision, nil
			}
		}
		if page.Continue == "" {
			return page.Revision, nil
		}
		pq.Continue = page.Continue
	}
}

// runLog sends w's events read from the store: the state at from first
// when fromState, then the log's changes after from. It ends when the log is
// compacted past it (its client resumes or relists), or as a cached
// watch ends.
func (w *Watcher) runLog(ctx context.Context, c *Cache, fromState bool, from int64, selected map[storage.Key]bool) {
	defer close(w.result)
	defer w.stop()
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	go func() {
		select {
		case <-w.terminateCh:
			cancel()
		case <-ctx.Done():
		}
	}()
	send := func(e Event) bool {
		select {
		case w.result <- e:
			return true
		case <-ctx.Done():
			return false
		}
	}
	if fromState {
		_, err := c.listStore(ctx, w.q, from, func(o *storage.Object) bool {
			selected[o.Key] = true
			return send(Event{Type: watch.Added, Revision: o.Revision, Object: o})
		})
		if err != nil || ctx.Err() != nil {
			return
		}
		if w.opts.SendInitialEvents && w.opts.Bookmarks {
			if !send(Event{Type: watch.Bookmark, Revision: from, InitialEventsEnd: true}) {
				return
			}
		}
	}
	// process sends the events of the changes after from, which it moves
	// past them.
	process := func(changes []storage.LoggedChange) bool {
		for i := range changes {
			e := &changes[i]
			if e.Revision <= from {
				continue // read before the watch joined its feed
			}
			from = e.Revision
			if e.Key.GVR != w.q.GVR {
				continue
			}
			ev, ok, err := w.logEvent(c, e, selected)
			if err != nil {
				return false
			}
			if ok && !send(ev) {
				return false
			}
		}
		return true
	}
	f := c.joinFeed(w.q.GVR)
	defer c.leaveFeed(f)
	for {
		// Join the feed where it is now, reading the log up to there.
		b := f.joinAt()
		for from < b.from {
			changes, _, err := c.store.Changes(ctx, from, tailBatch)
			if err != nil {
				return // compacted past the watch, or the store failing: the client resumes
			}
			upTo := slices.IndexFunc(changes, func(e storage.LoggedChange) bool { return e.Revision > b.from })
			if upTo < 0 {
				upTo = len(changes)
			}
			if !process(changes[:upTo]) {
				return
			}
			if upTo < tailBatch {
				break
			}
		}
		from = max(from, b.from)
		// Follow it, with a bookmark when one is due, until it drops a
		// batch the client has yet to take: join again.
		for {
			if w.bookmarkDue() && !send(Event{Type: watch.Bookmark, Revision: from}) {
				return
			}
			select {
			case <-b.ready:
			case <-time.After(w.opts.BookmarkInterval):
				continue
			case <-ctx.Done():
				return
			}
			if b.err != nil {
				return // the feed stopped: the client resumes
			}
			changes, ok := f.read(b)
			if !ok {
				break
			}
			if !process(changes) {
				return
			}
			from, b = max(from, b.to), b.next
		}
	}
}

// logEvent maps a logged change to what w sees, given the keys it
// selected before, which it updates.
func (w *Watcher) logEvent(c *Cache, e *storage.LoggedChange, selected map[storage.Key]bool) (Event, bool, error) {
	c.mu.Lock()
	fields := c.fields
	c.mu.Unlock()
	o, err := fields.DecodeStored(e.Key.GVR.GroupResource(), e.Object)
	if err != nil {
		return Event{}, false, err
	}
	o.Cluster, o.GVR, o.Revision = e.Key.Cluster, e.Key.GVR, e.Revision
	was := selected[e.Key]
	is := e.Type != watch.Deleted && w.q.Matches(&o, nil)
	var typ watch.EventType
	switch {
	case was && !is:
		typ = watch.Deleted
		delete(selected, e.Key)
	case is && was:
		typ = watch.Modified
	case is:
		typ = watch.Added
		selected[e.Key] = true
	default:
		return Event{}, false, nil
	}
	return Event{Type: typ, Revision: e.Revision, Object: &o}, true, nil
}
