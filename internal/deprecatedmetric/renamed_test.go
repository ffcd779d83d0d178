package deprecatedmetric_test

import (
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/panorama-io/panorama/internal/deprecatedmetric"
)

// TestRenamedExportsBothNames checks that the old name reports the
// current one's series, values and all, with a help that names the
// current one.
func TestRenamedExportsBothNames(t *testing.T) {
	gauge := prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "new_objects", Help: "Objects."}, []string{"resource", "cluster"})
	hist := prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "new_seconds", Help: "Time.", Buckets: []float64{1, 2}}, []string{"verb"})
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(gauge, hist,
		deprecatedmetric.Renamed("old_objects", "new_objects", []string{"resource", "cluster"}, gauge),
		deprecatedmetric.Renamed("old_seconds", "new_seconds", []string{"verb"}, hist))
	gauge.WithLabelValues("pods", "east").Set(3)
	gauge.WithLabelValues("nodes", "west").Set(1)
	hist.WithLabelValues("list").Observe(1.5)

	const want = `
# HELP new_objects Objects.
# TYPE new_objects gauge
new_objects{cluster="east",resource="pods"} 3
new_objects{cluster="west",resource="nodes"} 1
# HELP old_objects Deprecated: use new_objects.
# TYPE old_objects gauge
old_objects{cluster="east",resource="pods"} 3
old_objects{cluster="west",resource="nodes"} 1
# HELP new_seconds Time.
# TYPE new_seconds histogram
new_seconds_bucket{verb="list",le="1"} 0
new_seconds_bucket{verb="list",le="2"} 1
new_seconds_bucket{verb="list",le="+Inf"} 1
new_seconds_sum{verb="list"} 1.5
new_seconds_count{verb="list"} 1
# HELP old_seconds Deprecated: use new_seconds.
# TYPE old_seconds histogram
old_seconds_bucket{verb="list",le="1"} 0
old_seconds_bucket{verb="list",le="2"} 1
old_seconds_bucket{verb="list",le="+Inf"} 1
old_seconds_sum{verb="list"} 1.5
old_seconds_count{verb="list"} 1
`
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want)); err != nil {
		t.Fatal(err)
	}

	gauge.DeleteLabelValues("nodes", "west")
	if n := testutil.CollectAndCount(reg, "old_objects"); n != 1 {
		t.Fatalf("old_objects has %d series after the current one lost one, want 1", n)
	}
}
