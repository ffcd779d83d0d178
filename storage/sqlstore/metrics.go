package sqlstore

import (
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// Collectors are storage's metrics, for the registry of each process that
// opens a store: the write conflicts of the process that writes, and the
// lag of the read replica of the process that reads from one
// (OpenForReads with a ReadDSN), exported once it opened one.
func Collectors() []prometheus.Collector {
	return []prometheus.Collector{writeConflicts, writeSeconds, replicaMetrics{}}
}

// writeConflicts counts what conflict.go retries: on Galera, where
// writers on different nodes conflict on the revision counter at
// commit, a rate that keeps rising says the writers are spread over too
// many nodes (operations.md, "Running on MariaDB Galera").
var writeConflicts = prometheus.NewCounter(prometheus.CounterOpts{
	Name: "panorama_storage_write_conflicts_total",
	Help: "Write groups written again after the database refused them for a conflict (deadlock, Galera certification failure, serialization failure).",
})

// writeSeconds times the stages of each committed write group: where the
// one writer's time goes, and so what delays changes under churn
// (operations.md, "Fleet scale").
var writeSeconds = prometheus.NewHistogramVec(prometheus.HistogramOpts{
	Name: "panorama_storage_write_seconds",
	Help: "Time each committed write group spent in a stage: lock (beginning its transaction and locking the revision counter), " +
		"read (the stored rows objects' changes replace, and owner epochs), plan (planning and encoding objects' changes; " +
		"the whole of other writes: taking a cluster over, deleting a resource, reindexing fields), " +
		"write (the statements of objects' rows, their attributes, keywords, counts and log), commit (taking the revisions and committing).",
	Buckets: prometheus.ExponentialBuckets(0.0005, 2, 16), // 0.5 ms to 16 s
}, []string{"stage"})

// Every stage's series is there from the start, at zero: a dashboard's
// rate of them is 0 before the first write, not absent.
func init() {
	for _, name := range stageNames {
		writeSeconds.WithLabelValues(name)
	}
}

// stage is a part of a write group's time (writeSeconds).
type stage int

const (
	stageLock stage = iota
	stageRead
	stagePlan
	stageWrite
	stageCommit
	stages
)

var stageNames = [stages]string{"lock", "read", "plan", "write", "commit"}

// stageClock adds the time between its marks to the stages they end.
type stageClock struct {
	spent [stages]time.Duration
	mark  time.Time
}

func newStageClock() *stageClock { return &stageClock{mark: time.Now()} }

// ended adds the time since the last mark to s.
func (c *stageClock) ended(s stage) {
	now := time.Now()
	c.spent[s] += now.Sub(c.mark)
	c.mark = now
}

// observe records a committed group's stages.
func (c *stageClock) observe() {
	for s, d := range c.spent {
		writeSeconds.WithLabelValues(stageNames[s]).Observe(d.Seconds())
	}
}

var (
	replicaLagSeconds = prometheus.NewDesc("panorama_storage_replica_lag_seconds",
		"How long ago the oldest commit the read replica (--storage-read-dsn) has not replayed was made; 0 when it has replayed all.", nil, nil)
	replicaLagRevisions = prometheus.NewDesc("panorama_storage_replica_lag_revisions",
		"Revisions the read replica (--storage-read-dsn) is behind the primary.", nil, nil)
	replicaFallbacks = prometheus.NewDesc("panorama_storage_replica_fallbacks_total",
		"Reads served by the primary because the read replica had not reached their revision within --storage-read-wait.", nil, nil)
)

// lagged is the latest Replicated opened, whose replica replicaMetrics
// report on.
var lagged atomic.Pointer[Replicated]

// replicaMetrics reports the lag and fallbacks of the latest Replicated
// opened, and nothing in a process that opened none.
type replicaMetrics struct{}

func (replicaMetrics) Describe(ch chan<- *prometheus.Desc) {
	ch <- replicaLagSeconds
	ch <- replicaLagRevisions
	ch <- replicaFallbacks
}

func (replicaMetrics) Collect(ch chan<- prometheus.Metric) {
	r := lagged.Load()
	if r == nil {
		return
	}
	revisions, seconds := r.ReplicaLag()
	ch <- prometheus.MustNewConstMetric(replicaLagSeconds, prometheus.GaugeValue, seconds)
	ch <- prometheus.MustNewConstMetric(replicaLagRevisions, prometheus.GaugeValue, float64(revisions))
	ch <- prometheus.MustNewConstMetric(replicaFallbacks, prometheus.CounterValue, float64(r.Fallbacks()))
}
