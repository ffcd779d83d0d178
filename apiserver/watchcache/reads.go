package watchcache

import (
	"context"

	"github.com/panorama-io/panorama/storage"
)

// Reads is the API server's read side, get, list, count and watch of the
// synced objects, over the watch cache and the store, as k8s.io/apiserver's
// cacher.CacheDelegator is kube-apiserver's: the cache answers what it
// may, the store the rest, and which one answers is decided in one place
// (Reads.cached). How fresh a read over a replica must be, and how long
// it waits for one, is the store's to say (storage.Reader). Each request
// counts as a read of its resource, whether the cache or the store answers
// it, for the cache's admission of loads (admission.go).
type Reads struct {
	store storage.Reader
	cache *Cache
}

// NewReads reads from cache, which tails store, and from store.
func NewReads(store storage.Reader, cache *Cache) *Reads {
	return &Reads{store: store, cache: cache}
}

// Freshness is what a read asks of the state it sees, as resourceVersion
// asks it. The zero Freshness is a consistent read: the store's latest
// state, or the state at the query's revision or continue token.
type Freshness struct {
	// Any takes the cache's state, whatever its revision
	// (resourceVersion "0").
	Any bool
	// NotOlderThan, when set, is the least revision the state may be at; a
	// store that has not reached it is a TooLargeError.
	NotOlderThan int64
}

// read is what the choice of cache or store knows of a read.
type read struct {
	// cacheable: the cache can answer the query at all.
	cacheable bool
	// asIs: the cache's state as it is may answer (Freshness.Any), rather
	// than its state at the store's latest revision.
	asIs bool
}

// cached decides whether the cache serves a read, and, for a consistent
// read, the store's current and compacted revisions it then serves it at:
// the one place the choice is made. A consistent read goes to the cache
// only once the cache has applied the store's latest revision; over a
// replica, which the cache tails, it waits for that no longer than the
// store would wait for its replica (ReadWait) before the store answers
// from the primary. The cache still declines what it cannot answer (its
// methods' ok), which the store then answers.
func (r *Reads) cached(ctx context.Context, rd read) (ok bool, current, compacted int64, err error) {
	switch {
	case !rd.cacheable:
		return false, 0, 0, nil
	case rd.asIs:
		return true, 0, 0, nil
	}
	if current, compacted, err = r.store.LatestRevision(ctx); err != nil {
		return false, 0, 0, err
	}
	return r.reaches(ctx, current), current, compacted, nil
}

// reaches reports whether the cache may be asked for a read at rev, the
// store's latest: at once when reads show every commit at once (the cache
// then waits for its tail, which the store's commits wake), else once it
// has applied rev within the store's ReadWait, which may be none: a
// replica's lag is then the primary's to answer, not the cache's to wait
// out.
func (r *Reads) reaches(ctx context.Context, rev int64) bool {
	if !r.store.ReadsLag() {
		return true
	}
	ctx, cancel := context.WithTimeout(ctx, r.store.ReadWait())
	defer cancel()
	return r.cache.WaitForRevision(ctx, rev) == nil
}

// Get reads one object from the store: a get is a consistent read.
func (r *Reads) Get(ctx context.Context, key storage.Key) (*storage.Object, error) {
	return r.store.Get(ctx, key)
}

// List reads a page of q. A list of the cache's state (Freshness.Any, no
// continue token, no owner filter) is the whole selection, limit ignored,
// as kube-apiserver 1.37 ignores it for resourceVersion=0 lists its watch
// cache serves (cacher's computeListLimit). Other pages come from the
// cache or the store, whose continue tokens are the same.
func (r *Reads) List(ctx context.Context, q *storage.ListQuery, f Freshness) (*storage.ListResult, error) {
	r.cache.reads.add(q.GVR)
	if err := r.checkReached(ctx, f.NotOlderThan); err != nil {
		return nil, err
	}
	if page, ok, err := r.cache.PageApplied(ctx, q); ok || err != nil {
		return page, err // a page continuing a list at a revision the cache has applied
	}
	asIs := f.Any && q.Continue == "" && !q.HasOwnerFilter()
	cached, current, compacted, err := r.cached(ctx, read{cacheable: asIs || Pageable(q), asIs: asIs})
	switch {
	case err != nil:
		return nil, err
	case cached && asIs:
		objs, rev, err := r.cache.List(ctx, q)
		switch {
		case IsNotCached(err): // the store lists it, limit honored
		case err != nil:
			return nil, err
		default:
			return &storage.ListResult{Objects: objs, Revision: rev}, nil
		}
	case cached:
		if page, ok, err := r.cache.Page(ctx, q, current, compacted); ok || err != nil {
			return page, err
		}
	}
	return r.store.List(ctx, q)
}

// checkReached fails a read not older than rev when the store has not
// reached rev: a TooLargeError, which clients retry.
func (r *Reads) checkReached(ctx context.Context, rev int64) error {
	if rev == 0 {
		return nil
	}
	cur, err := r.store.ReadableRevision(ctx, rev)
	if err != nil {
		return err
	}
	if cur < rev {
		return &storage.TooLargeError{Requested: rev, Current: cur}
	}
	return nil
}

// Count counts q in the cache when it holds the resource, by intersecting
// its index's bitmaps; a consistent count first waits for it to reach
// the store's latest revision. Else the store counts: from its summary
// (Summarizable), or by going over the rows, which starts loading the
// resource into the cache for the next counts if admitted (admission.go).
// The groups' periods are the summary's alone.
func (r *Reads) Count(ctx context.Context, q *storage.CountQuery, f Freshness) (*storage.CountResult, error) {
	r.cache.reads.add(q.Query.GVR)
	cacheable := !q.HeldSince && (!q.Summarizable() || r.cache.Holds(q.Query.GVR))
	cached, current, _, err := r.cached(ctx, read{cacheable: cacheable, asIs: f.Any})
	if err != nil {
		return nil, err
	}
	if cached {
		if res, ok, err := r.cache.Count(ctx, q, current); ok || err != nil {
			return res, err
		}
	}
	return r.store.Count(ctx, q)
}

// Watch watches q in the cache.
func (r *Reads) Watch(ctx context.Context, q *storage.ListQuery, opts WatchOptions) (*Watcher, error) {
	r.cache.reads.add(q.GVR)
	return r.cache.Watch(ctx, q, opts)
}
