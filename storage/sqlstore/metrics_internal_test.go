package sqlstore

import (
	"math"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
)

// TestReplicaMetricsOnlyOnceAReplicaIsOpened checks that storage's
// collectors report a replica's lag and fallbacks only in a process that
// opened one, and then the latest one's.
func TestReplicaMetricsOnlyOnceAReplicaIsOpened(t *testing.T) {
	before := lagged.Load()
	t.Cleanup(func() { lagged.Store(before) })
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(Collectors()...)
	const names = "panorama_storage_replica_lag_seconds panorama_storage_replica_lag_revisions panorama_storage_replica_fallbacks_total"

	lagged.Store(nil)
	if n, err := testutil.GatherAndCount(reg, strings.Fields(names)...); err != nil || n != 0 {
		t.Fatalf("%d replica series without a replica (%v), want none", n, err)
	}

	r := &Replicated{}
	r.lagRevisions.Store(7)
	r.lagSeconds.Store(math.Float64bits(1.5))
	r.fallbacks.Store(2)
	lagged.Store(r)
	const want = `
# HELP panorama_storage_replica_fallbacks_total Reads served by the primary because the read replica had not reached their revision within --storage-read-wait.
# TYPE panorama_storage_replica_fallbacks_total counter
panorama_storage_replica_fallbacks_total 2
# HELP panorama_storage_replica_lag_revisions Revisions the read replica (--storage-read-dsn) is behind the primary.
# TYPE panorama_storage_replica_lag_revisions gauge
panorama_storage_replica_lag_revisions 7
# HELP panorama_storage_replica_lag_seconds How long ago the oldest commit the read replica (--storage-read-dsn) has not replayed was made; 0 when it has replayed all.
# TYPE panorama_storage_replica_lag_seconds gauge
panorama_storage_replica_lag_seconds 1.5
`
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want), strings.Fields(names)...); err != nil {
		t.Fatal(err)
	}
}
