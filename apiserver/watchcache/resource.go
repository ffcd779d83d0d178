package watchcache

import (
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/panorama-io/panorama/storage"
)

// resource is the state and recent history of one resource.
type resource struct {
	gvr     schema.GroupVersionResource
	objects map[storage.Key]*storage.Object
	// ring holds the last changes; every change after oldest is in it.
	ring     []change
	next     int
	full     bool
	oldest   int64
	watchers map[*Watcher]struct{}
}

// change is a logged change with the state before it, so that a watch with
// a selector can tell objects entering or leaving its selection.
type change struct {
	typ  watch.EventType
	rev  int64
	obj  *storage.Object
	prev *storage.Object
}

func newResource(gvr schema.GroupVersionResource, rev int64, size int) *resource {
	return &resource{
		gvr: gvr, objects: map[storage.Key]*storage.Object{}, ring: make([]change, size),
		oldest: rev, watchers: map[*Watcher]struct{}{},
	}
}

func decode(data []byte, key storage.Key, rev int64) (*storage.Object, error) {
	o, err := storage.DecodeStored(data)
	if err != nil {
		return nil, err
	}
	o.Cluster, o.GVR, o.Revision = key.Cluster, key.GVR, rev
	return &o, nil
}

// apply applies a new change and sends it to the watchers.
func (r *resource) apply(e *storage.Event) error {
	o, err := decode(e.Object, e.Key, e.Revision)
	if err != nil {
		return err
	}
	ch := change{typ: e.Type, rev: e.Revision, obj: o, prev: r.objects[o.Key]}
	if e.Type == watch.Deleted {
		delete(r.objects, o.Key)
	} else {
		r.objects[o.Key] = o
	}
	r.record(ch)
	for w := range r.watchers {
		if ev, ok := w.filter(&ch); ok {
			w.push(ev)
		}
	}
	return nil
}

// remember fills the ring with the changes that led to the current state,
// so that watches resuming from before the cache started (after a restart,
// say) are served rather than sent to relist. compacted is where the log
// starts.
func (r *resource) remember(history []storage.Event, compacted int64) error {
	for i := range history {
		e := &history[i]
		o, err := decode(e.Object, e.Key, e.Revision)
		if err != nil {
			return err
		}
		ch := change{typ: e.Type, rev: e.Revision, obj: o}
		if e.Prev != nil {
			if ch.prev, err = decode(e.Prev, e.Key, 0); err != nil {
				return err
			}
		}
		r.record(ch)
	}
	switch {
	case len(history) < len(r.ring):
		r.oldest = compacted // the whole log of the resource is in the ring
	case len(history) > 0:
		r.oldest = history[0].Revision - 1
	}
	return nil
}

// record appends a change to the ring, dropping the oldest when full.
func (r *resource) record(ch change) {
	if r.full {
		r.oldest = r.ring[r.next].rev
	}
	r.ring[r.next] = ch
	r.next = (r.next + 1) % len(r.ring)
	if r.next == 0 {
		r.full = true
	}
}

// since returns the changes after rev that w selects, oldest first.
func (r *resource) since(rev int64, w *Watcher) []Event {
	var out []Event
	n := r.next
	if r.full {
		n = len(r.ring)
	}
	for i := range n {
		idx := i
		if r.full {
			idx = (r.next + i) % len(r.ring)
		}
		ch := &r.ring[idx]
		if ch.rev <= rev {
			continue
		}
		if ev, ok := w.filter(ch); ok {
			out = append(out, ev)
		}
	}
	return out
}

func (r *resource) closeWatchers() {
	for w := range r.watchers {
		w.terminate()
		delete(r.watchers, w)
	}
}
