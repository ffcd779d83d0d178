package watchcache

import (
	"cmp"
	"context"
	"errors"
	"sync"

	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/panorama-io/panorama/storage"
)

// feedBatches is how many of its latest reads of the log a feed keeps for
// the watches behind it: a watch further behind (its client slow) reads
// the log itself until it has caught up, so that a feed holds what a few
// reads return at most, however slow its watches' clients.
const feedBatches = 4

// logFeed reads the change log for every watch of one resource served
// from the log (watchLog): each read of the log goes over the changes of
// every resource, so watches reading it each for themselves would read it
// as many times. A watch joins the feed where the feed is, reading the
// log itself from its own revision up to there, then follows the feed's
// batches. The feed runs while it has watches.
type logFeed struct {
	gvr  schema.GroupVersionResource
	stop context.CancelFunc
	// watches is how many watches follow the feed. Guarded by Cache.mu.
	watches int

	mu sync.Mutex
	// last is the batch being read: watches joining now follow from it.
	last *feedBatch
	// kept are the latest batches read, oldest first, which the feed
	// drops past feedBatches.
	kept []*feedBatch
}

// feedBatch is one read of the log by a feed: its changes of the feed's
// resource after revision from, up to and including to. Once ready is
// closed, to, err and next are set, and changes unless dropped.
type feedBatch struct {
	from  int64
	ready chan struct{}

	to      int64
	changes []storage.LoggedChange // guarded by the feed's mu
	dropped bool                   // guarded by the feed's mu
	err     error
	next    *feedBatch
}

// errFeedEnded ends the watches following a feed that stopped.
var errFeedEnded = errors.New("the watch cache stopped reading the change log for the watches of the resource")

func newFeedBatch(from int64) *feedBatch {
	return &feedBatch{from: from, ready: make(chan struct{})}
}

// joinFeed returns the feed of gvr, started at the tail's revision if it
// was not running, counting one more watch of it until leaveFeed.
func (c *Cache) joinFeed(gvr schema.GroupVersionResource) *logFeed {
	c.mu.Lock()
	defer c.mu.Unlock()
	f := c.feeds[gvr]
	if f == nil {
		ctx, stop := context.WithCancel(c.ctx)
		f = &logFeed{gvr: gvr, stop: stop, last: newFeedBatch(c.revision)}
		c.feeds[gvr] = f
		go c.runFeed(ctx, f)
	}
	f.watches++
	return f
}

// leaveFeed uncounts a watch of f, stopping f with its last.
func (c *Cache) leaveFeed(f *logFeed) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if f.watches--; f.watches == 0 {
		f.stop()
		if c.feeds[f.gvr] == f {
			delete(c.feeds, f.gvr)
		}
	}
}

// runFeed reads the log behind the tail, as the tail reads it, until f
// has no watches, the cache stops, or the log cannot be read (compacted
// past f, say): then the watches following f end (their clients resume
// or relist), and a new watch starts another feed.
func (c *Cache) runFeed(ctx context.Context, f *logFeed) {
	from := f.last.from
	var err error
	defer func() {
		c.mu.Lock()
		if c.feeds[f.gvr] == f {
			delete(c.feeds, f.gvr)
		}
		c.mu.Unlock()
		f.append(from, nil, cmp.Or(err, errFeedEnded))
	}()
	for {
		applied := c.Revision()
		var changes []storage.LoggedChange
		if changes, _, err = c.store.Changes(ctx, from, tailBatch); err != nil || ctx.Err() != nil {
			return
		}
		if len(changes) > 0 {
			from = changes[len(changes)-1].Revision
			f.append(from, ofResource(changes, f.gvr), nil)
		}
		if len(changes) == tailBatch {
			continue
		}
		// Read again once the tail has applied more of the log: at once
		// if it has since the read; if the read found nothing, past what
		// the tail had applied before it (revisions that log no change),
		// not past what it applied since, which the read may have missed.
		next := from + 1
		if len(changes) == 0 {
			next = max(from, applied) + 1
		}
		if c.WaitForRevision(ctx, next) != nil {
			return
		}
	}
}

// ofResource returns the changes of gvr.
func ofResource(changes []storage.LoggedChange, gvr schema.GroupVersionResource) []storage.LoggedChange {
	var out []storage.LoggedChange
	for i := range changes {
		if changes[i].Key.GVR == gvr {
			out = append(out, changes[i])
		}
	}
	return out
}

// append ends the batch being read with changes up to revision to, or
// with err, and starts the next; it drops the changes of the batches
// beyond the last feedBatches.
func (f *logFeed) append(to int64, changes []storage.LoggedChange, err error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	b := f.last
	b.to, b.changes, b.err, b.next = to, changes, err, newFeedBatch(to)
	f.last = b.next
	if f.kept = append(f.kept, b); len(f.kept) > feedBatches {
		f.kept[0].changes, f.kept[0].dropped = nil, true
		f.kept = f.kept[1:]
	}
	close(b.ready)
}

// joinAt returns the batch being read, from which a watch joining now
// follows f.
func (f *logFeed) joinAt() *feedBatch {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.last
}

// read returns b's changes, once ready; ok is false if f dropped them.
func (f *logFeed) read(b *feedBatch) (changes []storage.LoggedChange, ok bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return b.changes, !b.dropped
}
