package apiserver

import (
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/component-base/metrics/legacyregistry"
)

// Panorama's reads are served by its own handler, not by the generic API
// server's REST installer, so the apiserver_request_* metrics never see
// them: these are theirs. Labels come from registered resources only, so
// no client input widens them.
var (
	requestDuration = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    "panorama_request_duration_seconds",
		Help:    "Time to answer a get or list of stored objects, by verb, group, resource and HTTP code.",
		Buckets: prometheus.ExponentialBuckets(0.001, 2, 16),
	}, []string{"verb", "group", "resource", "code"})
	watches = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "panorama_watches",
		Help: "Watches open, by group and resource.",
	}, []string{"group", "resource"})
)

func init() { legacyregistry.Registerer().MustRegister(requestDuration, watches) }

// replicaLagger is a store that reads from a replica (sqlstore.Replicated).
type replicaLagger interface {
	ReplicaLag() (revisions int64, seconds float64)
	Fallbacks() int64
}

var (
	lagOnce sync.Once
	// lagStore is the replica-reading store of the latest server built.
	lagStore atomic.Pointer[replicaLagger]
)

// exportReplicaLag exports the lag of the replica store reads from, if it
// reads from one.
func exportReplicaLag(store any) {
	l, ok := store.(replicaLagger)
	if !ok {
		return
	}
	lagStore.Store(&l)
	lagOnce.Do(func() {
		lag := func(f func(l replicaLagger) float64) func() float64 {
			return func() float64 { return f(*lagStore.Load()) }
		}
		legacyregistry.Registerer().MustRegister(
			prometheus.NewGaugeFunc(prometheus.GaugeOpts{
				Name: "panorama_storage_replica_lag_seconds",
				Help: "How long ago the oldest commit the read replica (--storage-read-dsn) has not replayed was made; 0 when it has replayed all.",
			}, lag(func(l replicaLagger) float64 { _, s := l.ReplicaLag(); return s })),
			prometheus.NewGaugeFunc(prometheus.GaugeOpts{
				Name: "panorama_storage_replica_lag_revisions",
				Help: "Revisions the read replica (--storage-read-dsn) is behind the primary.",
			}, lag(func(l replicaLagger) float64 { r, _ := l.ReplicaLag(); return float64(r) })),
			prometheus.NewCounterFunc(prometheus.CounterOpts{
				Name: "panorama_storage_replica_fallbacks_total",
				Help: "Reads served by the primary because the read replica had not reached their revision within --storage-read-wait.",
			}, lag(func(l replicaLagger) float64 { return float64(l.Fallbacks()) })),
		)
	})
}

// statusRecorder keeps the code a handler answered with.
type statusRecorder struct {
	http.ResponseWriter
	code int
}

func (s *statusRecorder) WriteHeader(code int) {
	if s.code == 0 {
		s.code = code
	}
	s.ResponseWriter.WriteHeader(code)
}

func (s *statusRecorder) Write(b []byte) (int, error) {
	if s.code == 0 {
		s.code = http.StatusOK
	}
	return s.ResponseWriter.Write(b)
}

// timed serves a get or list through serve and records how long it took.
func timed(w http.ResponseWriter, verb string, gr schema.GroupResource, serve func(w http.ResponseWriter)) {
	start := time.Now()
	rec := &statusRecorder{ResponseWriter: w}
	serve(rec)
	if rec.code == 0 {
		rec.code = http.StatusOK
	}
	requestDuration.WithLabelValues(verb, gr.Group, gr.Resource, strconv.Itoa(rec.code)).Observe(time.Since(start).Seconds())
}

// watchOpened counts a watch of gr as open until the returned func runs.
func watchOpened(gr schema.GroupResource) (closed func()) {
	g := watches.WithLabelValues(gr.Group, gr.Resource)
	g.Inc()
	return g.Dec
}
