package apiserver

import (
	"net/http"
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/component-base/metrics/legacyregistry"

	"github.com/panorama-io/panorama/internal/deprecatedmetric"
)

// Panorama's reads are served by its own handler, not by the generic API
// server's REST installer, so the apiserver_request_* metrics never see
// them: these are theirs. Labels come from registered resources only, so
// no client input widens them.
var (
	requestDuration = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    "panorama_apiserver_request_duration_seconds",
		Help:    "Time to answer a get or list of stored objects, by verb, group, resource and HTTP code.",
		Buckets: prometheus.ExponentialBuckets(0.001, 2, 16),
	}, requestLabels)
	watches = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "panorama_apiserver_watches",
		Help: "Watches open, by group and resource.",
	}, watchLabels)

	requestLabels = []string{"verb", "group", "resource", "code"}
	watchLabels   = []string{"group", "resource"}
)

func init() {
	legacyregistry.Registerer().MustRegister(requestDuration, watches,
		deprecatedmetric.Renamed("panorama_request_duration_seconds", "panorama_apiserver_request_duration_seconds", requestLabels, requestDuration),
		deprecatedmetric.Renamed("panorama_watches", "panorama_apiserver_watches", watchLabels, watches))
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
