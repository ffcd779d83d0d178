package sqlstore

import (
	"context"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"gorm.io/gorm"
)

// GormDB lets the external tests record and explain the statements a Store
// runs.
func GormDB(s *Store) *gorm.DB { return s.db }

// RefreshStatistics refreshes the planner's statistics, as a Store does
// after many writes, so that tests of plans need not write that much.
func RefreshStatistics(s *Store) error { return s.refreshStatistics() }

// AgeStatistics makes s's statistics, and its opening, d older.
func AgeStatistics(s *Store, d time.Duration) {
	s.analyzedAt.Add(-d.Nanoseconds())
	s.opened.Add(-d.Nanoseconds())
}

// Queued counts the writes no group has taken yet, so that tests can line
// writes up behind one that waits for the counter.
func Queued(s *Store) int {
	return s.queue.len()
}

// WriteConflicts is the process's panorama_storage_write_conflicts_total.
func WriteConflicts() float64 { return testutil.ToFloat64(writeConflicts) }

// MeasureLag measures the standby's lag now, rather than at the next tick.
func MeasureLag(ctx context.Context, r *Replicated) error { return r.measure(ctx) }

// LookupLists is how many lists of names one key lookup statement takes.
func LookupLists(s *Store) int { return s.dialect.lookupLists }

// AppendObjectJSON is appendObjectJSON, for BenchmarkObjectJSON.
var AppendObjectJSON = appendObjectJSON

// Refusal is refusal, for the tests of what each database answers.
var Refusal = refusal

// MaxDeltaChain is maxDeltaChain, and KeptAgainstNext keptAgainstNext,
// for the tests of the log's layout.
const MaxDeltaChain = maxDeltaChain

var KeptAgainstNext = keptAgainstNext
