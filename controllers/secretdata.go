package controllers

import (
	"context"
	"fmt"
	"slices"
	"sync"

	clusterv1alpha1 "github.com/panorama-io/panorama/apis/cluster/v1alpha1"
	"github.com/panorama-io/panorama/controllers/synchronizer"
	"github.com/panorama-io/panorama/storage"
)

// secretDataDrops has storage drop the contents of a cluster's Secrets
// from everything it keeps of them (storage.ClusterWriter.DropSecretData)
// whenever the Cluster does not keep them: secretData is Drop, or its
// selection, known in full, has no Secrets. The pool removes and syncs
// afresh the Secrets of a Cluster whose secretData changes while it runs,
// but the states they had stay in the log and history; and a Cluster
// changed while no controller ran still has its Secrets stored with
// their data, which a resumed synchronizer does not write again.
//
// Storage goes over only what was written since its last call for the
// cluster, and a call that fails is finished by the next; what is
// remembered here spares even that scan: a cluster is dropped once per
// owner epoch (a process start, a shard or the leadership taken over),
// and again whenever it kept its Secrets' data in between. A status field
// would say no more and cost a write; an annotation, which the Cluster's
// author may edit, could say it wrongly.
type secretDataDrops struct {
	mu sync.Mutex
	// dropped maps a cluster to the owner epoch it was last dropped with.
	dropped map[string]int64
	// deselected holds the clusters whose last selection, known in full,
	// has no Secrets.
	deselected map[string]bool
}

// resolved notes whether sel, the cluster's selection, leaves Secrets
// out for certain.
func (d *secretDataDrops) resolved(cluster string, sel synchronizer.Selection) {
	selected := slices.ContainsFunc(sel.Resources, func(r synchronizer.Resource) bool { return r.GVR == storage.SecretsResource })
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.deselected == nil {
		d.deselected = map[string]bool{}
	}
	if sel.Partial || selected {
		delete(d.deselected, cluster)
	} else {
		d.deselected[cluster] = true
	}
}

// drop has storage drop c's Secret data, under the owner epoch epoch,
// unless c keeps it or that was done with that epoch and not kept since.
func (d *secretDataDrops) drop(ctx context.Context, store storage.Interface, c *clusterv1alpha1.Cluster, epoch int64) error {
	d.mu.Lock()
	keep := c.Spec.SecretData == clusterv1alpha1.SecretDataKeep && !d.deselected[c.Name]
	last, done := d.dropped[c.Name]
	if keep {
		delete(d.dropped, c.Name)
	}
	d.mu.Unlock()
	if keep || (done && last == epoch) {
		return nil
	}
	if err := store.ForCluster(c.Name, epoch).DropSecretData(ctx); err != nil {
		return fmt.Errorf("dropping the Secrets' data from storage: %w", err)
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.dropped == nil {
		d.dropped = map[string]int64{}
	}
	d.dropped[c.Name] = epoch
	return nil
}

// forget drops what is remembered of a deleted cluster.
func (d *secretDataDrops) forget(cluster string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	delete(d.dropped, cluster)
	delete(d.deselected, cluster)
}
