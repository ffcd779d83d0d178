package controllers

import (
	"context"
	"sync"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/keymutex"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/log"

	clusterv1alpha1 "github.com/panorama-io/panorama/apis/cluster/v1alpha1"
	"github.com/panorama-io/panorama/controllers/sharding"
	"github.com/panorama-io/panorama/storage"
)

// owners is what a replica knows of the clusters it syncs: sharded, the
// shards it holds (sharding.Coordinator); and, per cluster it has started
// to sync since it came to hold the cluster's shard, or since it became the
// leader, the owner epoch storage gave it, which its writes of the cluster
// carry. A leader that lost its lease (paused, cut off from the host) may
// still have a write on its way, as a sharded replica may: the new
// leader's epochs fence it off.
type owners struct {
	coord *sharding.Coordinator // nil: unsharded, the leader syncs every cluster
	// elected is closed once this replica leads, unsharded.
	elected <-chan struct{}
	store   storage.Owner

	// taking is held per cluster while its ownership is taken in storage
	// or forgotten, so that forgetting waits for an epoch on its way; one
	// lock of all would have every Cluster's first reconcile wait for the
	// others' storage writes (BenchmarkFleetReconcile's block profile).
	taking keymutex.KeyMutex

	mu     sync.Mutex
	epochs map[string]int64
}

// takingLocks is how many locks the clusters' names hash to.
const takingLocks = 64

// DefaultShardLeaseName prefixes the sharding Leases when no name is given.
const DefaultShardLeaseName = "panorama-controller-manager"

func (o *owners) setup(mgr ctrl.Manager, store storage.Owner, opts sharding.Options, onChange func(context.Context, int)) error {
	if opts.Name == "" {
		opts.Name = DefaultShardLeaseName
	}
	if opts.Namespace == "" {
		opts.Namespace = podNamespace()
	}
	kc, err := kubernetes.NewForConfig(mgr.GetConfig())
	if err != nil {
		return err
	}
	coord, err := sharding.New(kc, opts, onChange)
	if err != nil {
		return err
	}
	o.coord, o.store, o.epochs, o.taking = coord, store, map[string]int64{}, keymutex.NewHashed(takingLocks)
	return mgr.Add(coord)
}

// setupUnsharded fences the leader's writes: the reconciler runs only on
// the leader, which takes each cluster over at its first reconcile, and a
// lost lease ends the manager, so its epochs are taken anew by the next
// leader.
func (o *owners) setupUnsharded(store storage.Owner, elected <-chan struct{}) {
	o.store, o.elected, o.epochs, o.taking = store, elected, map[string]int64{}, keymutex.NewHashed(takingLocks)
}

func (o *owners) sharded() bool { return o.coord != nil }

// owns reports whether this replica syncs cluster: sharded, whether it
// holds the cluster's shard; else whether it leads.
func (o *owners) owns(cluster string) bool {
	if o.sharded() {
		return o.coord.Owns(cluster)
	}
	select {
	case <-o.elected:
		return true
	default:
		return false
	}
}

// epoch returns this replica's owner epoch of cluster, taking ownership in
// storage the first time since it came to hold the cluster's shard (or
// became the leader); owned is false when it does not hold it.
func (o *owners) epoch(ctx context.Context, cluster string) (epoch int64, owned bool, err error) {
	if o.sharded() && !o.coord.Owns(cluster) {
		return 0, false, nil
	}
	o.mu.Lock()
	e, ok := o.epochs[cluster]
	o.mu.Unlock()
	if ok {
		return e, true, nil
	}
	o.taking.LockKey(cluster)
	defer func() { _ = o.taking.UnlockKey(cluster) }()
	o.mu.Lock()
	e, ok = o.epochs[cluster]
	o.mu.Unlock()
	if ok {
		return e, true, nil
	}
	e, err = o.store.Own(ctx, cluster)
	if err != nil {
		return 0, true, err
	}
	log.FromContext(ctx).Info("took the cluster over", "epoch", e)
	o.mu.Lock()
	defer o.mu.Unlock()
	o.epochs[cluster] = e
	if o.sharded() {
		o.coord.Syncing(cluster, true)
	}
	return e, true, nil
}

// forget drops cluster's epoch: syncing it again takes ownership anew.
func (o *owners) forget(cluster string) {
	o.taking.LockKey(cluster)
	defer func() { _ = o.taking.UnlockKey(cluster) }()
	o.mu.Lock()
	defer o.mu.Unlock()
	if _, ok := o.epochs[cluster]; ok {
		delete(o.epochs, cluster)
		if o.sharded() {
			o.coord.Syncing(cluster, false)
		}
	}
}

// inShard lists the clusters of shard that have an epoch.
func (o *owners) inShard(shard int) []string {
	o.mu.Lock()
	defer o.mu.Unlock()
	var out []string
	for name := range o.epochs {
		if o.coord.Shard(name) == shard {
			out = append(out, name)
		}
	}
	return out
}

// stop stops syncing cluster here; what is stored of it stays.
func (r *ClusterReconciler) stop(cluster string) {
	r.Pool.Stop(cluster)
	forgetCluster(cluster)
	r.openAPI.forget(cluster)
	r.checks.forget(cluster)
	r.discovered.forget(cluster)
	r.owners.forget(cluster)
	if r.Tunnels != nil {
		// Its agent reconnects, and reaches the replica that syncs it.
		r.Tunnels.Close(cluster)
	}
}

// shardChanged is called when this replica comes to hold a shard or stops
// holding it. The clusters it synced of the shard stop at once, whichever
// it is: a shard lost and held again is taken with new epochs. Then each
// Cluster of the shard is reconciled, to start or to step back.
func (r *ClusterReconciler) shardChanged(ctx context.Context, shard int) {
	for _, name := range r.owners.inShard(shard) {
		r.stop(name)
	}
	if ctx.Err() != nil {
		return // shutting down
	}
	names, err := r.clusterNames(ctx)
	if err != nil {
		log.FromContext(ctx).Error(err, "listing the Clusters of a shard", "shard", shard)
		return
	}
	for _, name := range names {
		if r.owners.coord.Shard(name) != shard {
			continue
		}
		select {
		case r.events <- event.TypedGenericEvent[*clusterv1alpha1.Cluster]{Object: &clusterv1alpha1.Cluster{ObjectMeta: metav1.ObjectMeta{Name: name}}}:
		case <-ctx.Done():
			return
		}
	}
}
