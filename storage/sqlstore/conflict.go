package sqlstore

import (
	"math/rand/v2"
	"time"
)

// Write conflicts. Within one database server, writers queue on the
// counter's row lock and never conflict. A multi-primary cluster (MariaDB
// Galera) locks rows only on the node a transaction runs on: writers on
// two nodes both lock the counter, each on its own node, read the same
// revision and write the same next ones. Galera certifies transactions
// at commit in one cluster-wide order; every write transaction updates the
// counter row, so of two that overlap only the first certified commits,
// and the other fails with a deadlock (MySQL error 1213, "WSREP detected
// deadlock/conflict"), rolled back whole: no revision is written twice.
// A local transaction may also be aborted by a conflicting one being
// applied from another node while it still runs (a "brute force" abort),
// with the same error at whatever statement it had reached.
//
// Such a group is written again, from the counter as it is now: its
// batches may run more than once (see batchFunc), and nothing of the
// failed attempt is left. A database that detects a deadlock or a
// serialization failure between its own transactions answers the same way
// (MySQL 1213, PostgreSQL 40P01 and 40001), and is retried alike.
const (
	// maxConflictRetries bounds the attempts at one group: a cluster
	// certifies the first of the conflicting transactions, so some node
	// always makes progress, but one node's writer could keep losing.
	maxConflictRetries = 30
	// conflictBackoff is the longest pause before a retry; attempts back
	// off up to it, at random, so that two nodes' writers that just
	// collided do not collide again in step.
	conflictBackoff = 100 * time.Millisecond
)

// conflicted reports whether err is a transaction the database rolled back
// whole for conflicting with another, so that it may simply run again.
// Each driver's errors are of its own types, which only its dialect
// recognizes.
func conflicted(err error) bool {
	for _, d := range dialects {
		if d.conflict != nil && d.conflict(err) {
			return true
		}
	}
	return false
}

// conflictPause is how long to wait before attempt n (1, 2, ...) of a group
// that conflicted: random, up to a bound doubling from 1ms to
// conflictBackoff.
func conflictPause(n int) time.Duration {
	bound := min(time.Millisecond<<min(n, 10), conflictBackoff)
	return rand.N(bound) + time.Millisecond
}
