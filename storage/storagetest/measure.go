package storagetest

import (
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"
)

// Quantile is the q-quantile (0 to 1) of sorted durations, 0 when there
// are none: how the benchmarks report latencies.
func Quantile(sorted []time.Duration, q float64) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	return sorted[min(len(sorted)-1, int(q*float64(len(sorted))))]
}

// BestOf3 runs each of runs three times and returns the shortest
// duration each returned. They take turns, so that a machine busier for a
// while slows them alike.
func BestOf3(runs ...func() time.Duration) []time.Duration {
	best := make([]time.Duration, len(runs))
	for range 3 {
		for i, run := range runs {
			if d := run(); best[i] == 0 || d < best[i] {
				best[i] = d
			}
		}
	}
	return best
}

// Timed is a run for BestOf3 that takes as long as f.
func Timed(f func()) func() time.Duration {
	return func() time.Duration {
		start := time.Now()
		f()
		return time.Since(start)
	}
}

// Millis is d in milliseconds, as benchmarks report metrics.
func Millis(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// ResidentBytes is the resident set size (VmRSS) of process pid, from
// /proc: what the tests and benchmarks bound and report as a component's
// memory.
func ResidentBytes(pid int) (int64, error) {
	status, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, err
	}
	for line := range strings.Lines(string(status)) {
		if v, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
			return kb << 10, err
		}
	}
	return 0, errors.New("no VmRSS")
}
