package sqlstore

import (
	"context"
	"errors"
	"fmt"
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

// RewriteFloor times what no store can skip in n updates of stored
// objects: the n rows last written rewritten in place, by the statement
// an update rewrites its row with, and the n log entries last written
// inserted again, each at a revision past the counter, in the largest
// multi-row statements, one transaction, nothing read or encoded while
// timed. It is rolled back, untimed: a lower bound, which leaves out the
// commit, and the attribute and count rows of an update that changes
// them.
func RewriteFloor(s *Store, n int) (time.Duration, error) {
	var rows []resourceRow
	var events []eventRow
	if err := s.db.Order("revision DESC").Limit(n).Find(&rows).Error; err != nil {
		return 0, err
	}
	if err := s.db.Order("revision DESC").Limit(n).Find(&events).Error; err != nil {
		return 0, err
	}
	if len(rows) != n || len(events) != n {
		return 0, fmt.Errorf("%d rows and %d log entries stored, want %d", len(rows), len(events), n)
	}
	past := events[0].Revision
	for i := range rows {
		rows[i].Revision = past + int64(i) + 1
		events[i].Revision = past + int64(i) + 1
		events[i].Object = storedElsewhere // as the writer writes it; read back as NULL on SQLite
	}
	var took time.Duration
	rolledBack := errors.New("rolled back")
	err := s.db.Transaction(func(tx *gorm.DB) error {
		t0 := time.Now()
		if err := upsertChunked(tx, s.dialect, rows, objectBytes, &rewriteRow); err != nil {
			return err
		}
		if err := insertChunked(tx, s.dialect, events, entryBytes); err != nil {
			return err
		}
		took = time.Since(t0)
		return rolledBack
	})
	if !errors.Is(err, rolledBack) {
		return 0, err
	}
	return took, nil
}
