package watchcache

import (
	"context"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/watch"

	"github.com/panorama-io/panorama/storage"
)

// Watcher is one watch. Its events arrive on ResultChan, which closes when
// the watch ends: by Stop, by the context, or because the client fell so far
// behind that its queue overflowed (it then re-watches from its last
// resourceVersion, as with kube-apiserver). The queue is small, so that idle
// watches cost little and a slow one never holds back the tail or the
// other watches.
type Watcher struct {
	q    *storage.ListQuery
	opts WatchOptions

	// initialObjects are sent first as ADDED, then initial (the changes to
	// replay, or the bookmark ending the initial events), then the queue.
	initialObjects []*storage.Object
	initial        []Event
	queue          chan Event
	result         chan Event
	stop           func()

	mu          sync.Mutex
	terminated  bool
	lastSent    int64
	nextMark    time.Time
	stopOnce    sync.Once
	terminateCh chan struct{}
}

func newWatcher(q *storage.ListQuery, opts WatchOptions, queue int) *Watcher {
	if opts.BookmarkInterval <= 0 {
		opts.BookmarkInterval = time.Minute
	}
	return &Watcher{
		q: q, opts: opts, queue: make(chan Event, queue), result: make(chan Event),
		nextMark: time.Now().Add(opts.BookmarkInterval), terminateCh: make(chan struct{}),
	}
}

// ResultChan delivers the events.
func (w *Watcher) ResultChan() <-chan Event { return w.result }

// Stop ends the watch.
func (w *Watcher) Stop() { w.terminate() }

func (w *Watcher) terminate() {
	w.stopOnce.Do(func() { close(w.terminateCh) })
}

func (w *Watcher) run(ctx context.Context) {
	defer close(w.result)
	defer w.stop()
	send := func(e Event) bool {
		select {
		case w.result <- e:
			return true
		case <-ctx.Done():
		case <-w.terminateCh:
		}
		return false
	}
	for _, o := range w.initialObjects {
		if !send(Event{Type: watch.Added, Revision: o.Revision, Object: o}) {
			return
		}
	}
	w.initialObjects = nil
	for _, e := range w.initial {
		if !send(e) {
			return
		}
	}
	w.initial = nil
	for {
		select {
		case e := <-w.queue:
			if !send(e) {
				return
			}
		case <-ctx.Done():
			return
		case <-w.terminateCh:
			return
		}
	}
}

// push queues e; called with the resource locked, so it never blocks: a
// full queue ends the watch.
func (w *Watcher) push(e Event) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.terminated {
		return
	}
	if e.Revision <= w.lastSent && (e.Type == watch.Bookmark || e.Revision <= w.opts.ResourceVersion) {
		return // a bookmark with no news, or a change the client already has
	}
	select {
	case w.queue <- e:
		w.lastSent = e.Revision
	default:
		w.terminated = true
		w.terminate()
	}
}

func (w *Watcher) bookmarkDue() bool {
	if !w.opts.Bookmarks {
		return false
	}
	now := time.Now()
	w.mu.Lock()
	defer w.mu.Unlock()
	if now.Before(w.nextMark) {
		return false
	}
	w.nextMark = now.Add(w.opts.BookmarkInterval)
	return true
}

// filter maps a change to what this watch sees: an object entering the
// selection is ADDED, one leaving it DELETED.
func (w *Watcher) filter(ch *change) (Event, bool) {
	was := ch.prev != nil && w.q.Matches(ch.prev, nil)
	is := ch.typ != watch.Deleted && w.q.Matches(ch.obj, nil)
	var typ watch.EventType
	switch {
	case ch.typ == watch.Deleted && was:
		typ = watch.Deleted
	case ch.typ == watch.Deleted:
		return Event{}, false
	case was && is:
		typ = watch.Modified
	case is:
		typ = watch.Added
	case was:
		typ = watch.Deleted
	default:
		return Event{}, false
	}
	return Event{Type: typ, Revision: ch.rev, Object: ch.obj}, true
}
