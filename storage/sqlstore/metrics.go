package sqlstore

import "github.com/prometheus/client_golang/prometheus"

// writeConflicts counts what conflict.go retries: on Galera, where
// writers on different nodes conflict on the revision counter at
// commit, a rate that keeps rising says the writers are spread over too
// many nodes (operations.md, "Running on MariaDB Galera").
var writeConflicts = prometheus.NewCounter(prometheus.CounterOpts{
	Name: "panorama_storage_write_conflicts_total",
	Help: "Write groups written again after the database refused them for a conflict (deadlock, Galera certification failure, serialization failure).",
})

// WriteConflictsCollector is storage's metric, for the registry of the
// process that writes: the controller manager's.
func WriteConflictsCollector() prometheus.Collector { return writeConflicts }
