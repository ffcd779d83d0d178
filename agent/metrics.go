package agent

import (
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
)

const (
	verdictForwarded = "forwarded"
	verdictRefused   = "refused"
)

var (
	connected = prometheus.NewGauge(prometheus.GaugeOpts{
		Name: "panorama_agent_connected",
		Help: "1 while the agent's tunnel to the hub is open, else 0.",
	})
	requestsTotal = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "panorama_agent_requests_total",
		Help: "Requests of the hub, by verdict: forwarded to the member, or refused by the agent (a write, a subresource, an upgrade or a path a sync does not read).",
	}, []string{"verdict"})
)

// registry holds the agent's metrics and the Go runtime's and process's,
// served on the health address (Options.HealthAddr).
var registry = prometheus.NewRegistry()

func init() {
	registry.MustRegister(connected, requestsTotal, collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	// Both verdicts are series from the start, so that a rate of refusals
	// exists before the first one.
	requestsTotal.WithLabelValues(verdictForwarded)
	requestsTotal.WithLabelValues(verdictRefused)
}
