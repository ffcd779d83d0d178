package sharding

import (
	"github.com/prometheus/client_golang/prometheus"
	"sigs.k8s.io/controller-runtime/pkg/metrics"

	"github.com/panorama-io/panorama/internal/deprecatedmetric"
)

var (
	shardsHeld = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "panorama_controller_shards_held",
		Help: "Shards whose Lease the replica holds.",
	}, []string{"replica"})
	clusterOwner = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "panorama_controller_cluster_owner",
		Help: "1 for each cluster the replica syncs, as the holder of its shard.",
	}, []string{"cluster", "replica"})
)

func init() {
	metrics.Registry.MustRegister(shardsHeld, clusterOwner,
		deprecatedmetric.Renamed("panorama_shards_held", "panorama_controller_shards_held", []string{"replica"}, shardsHeld),
		deprecatedmetric.Renamed("panorama_cluster_owner", "panorama_controller_cluster_owner", []string{"cluster", "replica"}, clusterOwner))
}

// Syncing records whether this replica syncs cluster.
func (c *Coordinator) Syncing(cluster string, syncing bool) {
	if syncing {
		clusterOwner.WithLabelValues(cluster, c.opts.Identity).Set(1)
	} else {
		clusterOwner.DeleteLabelValues(cluster, c.opts.Identity)
	}
}
