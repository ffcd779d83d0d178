package synchronizer

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/go-logr/logr"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/panorama-io/panorama/storage"
)

// Pool runs the synchronizers of every cluster.
type Pool struct {
	store    storage.Interface
	opts     Options
	logger   logr.Logger
	onChange func(cluster string)

	mu       sync.Mutex
	clusters map[string]*clusterSyncs
	// stopped is set by StopAll: a reconcile still in flight during shutdown
	// must not start synchronizers that would outlive the process's manager.
	stopped bool

	// sweeping is held by a sweep of orphans, and shared by every Ensure: a
	// sweep judges what is orphaned by the synchronizers running, which must
	// not change until its deletes are done.
	sweeping sync.RWMutex
	// sweepWanted asks SweepOrphans for another sweep.
	sweepWanted chan struct{}
}

// ErrStopped is returned by Ensure after StopAll.
var ErrStopped = errors.New("the synchronizer pool is stopped")

type clusterSyncs struct {
	config string // identity of the connection: a change restarts everything
	syncs  map[schema.GroupVersionResource]*running
	// resolved: the last Selection was complete, so syncs is every resource
	// of the cluster that storage should hold.
	resolved bool

	// epoch is the owner epoch the synchronizers write with
	// (storage.Writer.ForCluster): a change restarts everything too.
	epoch int64
}

// Selection is what one cluster should sync.
type Selection struct {
	Resources []Resource
	// Partial says that some selected resources could not be resolved (a
	// group failed discovery, the CRDs or a shared selection could not be
	// read): synchronizers of resources missing from Resources keep running,
	// and nothing stored of the cluster counts as orphaned.
	Partial bool
}

type running struct {
	sync     *Synchronizer
	resource Resource
	cancel   context.CancelFunc
	done     chan struct{}
}

// NewPool makes a pool of synchronizers, which run until stopped. onChange
// is called with a cluster's name when one of its synchronizers changes state.
func NewPool(store storage.Interface, opts Options, onChange func(cluster string)) *Pool {
	return &Pool{store: store, opts: opts, onChange: onChange, clusters: map[string]*clusterSyncs{}, sweepWanted: make(chan struct{}, 1)}
}

// Ensure makes the cluster's synchronizers exactly the selected resources:
// it starts the missing ones, and stops the ones no longer wanted (unless
// the selection is partial) and removes their objects from storage.
// configID identifies the connection; when it changes every synchronizer
// restarts (their objects stay), as when the owner epoch, which the
// synchronizers write with, does. A synchronizer is always stopped, its last
// storage call returned, before the one replacing it starts: a late write of
// the old one could otherwise bring back an object the new one deleted.
func (p *Pool) Ensure(ctx context.Context, cluster, configID string, epoch int64, client dynamic.Interface, sel Selection) error {
	p.sweeping.RLock()
	defer p.sweeping.RUnlock()
	p.mu.Lock()
	if p.stopped {
		p.mu.Unlock()
		return ErrStopped
	}
	p.logger = log.FromContext(ctx).WithName("synchronizer")
	cs := p.clusters[cluster]
	if cs == nil {
		cs = &clusterSyncs{syncs: map[schema.GroupVersionResource]*running{}}
		p.clusters[cluster] = cs
	}
	var restart []*running
	if cs.config != configID || cs.epoch != epoch {
		for gvr, r := range cs.syncs {
			restart = append(restart, r)
			delete(cs.syncs, gvr)
		}
		cs.config, cs.epoch = configID, epoch
	}
	want := map[schema.GroupVersionResource]Resource{}
	for _, res := range sel.Resources {
		want[res.GVR] = res
	}
	// A resource whose Secret data is now kept or dropped is removed and
	// synced afresh (storedAlike says why). One whose Event retention,
	// filter of what it lists or fields dropped changed only restarts: its
	// list stores what it now keeps and deletes what it no longer does,
	// rewrites in place what was stored under other dropFields
	// (Synchronizer.list), and leaves the rest as stored.
	var removed []*running
	for gvr, r := range cs.syncs {
		res, ok := want[gvr]
		switch {
		case (!ok && !sel.Partial) || (ok && !res.storedAlike(r.resource)):
			removed = append(removed, r)
			delete(cs.syncs, gvr)
		case ok && !res.equal(r.resource):
			restart = append(restart, r)
			delete(cs.syncs, gvr)
		}
	}
	newlyResolved := !sel.Partial && !cs.resolved
	cs.resolved = !sel.Partial
	p.mu.Unlock()

	for _, r := range restart {
		stop(r)
	}
	for _, r := range removed {
		stop(r)
		if _, err := p.store.ForCluster(cluster, epoch).DeleteResource(ctx, r.resource.GVR); err != nil {
			return fmt.Errorf("removing %s of %s: %w", r.resource.GVR, cluster, err)
		}
		log.FromContext(ctx).Info("stopped syncing", "cluster", cluster, "resource", r.resource.GVR.String())
	}

	p.mu.Lock()
	defer p.mu.Unlock()
	if p.stopped {
		return ErrStopped
	}
	if p.clusters[cluster] != cs {
		return nil // stopped meanwhile
	}
	for _, res := range sel.Resources {
		if _, ok := cs.syncs[res.GVR]; !ok {
			cs.syncs[res.GVR] = p.start(cluster, res, client, epoch)
		}
	}
	if newlyResolved {
		// What is stored of the cluster beyond its selection, deselected while
		// no synchronizer ran, can only now be told orphaned.
		p.wantSweep()
	}
	return nil
}

func (p *Pool) start(cluster string, res Resource, client dynamic.Interface, epoch int64) *running {
	ctx, cancel := context.WithCancel(log.IntoContext(context.Background(), p.logger))
	r := &running{
		sync:     New(cluster, epoch, res, client, p.store, p.opts, func() { p.onChange(cluster) }),
		resource: res, cancel: cancel, done: make(chan struct{}),
	}
	go func() {
		defer close(r.done)
		r.sync.Run(ctx)
	}()
	return r
}

func stop(r *running) {
	r.cancel()
	<-r.done
}

// Stop stops every synchronizer of cluster; its objects stay in storage.
func (p *Pool) Stop(cluster string) {
	p.mu.Lock()
	cs := p.clusters[cluster]
	delete(p.clusters, cluster)
	p.mu.Unlock()
	if cs == nil {
		return
	}
	for _, r := range cs.syncs {
		stop(r)
	}
	// A cluster whose Cluster is gone without its finalizer leaves orphans.
	p.wantSweep()
}

// StopAll stops every synchronizer, each once its storage call in flight
// has returned; objects stay in storage.
func (p *Pool) StopAll() {
	p.mu.Lock()
	p.stopped = true
	names := make([]string, 0, len(p.clusters))
	for name := range p.clusters {
		names = append(names, name)
	}
	p.mu.Unlock()
	for _, name := range names {
		p.Stop(name)
	}
}

// Statuses returns the state of each synchronizer of cluster.
func (p *Pool) Statuses(cluster string) map[Resource]Status {
	p.mu.Lock()
	defer p.mu.Unlock()
	out := map[Resource]Status{}
	if cs := p.clusters[cluster]; cs != nil {
		for _, r := range cs.syncs {
			out[r.resource] = r.sync.Status()
		}
	}
	return out
}

func (p *Pool) wantSweep() {
	select {
	case p.sweepWanted <- struct{}{}:
	default:
	}
}

// sweepRetry is how soon a failed sweep of orphans is tried again.
const sweepRetry = 10 * time.Second

// SweepOrphans removes from storage what no cluster selects any more: every
// resource of a cluster that does not exist (deleted while no controller
// ran), and every resource of a resolved cluster beyond the ones it syncs
// (deselected meanwhile). What is stored of a cluster whose resources are
// not known in full (not running: paused, unreachable, refused; or its last
// selection partial) is kept. clusters lists the clusters that exist. It
// sweeps at once, then each time a cluster becomes resolved or stops, until
// ctx ends.
//
// Another replica may take a cluster over while a sweep runs: the deletes
// of a cluster this pool syncs carry the owner epoch its synchronizers
// write with, and those of a cluster that does not exist carry the epoch
// storage had for it before clusters was called (storage.Owner.Epochs).
// Storage skips them once the epoch moved on, so nothing is removed that a
// new owner, or the first owner of a cluster created since, wrote.
func (p *Pool) SweepOrphans(ctx context.Context, clusters func(context.Context) ([]string, error)) {
	logger := log.FromContext(ctx).WithName("orphans")
	p.wantSweep()
	for {
		select {
		case <-ctx.Done():
			return
		case <-p.sweepWanted:
		}
		if err := p.sweep(ctx, clusters); err != nil {
			if ctx.Err() != nil {
				return
			}
			logger.Error(err, "sweeping orphaned objects")
			select {
			case <-ctx.Done():
				return
			case <-time.After(sweepRetry):
				p.wantSweep()
			}
		}
	}
}

func (p *Pool) sweep(ctx context.Context, clusters func(context.Context) ([]string, error)) error {
	p.sweeping.Lock()
	defer p.sweeping.Unlock()
	epochs, err := p.store.Epochs(ctx)
	if err != nil {
		return fmt.Errorf("reading owner epochs: %w", err)
	}
	names, err := clusters(ctx)
	if err != nil {
		return fmt.Errorf("listing clusters: %w", err)
	}
	keep := p.keep(names, epochs)
	_, err = p.store.DeleteOrphans(ctx, keep, epochs)
	return err
}

// keep is what a sweep keeps: the resources each resolved cluster syncs
// and its OpenAPI documents, and everything of every other cluster that exists (a zero GVR keeps all of
// a cluster's resources). It sets the epochs of the clusters synced to
// those their synchronizers write with.
func (p *Pool) keep(existing []string, epochs map[string]int64) []storage.ClusterResource {
	p.mu.Lock()
	defer p.mu.Unlock()
	var keep []storage.ClusterResource
	for name, cs := range p.clusters {
		epochs[name] = cs.epoch
		if !cs.resolved {
			keep = append(keep, storage.ClusterResource{Cluster: name})
			continue
		}
		for gvr := range cs.syncs {
			keep = append(keep, storage.ClusterResource{Cluster: name, GVR: gvr})
		}
		// Written by the reconciler itself, for the resources synced.
		keep = append(keep, storage.ClusterResource{Cluster: name, GVR: storage.OpenAPIResource})
	}
	for _, name := range existing {
		if cs := p.clusters[name]; cs == nil {
			keep = append(keep, storage.ClusterResource{Cluster: name})
		}
	}
	return keep
}
