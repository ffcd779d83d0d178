// Package synchronizer keeps one resource of one member cluster equal in
// storage to what the member holds: a client-go reflector (paged list, then
// watch, relist on 410) feeds a batcher that writes to storage.
package synchronizer

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"golang.org/x/sync/errgroup"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/selection"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/log"

	clusterv1alpha1 "github.com/panorama-io/panorama/apis/cluster/v1alpha1"
	"github.com/panorama-io/panorama/storage"
)

// Options tune every synchronizer.
type Options struct {
	// KeepManagedFields keeps metadata.managedFields, dropped by default.
	KeepManagedFields bool
	// KeepLastApplied keeps the last-applied annotation, dropped by default.
	KeepLastApplied bool
	// PageSize of the initial list.
	PageSize int64
	// BatchSize bounds one storage write.
	BatchSize int
	// FlushInterval is how long a change may wait for others to share its write.
	FlushInterval time.Duration
	// MaxPending holds the watch while this many changes wait for storage.
	MaxPending int
	// MaxObjectBytes bounds the JSON of an object stored: a larger one is
	// refused, as storage refuses objects it cannot hold.
	MaxObjectBytes int
}

// Defaults of Options left zero.
const (
	DefaultPageSize      = 500
	DefaultBatchSize     = 500
	DefaultFlushInterval = 50 * time.Millisecond
	// DefaultMaxObjectBytes is above any object a kube-apiserver stores
	// (etcd takes 1.5 MiB a request by default) and half of the smallest
	// limit of a supported database on a statement: MariaDB's default
	// max_allowed_packet, 16 MiB, which one object's row must fit in.
	// PostgreSQL and SQLite take values of up to a gigabyte.
	DefaultMaxObjectBytes = 8 << 20
)

// Bounds, in bytes of objects' JSON (jsonSize.least), of what a
// synchronizer holds beside the counts of Options: a member's objects may
// each be as large as MaxObjectBytes, and PageSize or MaxPending of those
// would be gigabytes.
const (
	// batchBytes bounds one storage write, as a write group of the store
	// bounds the bytes it writes at once.
	batchBytes = 16 << 20
	// pageBytes is what a page of a list is sized to hold (pageLimit). A
	// list holds at most three pages at once: the one written, one read
	// ahead (listPagesAhead) and the one being received.
	pageBytes = 16 << 20
	// pendingBytes holds the watch, as MaxPending does, while this much
	// waits for storage.
	pendingBytes = 4 * batchBytes
)

func (o *Options) defaults() {
	if o.PageSize == 0 {
		o.PageSize = DefaultPageSize
	}
	if o.BatchSize == 0 {
		o.BatchSize = DefaultBatchSize
	}
	if o.FlushInterval == 0 {
		o.FlushInterval = DefaultFlushInterval
	}
	if o.MaxPending == 0 {
		o.MaxPending = 10 * o.BatchSize
	}
	if o.MaxObjectBytes == 0 {
		o.MaxObjectBytes = DefaultMaxObjectBytes
	}
}

// Resource is what is synced: a member resource that can be listed and watched.
type Resource struct {
	storage.Resource
	// KeepSecretData keeps data and stringData of core Secrets, dropped by
	// default: readers of the API server see Secrets that host RBAC grants
	// them, but their contents are the member's credentials.
	KeepSecretData bool
	// EventRetention, for Events (IsEvents), is how long after it was last
	// seen an Event is kept: older ones are not stored, and stored ones are
	// pruned as they age past it. 0 keeps them as long as the member does.
	EventRetention time.Duration
	// Filter narrows what is synced; nil syncs everything.
	Filter *Filter
}

// storedAlike reports whether a restarted synchronizer of r can take over
// what o's stored: the same resource, with the same Secret data kept or
// dropped. A change of the fields dropped it can (list rewrites what was
// stored under other dropFields); one of Secret data it cannot: the data
// a synchronizer kept must also leave the log and history
// (storage.ClusterWriter.DropSecretData), which the resource's removal
// sees to.
func (r Resource) storedAlike(o Resource) bool {
	return r.Resource == o.Resource && r.KeepSecretData == o.KeepSecretData
}

// equal reports whether r and o sync alike: stored alike, with the same
// retention of Events and the same filter (fields dropped included).
func (r Resource) equal(o Resource) bool {
	return r.storedAlike(o) && r.EventRetention == o.EventRetention && r.Filter.String() == o.Filter.String()
}

// Status is a synchronizer's state for the Cluster's status.
type Status struct {
	State        string
	Count        int64
	LastError    string
	LastSyncTime time.Time
	// Refused counts objects storage could not hold; LastRefused names the
	// latest of them.
	Refused     int64
	LastRefused string
	// LastListRemoved counts the objects the last full list removed from
	// storage: stored, and no longer listed by the member under the
	// filter (kept out by a changed filter, or deleted while no watch
	// ran). Of a filter of namespaces, the sum over their last lists.
	LastListRemoved int64
}

// Synchronizer syncs one Resource of one cluster.
type Synchronizer struct {
	cluster string
	// epoch is the owner epoch the cluster's writes are fenced by
	// (storage.Writer.ForCluster).
	epoch    int64
	resource Resource
	client   dynamic.Interface
	store    storage.Interface
	opts     Options
	onChange func()

	// ctx is Run's: the reflector's store calls carry none of their own.
	ctx     context.Context
	mu      sync.Mutex
	pending []pendingChange
	// pendingBytes is the size of pending's objects.
	pendingBytes int
	// written is closed, and replaced, whenever pending shrinks: an enqueue
	// held by a full queue waits on it or on ctx, never on a condition
	// variable that cancellation could not wake.
	written  chan struct{}
	status   Status
	flushing sync.Mutex // one storage write at a time, in order
	// listing is held by a list from its start to its end: the reflector
	// returns once its context ends without waiting for its list, whose
	// writes Run must outlive.
	listing sync.Mutex
	wake    chan struct{}
	// removed is what each scope's last list removed (Status.LastListRemoved).
	removed map[string]int64
}

// pendingChange is a change on its way to storage.
type pendingChange struct {
	change   storage.Change
	size     jsonSize // of change.Object; zero for a delete
	received time.Time
	added    int64 // +1 add, -1 delete, 0 update
}

// upsert is the pending change that stores u.
func upsert(u *unstructured.Unstructured) pendingChange {
	return pendingChange{change: storage.Upsert(u), size: sizeOf(u.Object)}
}

// batchLen is how many of changes, from the first, one storage write
// takes: up to limit changes and batchBytes of objects, at least one.
func batchLen(changes []pendingChange, limit int) int {
	n, bytes := 0, 0
	for n < len(changes) && n < limit && (n == 0 || bytes+changes[n].size.least <= batchBytes) {
		bytes += changes[n].size.least
		n++
	}
	return n
}

// New makes a synchronizer that writes the cluster under the owner epoch
// epoch; onChange is called when its Status changes. It is Syncing from
// the start, so that its start is no change to be told of: the reconcile
// that starts a Cluster's synchronizers reads their Status as it writes
// the Cluster's, and told of the start, the Cluster would be queued again
// and wait out the rest of that reconcile (BenchmarkFleetReconcile).
func New(cluster string, epoch int64, r Resource, client dynamic.Interface, store storage.Interface, opts Options, onChange func()) *Synchronizer {
	opts.defaults()
	return &Synchronizer{
		cluster: cluster, epoch: epoch, resource: r, client: client, store: store, opts: opts, onChange: onChange,
		status: Status{State: clusterv1alpha1.SyncStateSyncing}, wake: make(chan struct{}, 1), written: make(chan struct{}),
		removed: map[string]int64{},
	}
}

// Status returns the current state.
func (s *Synchronizer) Status() Status {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.status
}

// Run syncs until ctx ends, and returns once every storage call it made has
// returned, so that a synchronizer started after it never races its writes.
// Changes not yet written when ctx ends are dropped rather than written with
// a context of their own, which a stalled storage would hold for as long as
// it allowed: every synchronizer starts with a list diffed against the
// stored member resourceVersions, so the next one of the resource writes
// them, and the cluster's or resource's removal deletes them anyway.
func (s *Synchronizer) Run(ctx context.Context) {
	logger := log.FromContext(ctx).WithValues("cluster", s.cluster, "resource", s.resource.GVR.String())
	ctx = log.IntoContext(ctx, logger)
	s.ctx = ctx
	flushDone := make(chan struct{})
	go func() {
		defer close(flushDone)
		s.flushLoop(ctx)
	}()
	pruneDone := make(chan struct{})
	go func() {
		defer close(pruneDone)
		if s.resource.EventRetention > 0 {
			s.pruneLoop(ctx)
		}
	}()

	var scopes sync.WaitGroup
	for _, ns := range s.resource.Filter.scopes() {
		scopes.Go(func() { s.runScope(ctx, ns) })
	}
	scopes.Wait()
	<-flushDone
	<-pruneDone
	// Waits for a list still writing, which ctx ends; a list that starts
	// later sees ctx ended and writes nothing.
	s.listing.Lock()
	//lint:ignore SA2001 the lock is taken to wait for the list that holds it
	s.listing.Unlock()
}

// runScope lists and watches the objects of namespace ns ("" for all the
// filter keeps) until ctx ends, with the backoff of client-go's reflector
// after a failure.
func (s *Synchronizer) runScope(ctx context.Context, ns string) {
	logger := log.FromContext(ctx)
	ri := s.client.Resource(s.resource.GVR).Namespace(ns)
	lw := listStreamedToStorage{&cache.ListWatch{
		ListWithContextFunc: func(ctx context.Context, _ metav1.ListOptions) (runtime.Object, error) {
			s.listing.Lock()
			defer s.listing.Unlock()
			if err := ctx.Err(); err != nil {
				return nil, err // Run has returned, or is about to
			}
			return s.list(ctx, ri, ns)
		},
		WatchFuncWithContext: func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
			return ri.Watch(ctx, s.resource.Filter.listOptions(o))
		},
	}}
	name := s.cluster + "/" + s.resource.GVR.String()
	if ns != metav1.NamespaceAll {
		name += "/" + ns
	}
	r := cache.NewReflectorWithOptions(lw, &unstructured.Unstructured{}, (*reflectorSink)(s), cache.ReflectorOptions{Name: name})

	// The backoff of client-go's reflector: from 0.8s to 30s, reset after two
	// healthy minutes.
	newBackoff := func() wait.Backoff {
		return wait.Backoff{Duration: 800 * time.Millisecond, Factor: 2, Jitter: 0.5, Steps: 1 << 30, Cap: 30 * time.Second}
	}
	backoff := newBackoff()
	for ctx.Err() == nil {
		started := time.Now()
		err := r.ListAndWatchWithContext(ctx)
		if ctx.Err() != nil {
			return
		}
		if err != nil {
			syncErrors.WithLabelValues(s.cluster, s.resource.GVR.Resource).Inc()
			logger.V(1).Info("list and watch failed", "namespace", ns, "err", err)
			s.setState(clusterv1alpha1.SyncStateError, err.Error())
		}
		if time.Since(started) > 2*time.Minute {
			backoff = newBackoff()
		}
		select {
		case <-ctx.Done():
		case <-time.After(backoff.Step()):
		}
	}
}

// flushLoop writes pending changes when a batch is full or FlushInterval
// has passed, backing off while storage fails.
func (s *Synchronizer) flushLoop(ctx context.Context) {
	logger := log.FromContext(ctx)
	backoff := time.Duration(0)
	for {
		select {
		case <-ctx.Done():
			return
		case <-s.wake:
		case <-time.After(s.opts.FlushInterval):
		}
		if err := s.flush(ctx); err != nil {
			if ctx.Err() != nil {
				return
			}
			syncErrors.WithLabelValues(s.cluster, s.resource.GVR.Resource).Inc()
			logger.Error(err, "writing to storage")
			s.setState(clusterv1alpha1.SyncStateError, "storage: "+err.Error())
			backoff = min(max(2*backoff, 100*time.Millisecond), 10*time.Second)
			select {
			case <-ctx.Done():
				return
			case <-time.After(backoff):
			}
			continue
		}
		backoff = 0
	}
}

// flush writes pending changes, a batch at a time; on error the changes stay
// queued, in order, for the next try.
func (s *Synchronizer) flush(ctx context.Context) error {
	s.flushing.Lock()
	defer s.flushing.Unlock()
	for {
		s.mu.Lock()
		n := batchLen(s.pending, s.opts.BatchSize)
		batch := s.pending[:n:n]
		s.mu.Unlock()
		if n == 0 {
			return nil
		}
		if err := s.apply(ctx, batch); err != nil {
			return err
		}
		now := time.Now()
		var delta int64
		var bytes int
		for i := range batch {
			syncLag.WithLabelValues(s.cluster, s.resource.GVR.Resource).Observe(now.Sub(batch[i].received).Seconds())
			delta += batch[i].added
			bytes += batch[i].size.least
		}
		s.mu.Lock()
		s.pending = s.pending[n:]
		s.pendingBytes -= bytes
		s.status.Count += delta
		if s.status.State == clusterv1alpha1.SyncStateError {
			s.status.State, s.status.LastError = clusterv1alpha1.SyncStateSynced, ""
			defer s.onChange()
		}
		s.status.LastSyncTime = now
		count := s.status.Count
		close(s.written)
		s.written = make(chan struct{})
		s.mu.Unlock()
		syncedObjects.WithLabelValues(s.cluster, s.resource.GVR.Resource).Set(float64(count))
	}
}

// enqueue queues a change for storage. While MaxPending changes or
// pendingBytes wait, it holds the watch rather than grow without bound,
// until storage catches up or Run's context ends: then the change is
// dropped, as Run drops what is pending.
func (s *Synchronizer) enqueue(obj any, deleted bool, added int64) error {
	u, admitted, err := s.object(obj)
	if err != nil {
		return err
	}
	change := upsert(u)
	typ := "update"
	var gone string // why an object the member sends is not kept
	switch {
	case deleted:
	case !admitted:
		gone = "filtered"
	case s.expired(u, time.Now()):
		gone = "expired"
	}
	switch {
	case gone != "":
		if added > 0 {
			syncEvents.WithLabelValues(s.cluster, s.resource.GVR.Resource, gone).Inc()
			return nil // never stored
		}
		// An update that leaves the object out (an Event as old as that, or
		// one the filter does not keep): what is stored goes.
		change, typ, added = pendingChange{change: storage.DeleteAt(u.GetNamespace(), u.GetName(), u.GetResourceVersion())}, gone, -1
	case deleted:
		// At the deleted object's resourceVersion, so that a delete arriving
		// late cannot remove a newer object of the same name.
		change, typ = pendingChange{change: storage.DeleteAt(u.GetNamespace(), u.GetName(), u.GetResourceVersion())}, "delete"
	case added > 0:
		typ = "add"
	}
	syncEvents.WithLabelValues(s.cluster, s.resource.GVR.Resource, typ).Inc()
	s.mu.Lock()
	for len(s.pending) >= s.opts.MaxPending || s.pendingBytes >= pendingBytes {
		written := s.written
		s.mu.Unlock()
		s.flushSoon()
		select {
		case <-s.ctx.Done():
			return s.ctx.Err()
		case <-written:
		}
		s.mu.Lock()
	}
	change.received, change.added = time.Now(), added
	s.pending = append(s.pending, change)
	s.pendingBytes += change.size.least
	full := len(s.pending) >= s.opts.BatchSize || s.pendingBytes >= batchBytes
	s.mu.Unlock()
	if full {
		s.flushSoon()
	}
	return nil
}

// flushSoon wakes flushLoop before its interval ends.
func (s *Synchronizer) flushSoon() {
	select {
	case s.wake <- struct{}{}:
	default:
	}
}

// apply writes a batch. Objects larger than MaxObjectBytes are refused
// here; storage writes every other object it can hold and names the ones
// it refuses (NUL characters, invalid UTF-8, overlong values, values the
// database finds too large). Refused objects are skipped, counted and
// logged, never retried with the batch, which would freeze the resource's
// sync on one object.
func (s *Synchronizer) apply(ctx context.Context, batch []pendingChange) error {
	changes := make([]storage.Change, 0, len(batch))
	var refused []storage.RefusedObject
	for _, p := range batch {
		if p.change.Object != nil && !fits(p.change.Object, p.size, s.opts.MaxObjectBytes) {
			refused = append(refused, storage.RefusedObject{NamespacedName: nameOf(p.change), Err: &storage.InvalidError{
				Field: "object", Reason: fmt.Sprintf("its JSON is larger than the %d bytes objects may take (--sync-max-object-bytes)", s.opts.MaxObjectBytes),
			}})
			continue
		}
		changes = append(changes, p.change)
	}
	stored, err := s.write(ctx, changes)
	if err != nil {
		return err
	}
	s.refuse(ctx, append(refused, stored...))
	return nil
}

// write applies changes and returns the objects storage refused. A batch
// storage refuses whole, with an InvalidError (the database refused a
// value, too large or text it cannot hold, without saying whose), is
// written again in halves, down to the objects refused, so that the
// others land. The halves share the batch's objects, which Apply never
// changes, so the batch, still queued, stays as the member sent it for
// when a half fails otherwise and it is written again.
func (s *Synchronizer) write(ctx context.Context, changes []storage.Change) ([]storage.RefusedObject, error) {
	if len(changes) == 0 {
		return nil, nil
	}
	_, err := s.store.ForCluster(s.cluster, s.epoch).Apply(ctx, s.resource.GVR, changes)
	var some *storage.InvalidObjectError
	var whole *storage.InvalidError
	switch {
	case errors.As(err, &some): // before InvalidError, which it unwraps to
		return some.Refused, nil
	case !errors.As(err, &whole):
		return nil, err
	case len(changes) == 1:
		return []storage.RefusedObject{{NamespacedName: nameOf(changes[0]), Err: whole}}, nil
	}
	half := len(changes) / 2
	first, err := s.write(ctx, changes[:half])
	if err != nil {
		return nil, err
	}
	rest, err := s.write(ctx, changes[half:])
	if err != nil {
		return nil, err
	}
	return append(first, rest...), nil
}

func nameOf(c storage.Change) storage.NamespacedName {
	return storage.NamespacedName{Namespace: c.Namespace, Name: c.Name}
}

// refuse counts, names and logs the objects refused by a write.
func (s *Synchronizer) refuse(ctx context.Context, refused []storage.RefusedObject) {
	if len(refused) == 0 {
		return
	}
	for _, r := range refused {
		syncErrors.WithLabelValues(s.cluster, s.resource.GVR.Resource).Inc()
		log.FromContext(ctx).Error(r.Err, "skipping an object storage cannot hold", "namespace", r.Namespace, "name", r.Name)
	}
	s.mu.Lock()
	s.status.Refused += int64(len(refused))
	s.status.LastRefused = (&storage.InvalidObjectError{Refused: refused}).Error()
	s.mu.Unlock()
	s.onChange()
}

// listStreamedToStorage is the reflector's lister and watcher. Its lists
// are written to storage as they arrive (see list), so it declines the
// watch-list stream, which the reflector would gather whole in memory.
type listStreamedToStorage struct{ *cache.ListWatch }

func (listStreamedToStorage) IsWatchListSemanticsUnSupported() bool { return true }

// list makes storage equal to the member, a page at a time: upserts of what
// changed, by member resourceVersion, and, after the last page, deletes of
// what the member no longer has, as of the list's resourceVersion. It
// returns an empty list at that resourceVersion, from which the reflector
// watches. Memory is bounded by a few pages, each sized to about pageBytes
// (pageLimit), and an index of the stored member resourceVersions, never
// the whole member; objects whose resourceVersion is unchanged are not
// rewritten, so a restart costs one read of that index, and one query of
// the label DroppedFieldsLabel.
//
// Unless storage holds objects of the scope stored under other dropFields
// than the filter's (storedOtherwise): then every object listed is sent
// as a rewrite (storage.Rewrite), stored as it is now even at the stored
// member resourceVersion, and watchers see it MODIFIED, never deleted.
// The label on each stored object is what decides, not a memory of the
// filter before: a synchronizer stopped before its list had rewritten
// everything (its process ended, say) leaves objects with the old mark,
// and the next one's list, in whatever process, rewrites again. The
// objects the stopped one did rewrite are written a second time, which
// only a list cut short costs.
//
// A page is written while the next one is fetched and decoded: one after
// the other, the sync took the member's list time plus the writes'
// (BenchmarkInitialSync), when the two can overlap. The pages of one list hold
// each key once, so the order their writes land in does not matter.
//
// ri lists namespace ns ("" for the whole resource) under the filter, so a
// relist under a changed filter converges: what it no longer lists is
// deleted, what it now lists is added, the rest is not rewritten. The list
// of one namespace of a filter's also deletes what is stored of the
// namespaces the filter no longer has; that of the others it leaves to
// their own lists and watches.
func (s *Synchronizer) list(ctx context.Context, ri dynamic.ResourceInterface, ns string) (runtime.Object, error) {
	// A watch that resumes where it was needs none: a list after the first
	// says the member, or the way to it, lost the watch's place.
	syncLists.WithLabelValues(s.cluster, s.resource.GVR.Resource).Inc()
	log.FromContext(ctx).Info("listing the member in full", "namespace", ns)
	if err := s.flush(ctx); err != nil {
		return nil, err
	}
	s.flushing.Lock()
	defer s.flushing.Unlock()
	stored, err := s.store.MemberVersions(ctx, s.cluster, s.resource.GVR)
	if err != nil {
		return nil, fmt.Errorf("reading stored versions: %w", err)
	}
	rewrite, err := s.storedOtherwise(ctx, ns)
	if err != nil {
		return nil, fmt.Errorf("reading the fields dropped of stored objects: %w", err)
	}
	// The list writes alone (it holds flushing): what is stored after it
	// is what was, with its adds and without its deletes.
	storedBefore := int64(len(stored))
	var outside []pendingChange
	for k, rv := range stored {
		switch {
		case !s.resource.Filter.keeps(k.Namespace):
			outside = append(outside, pendingChange{change: storage.DeleteAt(k.Namespace, k.Name, rv)})
			delete(stored, k)
		case ns != metav1.NamespaceAll && k.Namespace != ns:
			delete(stored, k) // another namespace's list's
		}
	}
	// What storage refuses is never stored, so every list meets it again:
	// counted anew by this one.
	s.mu.Lock()
	s.status.Refused, s.status.LastRefused = 0, ""
	s.mu.Unlock()
	pages := make(chan []pendingChange, listPagesAhead)
	g, gctx := errgroup.WithContext(ctx)
	g.Go(func() error {
		for changes := range pages {
			if err := gctx.Err(); err != nil {
				return err // the list failed, or Run is stopping
			}
			if err := s.applyBatches(gctx, changes); err != nil {
				return err
			}
		}
		return nil
	})
	var listed listed
	g.Go(func() error {
		defer close(pages)
		write := func(changes []pendingChange) error {
			select {
			case pages <- changes:
				return nil
			case <-gctx.Done():
				return gctx.Err()
			}
		}
		if len(outside) > 0 {
			if err := write(outside); err != nil {
				return err
			}
		}
		var err error
		listed, err = s.listChanges(gctx, ri, stored, rewrite, write)
		return err
	})
	if err := g.Wait(); err != nil {
		return nil, err
	}
	// Objects storage refused are counted as if stored: the count is of
	// what the member has, as a watch's adds and deletes count it.
	count := storedBefore + listed.added - listed.deleted - int64(len(outside))
	syncedObjects.WithLabelValues(s.cluster, s.resource.GVR.Resource).Set(float64(count))
	s.mu.Lock()
	s.removed[ns] = listed.deleted + int64(len(outside))
	s.status.LastListRemoved = 0
	for _, n := range s.removed {
		s.status.LastListRemoved += n
	}
	// Synced once every namespace of the filter is listed.
	state := clusterv1alpha1.SyncStateSyncing
	if len(s.removed) == len(s.resource.Filter.scopes()) {
		state = clusterv1alpha1.SyncStateSynced
	}
	// Refusals stay: this list's own, counted as its pages were written.
	s.status.State, s.status.Count, s.status.LastError, s.status.LastSyncTime = state, count, "", time.Now()
	s.mu.Unlock()
	s.onChange()
	return &unstructured.UnstructuredList{Object: map[string]any{
		"apiVersion": "v1", "kind": "List", "metadata": map[string]any{"resourceVersion": listed.resourceVersion},
	}}, nil
}

// listPagesAhead is how many pages' changes may wait for storage while the
// member's list goes on.
const listPagesAhead = 1

// listed is what a list found: how many objects it listed that were not
// stored, how many stored ones it did not list, and its resourceVersion.
type listed struct {
	added, deleted  int64
	resourceVersion string
}

// storedOtherwise reports whether storage holds an object of scope ns
// ("" for the whole resource) stored under other dropFields than the
// filter's: one whose DroppedFieldsLabel is not the filter's mark.
func (s *Synchronizer) storedOtherwise(ctx context.Context, ns string) (bool, error) {
	op, values := selection.NotEquals, []string{s.resource.Filter.droppedFieldsMark()}
	if values[0] == "" {
		op, values = selection.Exists, nil
	}
	req, err := labels.NewRequirement(DroppedFieldsLabel, op, values)
	if err != nil {
		return false, err
	}
	q := &storage.ListQuery{GVR: s.resource.GVR, Clusters: []string{s.cluster}, Labels: labels.Requirements{*req}, Limit: 1}
	if ns != metav1.NamespaceAll {
		q.Namespaces = []string{ns}
	}
	page, err := s.store.List(ctx, q)
	if err != nil {
		return false, err
	}
	return len(page.Objects) > 0, nil
}

// listChanges lists the member a page at a time, in a consistent read
// whatever resourceVersion the reflector would relist from, and sends to
// write the changes that make stored (the stored member resourceVersions,
// which it consumes) equal to each page, then the deletes of what the
// member no longer has. With rewrite, every object listed is sent, as a
// rewrite.
func (s *Synchronizer) listChanges(ctx context.Context, ri dynamic.ResourceInterface, stored map[storage.NamespacedName]string, rewrite bool, write func([]pendingChange) error) (listed, error) {
	var added int64
	largest := 0 // of the objects listed
	opts := s.resource.Filter.listOptions(metav1.ListOptions{Limit: s.pageLimit(largest)})
	for {
		page, err := ri.List(ctx, opts)
		if err != nil {
			return listed{}, err
		}
		var changes []pendingChange
		now := time.Now()
		for i := range page.Items {
			u, admitted, _ := s.object(&page.Items[i])
			if !admitted || s.expired(u, now) {
				// As if the member had it no more: deleted below if stored.
				continue
			}
			k := storage.NamespacedName{Namespace: u.GetNamespace(), Name: u.GetName()}
			change := upsert(u)
			change.change.Rewrite, change.change.Listed = rewrite, true
			largest = max(largest, change.size.least)
			v, ok := stored[k]
			if !ok {
				added++
			}
			if !ok || v != u.GetResourceVersion() || rewrite {
				changes = append(changes, change)
			}
			delete(stored, k)
		}
		if len(changes) > 0 {
			if err := write(changes); err != nil {
				return listed{}, err
			}
		}
		syncEvents.WithLabelValues(s.cluster, s.resource.GVR.Resource, "list").Add(float64(len(page.Items)))
		if opts.Continue = page.GetContinue(); opts.Continue != "" {
			opts.Limit = s.pageLimit(largest)
			continue
		}
		listRV := page.GetResourceVersion()
		deletes := make([]pendingChange, 0, len(stored))
		for k := range stored {
			deletes = append(deletes, pendingChange{change: storage.DeleteAt(k.Namespace, k.Name, listRV)})
		}
		if len(deletes) > 0 {
			if err := write(deletes); err != nil {
				return listed{}, err
			}
		}
		return listed{added: added, deleted: int64(len(deletes)), resourceVersion: listRV}, nil
	}
}

// pageLimit is the limit of a list's next page: as many objects as fit in
// pageBytes if each is as large as the largest listed so far, or before
// any is, as large as MaxObjectBytes allows; at least one, at most
// PageSize. A member's objects are mostly small, and a list's first page
// costs a request more then; a member of large objects gets pages that
// hold about pageBytes, unless its objects grow as it is listed.
func (s *Synchronizer) pageLimit(largest int) int64 {
	if largest == 0 {
		largest = s.opts.MaxObjectBytes
	}
	return min(max(int64(pageBytes/largest), 1), s.opts.PageSize)
}

// applyBatches writes changes a batch (batchLen) at a time.
func (s *Synchronizer) applyBatches(ctx context.Context, changes []pendingChange) error {
	for len(changes) > 0 {
		n := batchLen(changes, s.opts.BatchSize)
		if err := s.apply(ctx, changes[:n]); err != nil {
			return fmt.Errorf("writing to storage: %w", err)
		}
		changes = changes[n:]
	}
	return nil
}

// object strips what is not worth storing.
//
// admitted says whether the filter keeps the object as the member sent it,
// before fields are dropped (Filter.admits).
func (s *Synchronizer) object(obj any) (u *unstructured.Unstructured, admitted bool, err error) {
	if d, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = d.Obj
	}
	u, ok := obj.(*unstructured.Unstructured)
	if !ok {
		return nil, false, fmt.Errorf("unexpected object %T", obj)
	}
	admitted = s.resource.Filter.admits(u)
	if !s.opts.KeepManagedFields {
		u.SetManagedFields(nil)
	}
	// Before anything reads the object: what is dropped is never stored,
	// nor compared.
	s.resource.Filter.dropFrom(u.Object)
	s.resource.Filter.markDropped(u)
	switch {
	case s.resource.GVR == storage.SecretsResource && !s.resource.KeepSecretData:
		// The same rule as storage's for what it already holds.
		storage.StripSecretData(u.Object)
	case !s.opts.KeepLastApplied:
		// kubectl apply's second copy of the object, dropped by default.
		if ann := u.GetAnnotations(); ann[storage.LastAppliedAnnotation] != "" {
			delete(ann, storage.LastAppliedAnnotation)
			u.SetAnnotations(ann)
		}
	}
	if u.GetKind() == "" {
		u.SetGroupVersionKind(s.resource.GVR.GroupVersion().WithKind(s.resource.Kind))
	}
	return u, admitted, nil
}

func (s *Synchronizer) setState(state, lastError string) {
	s.mu.Lock()
	changed := s.status.State != state || s.status.LastError != lastError
	s.status.State, s.status.LastError = state, lastError
	s.mu.Unlock()
	if changed {
		s.onChange()
	}
}

// reflectorSink is the store the reflector writes into.
type reflectorSink Synchronizer

func (r *reflectorSink) Add(obj any) error    { return (*Synchronizer)(r).enqueue(obj, false, 1) }
func (r *reflectorSink) Update(obj any) error { return (*Synchronizer)(r).enqueue(obj, false, 0) }
func (r *reflectorSink) Delete(obj any) error { return (*Synchronizer)(r).enqueue(obj, true, -1) }

// Replace follows a list, which list has already written to storage.
func (r *reflectorSink) Replace(items []any, _ string) error {
	if len(items) > 0 {
		return fmt.Errorf("a list of %d objects not written by the synchronizer's lister", len(items))
	}
	return nil
}
func (r *reflectorSink) Resync() error { return nil }
