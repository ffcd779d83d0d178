package watchcache

import (
	"context"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/watch"

	"github.com/panorama-io/panorama/storage"
)

// Watcher is one watch. Its events arrive on ResultChan, which closes when
// the watch ends: by Stop, by the context, or because the client fell
// behind the resource's ring of recent changes (it then re-watches from its
// last resourceVersion, as with kube-apiserver).
//
// The queue is small, so that idle watches cost little and a slow one never
// holds back the tail or the other watches. A queue that overflows does
// not end the watch: one write of a fleet's group commit publishes
// thousands of changes at once, more than any client takes in that time.
// The watch stops queuing instead, and once its client has taken what was
// queued, reads what it missed from the ring, which holds those changes
// anyway; only a client the ring has left behind is closed.
type Watcher struct {
	q    *storage.ListQuery
	opts WatchOptions
	r    *resource

	// initialObjects are sent first as ADDED, then initial (the changes to
	// replay, or the bookmark ending the initial events), then the queue.
	initialObjects []*storage.Object
	initial        []Event
	queue          chan Event
	result         chan Event
	stop           func()

	mu         sync.Mutex
	terminated bool
	// lastSent is the revision of the last event queued; behind says the
	// queue overflowed after it, and what followed is to be read from
	// the ring.
	lastSent    int64
	behind      bool
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
			continue
		default:
		}
		// The queue is empty: what overflowed it is read from the ring.
		missed, ok := w.catchUp()
		if !ok {
			return
		}
		for _, e := range missed {
			if !send(e) {
				return
			}
		}
		if len(missed) > 0 {
			continue
		}
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

// catchUp returns the events of the changes the watch missed since its
// queue overflowed, if it did, and resumes queuing after them; false when
// the ring no longer holds them all, which ends the watch. Under r's lock
// no change is applied meanwhile, so none is missed or sent twice; and
// while the queue holds events, which precede what was missed, it waits
// for them to be sent first. A watch with bookmarks is told the revision
// it caught up to when the last change it missed is not for it.
func (w *Watcher) catchUp() ([]Event, bool) {
	w.mu.Lock()
	behind := w.behind
	w.mu.Unlock()
	if !behind {
		return nil, true
	}
	w.r.mu.RLock()
	w.mu.Lock()
	if len(w.queue) > 0 {
		// Queued between the run loop finding the queue empty and now.
		w.mu.Unlock()
		w.r.mu.RUnlock()
		return nil, true
	}
	from := w.lastSent
	if from < w.r.oldest {
		w.terminated = true
		w.mu.Unlock()
		w.r.mu.RUnlock()
		return nil, false
	}
	missed := w.r.since(from)
	w.behind = false
	rev := w.r.revision
	w.lastSent = rev
	w.mu.Unlock()
	w.r.mu.RUnlock()
	var out []Event
	for i := range missed {
		if ev, ok := w.filter(&missed[i]); ok {
			out = append(out, ev)
		}
	}
	if w.opts.Bookmarks && (len(out) == 0 || out[len(out)-1].Revision < rev) {
		out = append(out, Event{Type: watch.Bookmark, Revision: rev})
	}
	return out, true
}

// push queues e; called with the resource locked, so it never blocks: past
// a full queue, the watch's events are read from the ring (catchUp).
func (w *Watcher) push(e Event) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.terminated {
		return
	}
	if w.behind {
		// A client the ring has left behind is closed at once, rather
		// than when it comes back for what it missed.
		if w.lastSent < w.r.oldest {
			w.terminated = true
			w.terminate()
		}
		return
	}
	if e.Revision <= w.lastSent && (e.Type == watch.Bookmark || e.Revision <= w.opts.ResourceVersion) {
		return // a bookmark with no news, or a change the client already has
	}
	select {
	case w.queue <- e:
		w.lastSent = e.Revision
	default:
		w.behind = true
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
	was := ch.prev != nil && w.q.Matches(&ch.prev.described, nil)
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
