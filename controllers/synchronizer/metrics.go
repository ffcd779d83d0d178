package synchronizer

import (
	"github.com/prometheus/client_golang/prometheus"
	"sigs.k8s.io/controller-runtime/pkg/metrics"

	"github.com/panorama-io/panorama/internal/deprecatedmetric"
)

var (
	syncEvents = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "panorama_sync_events_total",
		Help: "Changes received from member clusters, by cluster, resource and type.",
	}, []string{"cluster", "resource", "type"})
	syncErrors = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "panorama_sync_errors_total",
		Help: "List, watch and storage errors while syncing, by cluster and resource.",
	}, []string{"cluster", "resource"})
	syncLists = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "panorama_sync_lists_total",
		Help: "Full lists of a member's objects, by cluster and resource: the first of each resource, then one for each watch that could not resume where it was.",
	}, []string{"cluster", "resource"})
	syncLag = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    "panorama_sync_lag_seconds",
		Help:    "Time from receiving a member change to committing it to storage.",
		Buckets: prometheus.ExponentialBuckets(0.005, 2, 14),
	}, []string{"cluster", "resource"})
	syncedObjects = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "panorama_sync_objects",
		Help: "Objects stored, by cluster and resource.",
	}, []string{"cluster", "resource"})
	syncedObjectsRenamed = deprecatedmetric.Renamed("panorama_synced_objects", "panorama_sync_objects", []string{"cluster", "resource"}, syncedObjects)
)

func init() {
	metrics.Registry.MustRegister(Collectors()...)
}

// Collectors are the synchronizers' metrics, for a registry other than
// controller-runtime's too (the all-in-one binary serves the API server's).
func Collectors() []prometheus.Collector {
	return []prometheus.Collector{syncEvents, syncErrors, syncLists, syncLag, syncedObjects, syncedObjectsRenamed}
}

// ForgetCluster drops the series of a cluster no longer synced, so that
// dashboards stop showing its last object counts.
func ForgetCluster(cluster string) {
	for _, v := range []*prometheus.MetricVec{syncEvents.MetricVec, syncErrors.MetricVec, syncLists.MetricVec, syncLag.MetricVec, syncedObjects.MetricVec} {
		v.DeletePartialMatch(prometheus.Labels{"cluster": cluster})
	}
}
