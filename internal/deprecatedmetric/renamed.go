// Package deprecatedmetric keeps a renamed metric's old name exported for
// the dashboards and alerts that still read it, until the release that
// drops it (docs/operations.md, "Metrics", lists which and when).
package deprecatedmetric

import (
	"errors"
	"slices"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
)

// Renamed exports the metrics of c, a counter, gauge or histogram (or a
// vector of them) named current, under old too: the same series with
// the same values, at every scrape, so that nothing has to be recorded
// twice. labels are c's label names.
func Renamed(old, current string, labels []string, c prometheus.Collector) prometheus.Collector {
	sorted := slices.Sorted(slices.Values(labels)) // as a metric's labels are written
	return &renamed{
		desc: prometheus.NewDesc(old, "Deprecated: use "+current+".", sorted, nil),
		of:   c,
	}
}

type renamed struct {
	desc *prometheus.Desc
	of   prometheus.Collector
}

func (r *renamed) Describe(ch chan<- *prometheus.Desc) { ch <- r.desc }

func (r *renamed) Collect(ch chan<- prometheus.Metric) {
	metrics := make(chan prometheus.Metric)
	go func() {
		r.of.Collect(metrics)
		close(metrics)
	}()
	for m := range metrics {
		if renamed, err := r.copy(m); err != nil {
			ch <- prometheus.NewInvalidMetric(r.desc, err)
		} else {
			ch <- renamed
		}
	}
}

// copy returns m under the old name.
func (r *renamed) copy(m prometheus.Metric) (prometheus.Metric, error) {
	var out dto.Metric
	if err := m.Write(&out); err != nil {
		return nil, err
	}
	values := make([]string, len(out.GetLabel()))
	for i, l := range out.GetLabel() {
		values[i] = l.GetValue()
	}
	switch {
	case out.Counter != nil:
		return prometheus.NewConstMetric(r.desc, prometheus.CounterValue, out.GetCounter().GetValue(), values...)
	case out.Gauge != nil:
		return prometheus.NewConstMetric(r.desc, prometheus.GaugeValue, out.GetGauge().GetValue(), values...)
	case out.Histogram != nil:
		h := out.GetHistogram()
		buckets := make(map[float64]uint64, len(h.GetBucket()))
		for _, b := range h.GetBucket() {
			buckets[b.GetUpperBound()] = b.GetCumulativeCount()
		}
		return prometheus.NewConstHistogram(r.desc, h.GetSampleCount(), h.GetSampleSum(), buckets, values...)
	default:
		return nil, errors.New("not a counter, gauge or histogram")
	}
}
