package synchronizer

import (
	"github.com/prometheus/client_golang/prometheus"
	"sigs.k8s.io/controller-runtime/pkg/metrics"
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
	syncLag = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    "panorama_sync_lag_seconds",
		Help:    "Time from receiving a member change to committing it to storage.",
		Buckets: prometheus.ExponentialBuckets(0.005, 2, 14),
	}, []string{"cluster", "resource"})
	syncedObjects = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "panorama_synced_objects",
		Help: "Objects stored, by cluster and resource.",
	}, []string{"cluster", "resource"})
)

func init() {
	metrics.Registry.MustRegister(syncEvents, syncErrors, syncLag, syncedObjects)
}
