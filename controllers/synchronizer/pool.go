package synchronizer

import (
	"context"
	"errors"
	"fmt"
	"sync"

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
}

// ErrStopped is returned by Ensure after StopAll.
var ErrStopped = errors.New("the synchronizer pool is stopped")

type clusterSyncs struct {
	config string // identity of the connection: a change restarts everything
	syncs  map[schema.GroupVersionResource]*running
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
	return &Pool{store: store, opts: opts, onChange: onChange, clusters: map[string]*clusterSyncs{}}
}

// Ensure makes the cluster's synchronizers exactly resources: it starts the
// missing ones, and stops the ones no longer wanted and removes their
// objects from storage. configID identifies the connection; when it changes
// every synchronizer restarts (their objects stay).
func (p *Pool) Ensure(ctx context.Context, cluster, configID string, client dynamic.Interface, resources []Resource) error {
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
	if cs.config != configID {
		for gvr, r := range cs.syncs {
			restart = append(restart, r)
			delete(cs.syncs, gvr)
		}
		cs.config = configID
	}
	want := map[schema.GroupVersionResource]Resource{}
	for _, res := range resources {
		want[res.GVR] = res
	}
	// A resource whose objects are now stored differently (Secret data kept
	// or dropped) is removed and synced afresh: a resumed synchronizer would
	// not rewrite the unchanged objects.
	var removed []*running
	for gvr, r := range cs.syncs {
		if res, ok := want[gvr]; !ok || res != r.resource {
			removed = append(removed, r)
			delete(cs.syncs, gvr)
		}
	}
	p.mu.Unlock()

	for _, r := range restart {
		stop(r)
	}
	for _, r := range removed {
		stop(r)
		if _, err := p.store.DeleteResource(ctx, cluster, r.resource.GVR); err != nil {
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
	for _, res := range resources {
		if _, ok := cs.syncs[res.GVR]; !ok {
			cs.syncs[res.GVR] = p.start(cluster, res, client)
		}
	}
	return nil
}

func (p *Pool) start(cluster string, res Resource, client dynamic.Interface) *running {
	ctx, cancel := context.WithCancel(log.IntoContext(context.Background(), p.logger))
	r := &running{
		sync:     New(cluster, res, client, p.store, p.opts, func() { p.onChange(cluster) }),
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
}

// StopAll stops every synchronizer, each after writing what it has
// pending; objects stay in storage.
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
