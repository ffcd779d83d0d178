package storagetest

import "time"

// Quantile is the q-quantile (0 to 1) of sorted durations, 0 when there
// are none: how the benchmarks report latencies.
func Quantile(sorted []time.Duration, q float64) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	return sorted[min(len(sorted)-1, int(q*float64(len(sorted))))]
}

// Millis is d in milliseconds, as benchmarks report metrics.
func Millis(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
