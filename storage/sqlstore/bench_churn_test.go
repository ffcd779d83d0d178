package sqlstore_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"gorm.io/gorm"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/panorama-io/panorama/storage"
	"github.com/panorama-io/panorama/storage/sqlstore"
	"github.com/panorama-io/panorama/storage/storagetest"
)

// churnObjects is how many objects each cluster changes in
// BenchmarkUpdateChurn, and churnFlush how many a synchronizer's write
// carries: it flushes every 50 ms what its watch delivered meanwhile.
const churnObjects, churnFlush = 200, 10

// BenchmarkUpdateChurn is the store's part of the fleet benchmark's churn
// (issue 15): benchWriters clusters hold copies of the same objects
// (PANORAMA_BENCH_CHURN_OBJECTS each, default storagetest.BenchBatch), then each
// writer, as a synchronizer does, writes churnObjects changed copies in
// writes of churnFlush, all writers at once, timed until every write is
// committed. Each writer writes fenced by its cluster's owner epoch, as
// a synchronizer does. Two changes are timed: a label added (as the fleet's
// patches do), and a change of nothing indexed (an annotation). Each is
// printed as a ratio to the same writers adding as many new objects of the
// same size in the same run, and to as many pod JSONs written as raw
// multi-row INSERTs from one connection, and to a floor of as many
// updates (sqlstore.RewriteFloor): the last phase's rows rewritten and
// their log entries inserted again, alone, uncommitted. Where the
// writer's time goes is printed too: the stages of its groups
// (panorama_storage_write_seconds) and the statements it ran, summed by
// kind.
func BenchmarkUpdateChurn(b *testing.B) {
	stored := storagetest.BenchBatch
	if v := os.Getenv("PANORAMA_BENCH_CHURN_OBJECTS"); v != "" {
		var err error
		if stored, err = strconv.Atoi(v); err != nil || stored < churnObjects {
			b.Fatalf("PANORAMA_BENCH_CHURN_OBJECTS=%q: want a number of at least %d", v, churnObjects)
		}
	}
	rows := benchWriters * churnObjects
	for _, be := range storagetest.Backends() {
		b.Run(be.Name, func(b *testing.B) {
			_, s := openForWriters(b, be)
			raw := rawInsertRate(b, s, rows)
			timer := newStatementTimer(b, s)
			fill := concurrentWrites(b, s, stored, storagetest.BenchBatch, func(i int, rng *rand.Rand) *unstructured.Unstructured {
				return storagetest.BenchPod(rng, i, "1")
			})
			b.Logf("%s: %d clusters × %d objects stored in %v", be.Name, benchWriters, stored, fill.Round(time.Millisecond))
			var inserts time.Duration
			updates := map[string]time.Duration{} // by metric
			for _, phase := range []struct {
				name, metric string
				object       func(i int, rng *rand.Rand) *unstructured.Unstructured
			}{
				{"new objects", "insert", func(i int, rng *rand.Rand) *unstructured.Unstructured {
					return storagetest.BenchPod(rng, stored+i, "1")
				}},
				{"a label added", "churn-label", func(i int, rng *rand.Rand) *unstructured.Unstructured {
					u := storagetest.BenchPod(rng, i, "2") // as stored, but for:
					u.SetLabels(withLabel(u.GetLabels(), "churn", "1"))
					return u
				}},
				{"nothing indexed changed", "churn-unindexed", func(i int, rng *rand.Rand) *unstructured.Unstructured {
					u := storagetest.BenchPod(rng, i, "3")
					u.SetLabels(withLabel(u.GetLabels(), "churn", "1"))
					u.SetAnnotations(map[string]string{"churn": "2"})
					return u
				}},
			} {
				timer.start()
				stagesBefore := storagetest.WriteStages(b)
				took := concurrentWrites(b, s, churnObjects, churnFlush, phase.object)
				stmts := timer.stop()
				stages := storagetest.StagesSince(b, stagesBefore)
				if phase.metric == "insert" {
					inserts = took
				}
				rate := float64(rows) / took.Seconds()
				b.ReportMetric(took.Seconds(), phase.metric+"-s")
				b.ReportMetric(rate/raw, phase.metric+"/raw")
				b.ReportMetric(float64(took)/float64(inserts), phase.metric+"/insert")
				b.Logf("%s: %s, %d writers × %d in writes of %d: %v, %.0f rows/s, %.2fx raw INSERTs' rate, %.2fx the time of as many new objects; the writer's stages: %s; statements: %s",
					be.Name, phase.name, benchWriters, churnObjects, churnFlush, took.Round(time.Millisecond), rate, rate/raw,
					float64(took)/float64(inserts), stages, stmts)
				if phase.metric != "insert" {
					updates[phase.metric] = took
				}
			}
			// Once, after the last: a rolled-back floor leaves PostgreSQL
			// dead tuples where the next phase would write.
			floor, err := sqlstore.RewriteFloor(s, rows)
			if err != nil {
				b.Fatal(err)
			}
			for metric, took := range updates {
				b.ReportMetric(float64(took)/float64(floor), metric+"/floor")
			}
			b.Logf("%s: the floor of %d updates, the last phase's rows rewritten and their log entries inserted again in one transaction, nothing read, the commit not timed: %v, %.0f rows/s; the phases took %.2fx (label) and %.2fx (nothing indexed) that",
				be.Name, rows, floor.Round(time.Millisecond), float64(rows)/floor.Seconds(), float64(updates["churn-label"])/float64(floor), float64(updates["churn-unindexed"])/float64(floor))
		})
	}
}

// concurrentWrites has benchWriters clusters write n objects each at once,
// in writes of flush fenced by an owner epoch of their own taken before,
// object(i) the i-th of each, and returns how
// long until the last was committed. Writer w's rng starts alike in every
// call and storagetest.BenchPod draws as many numbers for each object, so that its
// i-th object is the same from one call to the next but for what object
// changes.
func concurrentWrites(b *testing.B, s *sqlstore.Store, n, flush int, object func(i int, rng *rand.Rand) *unstructured.Unstructured) time.Duration {
	errs := make(chan error, benchWriters)
	owned := make([]int64, benchWriters)
	for w := range benchWriters {
		epoch, err := s.Own(context.Background(), writerCluster(w))
		if err != nil {
			b.Fatal(err)
		}
		owned[w] = epoch
	}
	var wg sync.WaitGroup
	start := time.Now()
	for w := range benchWriters {
		wg.Go(func() {
			rng := rand.New(rand.NewPCG(uint64(w), 9))
			for i := 0; i < n; i += flush {
				changes := make([]storage.Change, 0, flush)
				for j := i; j < min(i+flush, n); j++ {
					changes = append(changes, storage.Upsert(object(j, rng)))
				}
				if _, err := s.ForCluster(writerCluster(w), owned[w]).Apply(context.Background(), podsGVR, changes); err != nil {
					errs <- err
					return
				}
			}
		})
	}
	wg.Wait()
	took := time.Since(start)
	close(errs)
	for err := range errs {
		b.Fatal(err)
	}
	return took
}

func withLabel(labels map[string]string, k, v string) map[string]string {
	labels[k] = v
	return labels
}

// statementTimer sums, while started, the time the store's statements take
// by kind: their verb and table, as gorm runs them.
type statementTimer struct {
	mu      sync.Mutex
	on      bool
	byKind  map[string]time.Duration
	counted map[string]int
}

func newStatementTimer(b *testing.B, s *sqlstore.Store) *statementTimer {
	t := &statementTimer{}
	db := sqlstore.GormDB(s)
	const started = "bench:started"
	before := func(tx *gorm.DB) { tx.InstanceSet(started, time.Now()) }
	after := func(tx *gorm.DB) {
		t0, ok := tx.InstanceGet(started)
		if !ok {
			return
		}
		took := time.Since(t0.(time.Time))
		kind := statementKind(tx.Statement.SQL.String())
		t.mu.Lock()
		defer t.mu.Unlock()
		if t.on {
			t.byKind[kind] += took
			t.counted[kind]++
		}
	}
	cb := db.Callback()
	for _, reg := range []error{
		cb.Create().Before("gorm:create").Register("bench:before-create", before),
		cb.Create().After("gorm:create").Register("bench:after-create", after),
		cb.Query().Before("gorm:query").Register("bench:before-query", before),
		cb.Query().After("gorm:query").Register("bench:after-query", after),
		cb.Update().Before("gorm:update").Register("bench:before-update", before),
		cb.Update().After("gorm:update").Register("bench:after-update", after),
		cb.Delete().Before("gorm:delete").Register("bench:before-delete", before),
		cb.Delete().After("gorm:delete").Register("bench:after-delete", after),
		cb.Raw().Before("gorm:raw").Register("bench:before-raw", before),
		cb.Raw().After("gorm:raw").Register("bench:after-raw", after),
		cb.Row().Before("gorm:row").Register("bench:before-row", before),
		cb.Row().After("gorm:row").Register("bench:after-row", after),
	} {
		if reg != nil {
			b.Fatal(reg)
		}
	}
	return t
}

func (t *statementTimer) start() {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.on, t.byKind, t.counted = true, map[string]time.Duration{}, map[string]int{}
}

// stop returns the kinds that took the most, most first.
func (t *statementTimer) stop() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.on = false
	kinds := make([]string, 0, len(t.byKind))
	for k := range t.byKind {
		kinds = append(kinds, k)
	}
	slices.SortFunc(kinds, func(a, b string) int { return int(t.byKind[b] - t.byKind[a]) })
	var out []string
	for _, k := range kinds {
		out = append(out, fmt.Sprintf("%s ×%d %v", k, t.counted[k], t.byKind[k].Round(time.Millisecond)))
	}
	return strings.Join(out, "; ")
}

// statementKind is a statement's verb and table: "INSERT INTO resources".
func statementKind(sql string) string {
	f := strings.Fields(sql)
	if len(f) == 0 {
		return "?"
	}
	for i, w := range f {
		switch strings.ToUpper(w) {
		case "INTO", "FROM", "UPDATE":
			if i+1 < len(f) {
				return strings.ToUpper(f[0]) + " " + strings.Trim(f[i+1], "`\"")
			}
		}
	}
	return strings.ToUpper(f[0])
}
