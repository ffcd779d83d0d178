package sqlstore_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/panorama-io/panorama/storage"
	"github.com/panorama-io/panorama/storage/sqlstore"
	"github.com/panorama-io/panorama/storage/storagetest"
)

const (
	// benchWriters is how many synchronizers write at once: 50 clusters.
	benchWriters = 50
	// churnBatch and churnRounds make the churn: each writer updates a few
	// objects at a time, as a watch delivers them.
	churnBatch, churnRounds = 5, 40
)

// BenchmarkConcurrentWriters has benchWriters synchronizers write at once,
// as 50 clusters syncing do, through a pool of 20 connections (the
// controller's default): first an initial sync (one storagetest.BenchBatch of new pods
// each), then churn (churnRounds small batches of updates each). Each rate
// is printed with its baseline from the same run: the same number of pod
// JSONs written as raw multi-row INSERTs into a bare table from one
// connection. Meanwhile a monitor on its own connection samples the lock
// waits of the test's database (the longest, and how many connections
// waited at once), and a reader times a plain Get through the store's pool.
func BenchmarkConcurrentWriters(b *testing.B) {
	for _, be := range storagetest.Backends() {
		b.Run(be.Name, func(b *testing.B) {
			opts, s := openForWriters(b, be)
			raw := rawInsertRate(b, s, benchWriters*storagetest.BenchBatch)
			b.Logf("%s: baseline, raw multi-row INSERTs from one connection: %.0f rows/s", be.Name, raw)
			for _, phase := range []struct {
				name, metric string
				write        func(w int, rng *rand.Rand) error
				rows         int
			}{
				{"initial sync, 50 × 500 new pods", "initial-sync", func(w int, rng *rand.Rand) error {
					changes := make([]storage.Change, 0, storagetest.BenchBatch)
					for i := range storagetest.BenchBatch {
						changes = append(changes, storage.Upsert(storagetest.BenchPod(rng, i, "1")))
					}
					_, err := s.ForCluster(writerCluster(w), storage.Unfenced).Apply(context.Background(), podsGVR, changes)
					return err
				}, benchWriters * storagetest.BenchBatch},
				{"churn, 50 × 40 batches of 5 updates", "churn", func(w int, rng *rand.Rand) error {
					for round := range churnRounds {
						changes := make([]storage.Change, 0, churnBatch)
						for i := range churnBatch {
							pod := rng.IntN(storagetest.BenchBatch/churnBatch)*churnBatch + i // distinct pods in a batch
							changes = append(changes, storage.Upsert(storagetest.BenchPod(rng, pod, fmt.Sprint(2+round))))
						}
						if _, err := s.ForCluster(writerCluster(w), storage.Unfenced).Apply(context.Background(), podsGVR, changes); err != nil {
							return err
						}
					}
					return nil
				}, benchWriters * churnRounds * churnBatch},
			} {
				mon := startLockMonitor(b, opts, s)
				start := time.Now()
				var wg sync.WaitGroup
				errs := make(chan error, benchWriters)
				for w := range benchWriters {
					wg.Go(func() {
						if err := phase.write(w, rand.New(rand.NewPCG(uint64(w), 9))); err != nil {
							errs <- err
						}
					})
				}
				wg.Wait()
				took := time.Since(start)
				m := mon.stop()
				close(errs)
				for err := range errs {
					b.Fatal(err)
				}
				rate := float64(phase.rows) / took.Seconds()
				b.ReportMetric(rate, phase.metric+"-rows/s")
				b.ReportMetric(rate/raw, phase.metric+"/raw")
				b.Logf("%s: %s: %d rows in %v, %.0f rows/s, %.2fx raw INSERTs; longest lock wait %v, at most %d connections waiting at once; slowest Get %v",
					be.Name, phase.name, phase.rows, took.Round(time.Millisecond), rate, rate/raw, m.Longest, m.MostWaiting, m.slowestRead)
			}
		})
	}
}

// openForWriters opens a store of be for benchWriters writers, through a
// pool of 20 connections (the controller's default), closed when b ends.
func openForWriters(b *testing.B, be storagetest.Backend) (sqlstore.Options, *sqlstore.Store) {
	opts := be.Options(b)
	if opts.Driver != "sqlite" {
		opts.MaxOpenConns = 20
	}
	return opts, storagetest.OpenStore(b, opts)
}

func writerCluster(w int) string { return fmt.Sprintf("member-%02d", w) }

// rawInsertRate writes rows pod JSONs into a bare table in multi-row
// INSERTs of storagetest.BenchBatch rows, each committed on its own, and returns the
// rows per second.
func rawInsertRate(b *testing.B, s *sqlstore.Store, rows int) float64 {
	db := sqlstore.GormDB(s)
	blob := map[string]string{"mysql": "LONGBLOB", "postgres": "BYTEA", "sqlite": "BLOB"}[db.Dialector.Name()]
	if err := db.Exec("CREATE TABLE bench_raw (id BIGINT PRIMARY KEY, object " + blob + " NOT NULL)").Error; err != nil {
		b.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(1, 1))
	values := strings.TrimSuffix(strings.Repeat("(?, ?),", storagetest.BenchBatch), ",")
	var took time.Duration
	for start := 0; start < rows; start += storagetest.BenchBatch {
		args := make([]any, 0, 2*storagetest.BenchBatch)
		for i := start; i < start+storagetest.BenchBatch; i++ {
			data, err := storagetest.BenchPod(rng, i, "1").MarshalJSON()
			if err != nil {
				b.Fatal(err)
			}
			args = append(args, i, data)
		}
		t0 := time.Now()
		if err := db.Exec("INSERT INTO bench_raw (id, object) VALUES "+values, args...).Error; err != nil {
			b.Fatal(err)
		}
		took += time.Since(t0)
	}
	return float64(rows) / took.Seconds()
}

type lockFigures struct {
	storagetest.LockWaits
	slowestRead time.Duration
}

type lockMonitor struct {
	stopped chan struct{}
	done    chan lockFigures
}

// startLockMonitor watches the lock waits of the store's database
// (storagetest.WatchLockWaits) and times, every 10 ms until stop, a plain
// Get through the store's pool.
func startLockMonitor(b *testing.B, opts sqlstore.Options, s *sqlstore.Store) *lockMonitor {
	m := &lockMonitor{stopped: make(chan struct{}), done: make(chan lockFigures)}
	stopWaits := storagetest.WatchLockWaits(b, opts)
	go func() {
		key := storage.Key{Cluster: writerCluster(0), GVR: podsGVR, Namespace: "ns-1", Name: "pod-1"}
		var slowest time.Duration
		for {
			t0 := time.Now()
			if _, err := s.Get(context.Background(), key); err != nil && err != storage.ErrNotFound {
				b.Error(err)
			}
			slowest = max(slowest, time.Since(t0))
			select {
			case <-m.stopped:
				m.done <- lockFigures{LockWaits: stopWaits(), slowestRead: slowest.Round(time.Millisecond)}
				return
			case <-time.After(10 * time.Millisecond):
			}
		}
	}()
	return m
}

func (m *lockMonitor) stop() lockFigures {
	close(m.stopped)
	return <-m.done
}
