package watchcache

import (
	"context"
	"sort"
	"sync"
	"sync/atomic"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/panorama-io/panorama/storage"
)

// resource is the state and recent history of one resource. It is filled
// without locks before it is published (loaded closes); after, mu guards
// it.
type resource struct {
	gvr    schema.GroupVersionResource
	loaded chan struct{}
	err    error // why the load failed; set before loaded closes

	mu sync.RWMutex
	// revision is the revision the objects are at.
	revision int64
	objects  *index
	// ring holds the last changes; every change after oldest is in it.
	ring     []change
	next     int
	full     bool
	oldest   int64
	watchers map[*Watcher]struct{}
	closed   bool
	// bytes estimates what the objects and the ring hold (budget.go).
	bytes int64
	// used orders the resources by their last read (Cache.touch).
	used atomic.Int64
	// reserved is what the budget counts of r while it loads
	// (Cache.reserve).
	reserved atomic.Int64
	// fields are those the objects are described with. A change of the
	// indexed fields replaces them where it describes the resource's
	// objects alike, and drops the resource where it does not
	// (Cache.switchFields).
	fields atomic.Pointer[storage.FieldSet]
}

// change is a logged change with the state before it, so that a watch with
// a selector can tell objects entering or leaving its selection, and a
// page at an earlier revision can undo it.
type change struct {
	typ  watch.EventType
	rev  int64
	obj  *storage.Object
	prev *preImage // nil when the key had no object
}

// newChange is the change of typ to o, whose key held was before it (nil
// if nothing).
func newChange(typ watch.EventType, o, was *storage.Object) change {
	ch := change{typ: typ, rev: o.Revision, obj: o}
	if was != nil {
		ch.prev = newPreImage(was, o)
	}
	return ch
}

// before returns the object ch replaced or deleted, with its JSON.
func (ch *change) before() (*storage.Object, error) { return ch.prev.object(ch.obj) }

func newResource(gvr schema.GroupVersionResource, size int, fields *storage.FieldSet) *resource {
	r := &resource{
		gvr: gvr, loaded: make(chan struct{}), objects: newIndex(),
		ring: make([]change, size), watchers: map[*Watcher]struct{}{},
	}
	r.fields.Store(fields)
	return r
}

// decode decodes a logged object of key at revision rev; rev 0 (a
// pre-image read from the log, whose revision the log does not give)
// keeps the revision its JSON gives.
func (r *resource) decode(data []byte, key storage.Key, rev int64) (*storage.Object, error) {
	o, err := r.fields.Load().DecodeStored(r.gvr.GroupResource(), data)
	if err != nil {
		return nil, err
	}
	// Every object shares r's strings of its resource, rather than
	// holding copies read from its row.
	o.Cluster, o.GVR = key.Cluster, r.gvr
	if rev != 0 {
		o.Revision = rev
	}
	return &o, nil
}

// applyLocking decodes a new change, then applies it under r's lock. The
// tail is r's only writer (Cache.tail): the object the change replaces
// stays current until it is applied, so its pre-image is made before
// taking the lock that lists and watches wait on.
func (r *resource) applyLocking(e *storage.LoggedChange) error {
	o, err := r.decode(e.Object, e.Key, e.Revision)
	if err != nil {
		return err
	}
	r.mu.RLock()
	was := r.objects.get(o.Key)
	r.mu.RUnlock()
	ch := newChange(e.Type, o, was)
	r.mu.Lock()
	defer r.mu.Unlock()
	r.applyChange(ch)
	return nil
}

// apply applies a new change to a resource not published yet.
func (r *resource) apply(e *storage.LoggedChange) error {
	o, err := r.decode(e.Object, e.Key, e.Revision)
	if err != nil {
		return err
	}
	r.applyChange(newChange(e.Type, o, r.objects.get(o.Key)))
	return nil
}

// applyChange applies a change and queues it for the watchers.
func (r *resource) applyChange(ch change) {
	if was := r.objects.get(ch.obj.Key); was != nil && was.Revision <= r.oldest {
		r.bytes -= objectBytes(was) // no entry of the ring keeps it
	}
	if ch.typ == watch.Deleted {
		r.objects.remove(ch.obj.Key)
	} else {
		r.objects.put(ch.obj)
		r.bytes += objectBytes(ch.obj)
	}
	r.revision = ch.rev
	r.record(ch)
	for w := range r.watchers {
		if ev, ok := w.filter(&ch); ok {
			w.push(ev)
		}
	}
}

// remember fills the ring of r, loading at revision at, with the changes
// that led to its state, so that watches resuming from before the cache
// started (after a restart, say) are served rather than sent to relist.
//
// The log is read newest first, a page at a time (loadPage), each page
// decoded and reserved (Cache.reserve) before the next is read: a page's
// JSON is what the load holds of the log beyond what the ring keeps,
// where the whole log of a resource just synced is as much JSON again as
// its objects.
//
// Each version is decoded once: an entry whose object is still current
// shares the cached object, and an entry whose next change of its key is
// in the ring too takes the description decoded from that change's
// pre-image, with its own JSON. Decoded apart, a resource just synced
// would hold each object twice.
func (c *Cache) remember(ctx context.Context, r *resource, at int64) error {
	var newestFirst []change
	// before holds, for each key, the description of the object before
	// the oldest change of it read so far, without its JSON.
	before := map[storage.Key]*storage.Object{}
	upTo, limit, read := at, c.loadPage(0, 0), int64(0)
	var compacted, held int64
	for len(newestFirst) < len(r.ring) {
		want := min(limit, len(r.ring)-len(newestFirst))
		page, comp, err := c.store.History(ctx, r.gvr, upTo, want)
		if err != nil {
			return err
		}
		compacted = comp
		for i := len(page) - 1; i >= 0; i-- {
			e := &page[i]
			read += int64(len(e.Object) + len(e.Prev))
			o := r.objects.get(e.Key)
			if b := before[e.Key]; b != nil && e.Type != watch.Deleted {
				described := *b
				o = &described
				o.Data, o.Revision = e.Object, e.Revision
			} else if o == nil || o.Revision != e.Revision {
				if o, err = r.decode(e.Object, e.Key, e.Revision); err != nil {
					return err
				}
			}
			delete(before, e.Key)
			var was *storage.Object
			if e.Prev != nil {
				if was, err = r.decode(e.Prev, e.Key, 0); err != nil {
					return err
				}
				described := *was
				described.Data = nil
				before[e.Key] = &described
			}
			ch := newChange(e.Type, o, was)
			held += r.entryBytes(&ch)
			newestFirst = append(newestFirst, ch)
		}
		// What the changes hold counts against the budget as they are
		// read, as the objects do, before the ring records them.
		r.bytes += held
		err = c.reserve(r)
		r.bytes -= held
		if err != nil {
			return err
		}
		if len(page) < want {
			break // the log of the resource starts after compacted
		}
		upTo, limit = page[0].Revision-1, c.loadPage(read, len(newestFirst))
	}
	for i := len(newestFirst) - 1; i >= 0; i-- {
		r.record(newestFirst[i])
	}
	switch n := len(newestFirst); {
	case n < len(r.ring):
		r.oldest = compacted // the whole log of the resource is in the ring
	case n > 0:
		r.oldest = newestFirst[n-1].rev - 1
	}
	return nil
}

// hold puts o, loaded from a snapshot, among the objects.
func (r *resource) hold(o *storage.Object) {
	r.objects.put(o)
	r.bytes += objectBytes(o)
}

// record appends a change to the ring, dropping the oldest when full. An
// entry's object that is no longer current is the ring's alone to hold,
// and counted so while the entry stays.
func (r *resource) record(ch change) {
	if r.full {
		old := &r.ring[r.next]
		r.oldest = old.rev
		r.bytes -= r.entryBytes(old)
	}
	r.bytes += r.entryBytes(&ch)
	r.ring[r.next] = ch
	r.next = (r.next + 1) % len(r.ring)
	if r.next == 0 {
		r.full = true
	}
}

// entryBytes estimates what a ring entry holds: itself, and its object
// when that is not current.
func (r *resource) entryBytes(ch *change) int64 {
	n := changeBytes(ch)
	if r.objects.get(ch.obj.Key) != ch.obj {
		n += objectBytes(ch.obj)
	}
	return n
}

// watched reports whether r has open watches, which pin it.
func (r *resource) watched() bool {
	r.mu.RLock()
	defer r.mu.RUnlock()
	return len(r.watchers) > 0
}

// closeUnwatched closes r if it has no watches, so that none starts on it
// after; false if it has some.
func (r *resource) closeUnwatched() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.watchers) > 0 {
		return false
	}
	r.closed = true
	return true
}

// selected returns the objects q may select, and whether they are still
// to be matched against q one by one (residual: the index tells only
// part of q's filters). r's lock is held.
func (r *resource) selected(q *storage.ListQuery) (candidates []*storage.Object, residual bool) {
	sel, residual := r.objects.selection(q)
	return r.objects.objects(sel), residual
}

// since returns the changes after rev, oldest first.
func (r *resource) since(rev int64) []change {
	var out []change
	r.changesAfter(rev, func(ch *change) { out = append(out, *ch) })
	return out
}

// changesAfter calls fn with each change after rev in the ring, oldest
// first. The ring is in revision order: the first is found by a binary
// search, so a page at the current revision reads none.
func (r *resource) changesAfter(rev int64, fn func(*change)) {
	n, start := r.next, 0
	if r.full {
		n, start = len(r.ring), r.next
	}
	at := func(i int) *change { return &r.ring[(start+i)%len(r.ring)] }
	for i := sort.Search(n, func(i int) bool { return at(i).rev > rev }); i < n; i++ {
		fn(at(i))
	}
}

// close ends every watch, as when the cache resets or stops; no watch
// starts on r after.
func (r *resource) close() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.closed = true
	for w := range r.watchers {
		w.terminate()
		delete(r.watchers, w)
	}
}
