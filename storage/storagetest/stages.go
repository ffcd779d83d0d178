package storagetest

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/panorama-io/panorama/storage/sqlstore"
)

// WriteStage is what this process's stores' write groups spent in one
// stage (panorama_storage_write_seconds).
type WriteStage struct {
	Groups  uint64
	Seconds float64
}

// WriteStages reads panorama_storage_write_seconds, by stage.
func WriteStages(tb testing.TB) map[string]WriteStage {
	tb.Helper()
	reg := prometheus.NewRegistry()
	reg.MustRegister(sqlstore.Collectors()...)
	families, err := reg.Gather()
	if err != nil {
		tb.Fatal(err)
	}
	out := map[string]WriteStage{}
	for _, f := range families {
		if f.GetName() != "panorama_storage_write_seconds" {
			continue
		}
		for _, m := range f.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "stage" {
					out[l.GetValue()] = WriteStage{Groups: m.GetHistogram().GetSampleCount(), Seconds: m.GetHistogram().GetSampleSum()}
				}
			}
		}
	}
	return out
}

// StagesSince says how long the write groups since before took in each
// stage, most first: where the store's writer spent its time.
func StagesSince(tb testing.TB, before map[string]WriteStage) string {
	tb.Helper()
	type spent struct {
		stage string
		d     time.Duration
	}
	var stages []spent
	var groups uint64
	for name, st := range WriteStages(tb) {
		stages = append(stages, spent{name, time.Duration((st.Seconds - before[name].Seconds) * float64(time.Second))})
		groups = max(groups, st.Groups-before[name].Groups)
	}
	slices.SortFunc(stages, func(a, b spent) int { return cmp.Compare(b.d, a.d) })
	parts := make([]string, len(stages))
	for i, s := range stages {
		parts[i] = fmt.Sprintf("%s %v", s.stage, s.d.Round(time.Millisecond))
	}
	return fmt.Sprintf("%d groups: %s", groups, strings.Join(parts, ", "))
}
