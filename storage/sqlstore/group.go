package sqlstore

import (
	"context"
	"errors"
	"slices"
	"sync"
	"time"

	"gorm.io/gorm"

	"github.com/panorama-io/panorama/storage"
)

// Group commit. Writes serialize on the revision counter (see the package
// doc), so one transaction per caller would queue every caller on that
// row, each holding a connection while it waits. Instead a Store writes
// through one goroutine that takes every batch queued meanwhile into one
// transaction and one counter update: callers wait in memory, the counter
// is locked once per group, the group's rows are written together
// (pending.go), and a group commits once.

const (
	// groupRows bounds the changes a group takes from the queue (a batch
	// counts its changes; a DeleteResource step deleteChunk).
	groupRows = 5000
	// groupBytes stops a group from running more batches once they have
	// written this many bytes of objects as stored, whatever their size.
	groupBytes = 16 << 20
)

// errClosed answers writes after Close.
var errClosed = errors.New("storage is closed")

// batchFunc plans one caller's batch: it reads what it needs in tx and
// adds its rows to p with revisions base+1, base+2, ..., and returns how
// many it used. stored are the rows of its keys, which the group has
// looked up for it if it has keys (lookup.go). A group may run it more
// than once (rolled back, then run again without a failing batch), so it
// must leave what it reads as it found it.
type batchFunc func(tx *gorm.DB, p *pending, base int64, stored storedRows) (revisions int64, err error)

// batch is one caller's write waiting for, or in, a group.
type batch struct {
	ctx context.Context
	// cluster is the one whose rows fn reads.
	cluster string
	rows    int
	// keys, when set, are the keys of one resource of cluster whose rows
	// fn reads, and all it reads of them.
	keys *keyLookup
	fn   batchFunc
	done chan result // buffered: the writer never waits for the caller

	// epoch, unless storage.Unfenced, is the owner epoch the write is
	// fenced by (fence.go).
	epoch int64
	// first puts the batch ahead of the queued ones that are not: see
	// queue.
	first bool
}

type result struct {
	rev int64
	err error
}

func (b *batch) finish(rev int64, err error) { b.done <- result{rev, err} }

// queue holds the batches no group has taken yet, in the order they came.
//
// A batch marked first is a control write that a reconcile waits on:
// taking a cluster over, before it syncs at all, and dropping its Secrets'
// data. Behind the initial syncs of other clusters, thousands of rows a
// group, a reconcile of a new cluster waited for every group queued before
// it (the queue wait of BenchmarkFleetReconcile). So a batch marked first
// goes into the next group ahead of the other clusters' batches: only
// those of its own cluster, and those of no cluster (the fields' declared
// and reindexed), that came before it go with it, before it, since it
// may have to come after them (a Secret written with its data, then the
// data dropped).
type queue struct {
	mu      sync.Mutex
	pending []*batch
	closed  bool
	wake    chan struct{} // one token: something was queued, or Close
	stopped chan struct{} // closed when the writer has drained the queue
}

func newQueue() *queue {
	return &queue{wake: make(chan struct{}, 1), stopped: make(chan struct{})}
}

func (q *queue) signal() {
	select {
	case q.wake <- struct{}{}:
	default:
	}
}

func (q *queue) push(b *batch) error {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.closed {
		return errClosed
	}
	q.pending = append(q.pending, b)
	q.signal()
	return nil
}

// withdraw removes b unless a group has taken it.
func (q *queue) withdraw(b *batch) bool {
	q.mu.Lock()
	defer q.mu.Unlock()
	i := slices.Index(q.pending, b)
	if i >= 0 {
		q.pending = slices.Delete(q.pending, i, i+1)
	}
	return i >= 0
}

// len counts the batches no group has taken.
func (q *queue) len() int {
	q.mu.Lock()
	defer q.mu.Unlock()
	return len(q.pending)
}

// take waits for batches and returns a group of them, up to groupRows
// changes (at least one batch): those marked first with the ones they
// must follow, then the oldest; nil once closed and drained.
func (q *queue) take() []*batch {
	for {
		q.mu.Lock()
		if len(q.pending) > 0 {
			taken, rows, some := q.firstBatches()
			for i, b := range q.pending {
				if taken[i] {
					continue
				}
				if some && rows+b.rows > groupRows {
					break // the rest in order: a cluster's batches never pass each other
				}
				taken[i], rows, some = true, rows+b.rows, true
			}
			var group, rest []*batch
			for i, b := range q.pending {
				if taken[i] {
					group = append(group, b)
				} else {
					rest = append(rest, b)
				}
			}
			q.pending = rest
			q.mu.Unlock()
			return group
		}
		closed := q.closed
		q.mu.Unlock()
		if closed {
			return nil
		}
		<-q.wake
	}
}

// firstBatches marks, per batch of pending, whether it goes into the next
// group ahead of its turn: the batches marked first, in order, each with
// the batches it must follow (see queue), while they fit groupRows
// together; the oldest with all it must follow whatever their size, which
// groupBytes still bounds as it runs. It returns how many changes they
// hold.
func (q *queue) firstBatches() (taken []bool, rows int, some bool) {
	taken = make([]bool, len(q.pending))
	for i, f := range q.pending {
		if !f.first {
			continue
		}
		with, need := []int{i}, f.rows
		for j, b := range q.pending[:i] {
			if !taken[j] && (b.cluster == f.cluster || b.cluster == "") {
				with, need = append(with, j), need+b.rows
			}
		}
		if some && rows+need > groupRows {
			break
		}
		for _, j := range with {
			taken[j] = true
		}
		rows, some = rows+need, true
	}
	return taken, rows, some
}

// close refuses new batches and waits until the writer has written the
// queued ones.
func (q *queue) close() {
	q.mu.Lock()
	q.closed = true
	q.signal()
	q.mu.Unlock()
	<-q.stopped
}

// submit queues a write and waits for its result. A caller whose context
// ends while its batch is queued withdraws it; once a group has taken it,
// the caller waits for the group, which its cancellation rolls back (see
// groupContext). Either way the write is over when submit returns: a batch
// never commits after its caller has given up on it.
func (s *Store) submit(ctx context.Context, cluster string, epoch int64, rows int, keys *keyLookup, fn batchFunc) (int64, error) {
	return s.await(ctx, &batch{cluster: cluster, epoch: epoch, rows: rows, keys: keys, fn: fn})
}

// await queues b as submit does.
func (s *Store) await(ctx context.Context, b *batch) (int64, error) {
	b.ctx, b.done = ctx, make(chan result, 1)
	if err := s.queue.push(b); err != nil {
		return 0, err
	}
	select {
	case r := <-b.done:
		return r.rev, r.err
	case <-ctx.Done():
		if s.queue.withdraw(b) {
			return 0, ctx.Err()
		}
		r := <-b.done
		return r.rev, r.err
	}
}

// writeLoop is the Store's one writer.
func (s *Store) writeLoop() {
	defer close(s.queue.stopped)
	for group := s.queue.take(); group != nil; group = s.queue.take() {
		s.commit(group)
	}
}

// commit writes group, in as many transactions as its bounds and failures
// take, until every batch has its result. The batches a failure is blamed
// on are taken out and the rest written without them; each then runs
// alone, so that its error is its own (or, if it was passing, such as a
// deadlock, it succeeds). A batch whose caller has given up is dropped. A
// group that conflicted with another writer is written again as it is
// (conflict.go). Any other failure of the group as a whole (locking the
// counter, committing) fails every batch, as it would have failed each of
// them alone.
func (s *Store) commit(group []*batch) {
	var alone []*batch
	retries := 0
	for {
		group = slices.DeleteFunc(group, func(b *batch) bool {
			if err := b.ctx.Err(); err != nil {
				b.finish(0, err)
				return true
			}
			return false
		})
		if len(group) == 0 {
			break
		}
		ran, blamed, err := s.write(group)
		switch {
		case err == nil:
			group = group[ran:]
			retries = 0
		case slices.ContainsFunc(group, func(b *batch) bool { return b.ctx.Err() != nil }):
			// Rolled back because a caller gave up: again without it.
		case conflicted(err) && retries < maxConflictRetries:
			retries++
			writeConflicts.Inc()
			time.Sleep(conflictPause(retries))
		case len(blamed) > 0 && len(group) > 1:
			alone = append(alone, blamed...)
			group = slices.DeleteFunc(group, func(b *batch) bool { return slices.Contains(blamed, b) })
		default:
			if reason, refused := refusal(err); refused {
				err = storage.Invalid("object", "%s", reason)
			}
			for _, b := range group {
				b.finish(0, err)
			}
			group = nil
		}
	}
	for _, b := range alone {
		s.commit([]*batch{b})
	}
}

// groupContext ends when the context of any batch of group ends: the
// caller that gave up gets its answer now, not after the others' writes.
func groupContext(group []*batch) (context.Context, func()) {
	ctx, cancel := context.WithCancel(context.Background())
	stops := make([]func() bool, len(group))
	for i, b := range group {
		stops[i] = context.AfterFunc(b.ctx, cancel)
	}
	return ctx, func() {
		for _, stop := range stops {
			stop()
		}
		cancel()
	}
}
