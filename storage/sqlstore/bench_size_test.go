package sqlstore_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"gorm.io/gorm"

	"github.com/panorama-io/panorama/storage"
	"github.com/panorama-io/panorama/storage/sqlstore"
	"github.com/panorama-io/panorama/storage/storagetest"
)

// sizeObjects is how many pods BenchmarkBytesPerObject stores, unless
// PANORAMA_BENCH_SIZE_OBJECTS says.
const sizeObjects = 20_000

// sizeTables are the tables whose bytes BenchmarkBytesPerObject counts.
var sizeTables = []string{"resources", "events", "object_attributes", "attribute_values", "attribute_keys", "count_summary", "history", "revision_times"}

// BenchmarkBytesPerObject stores sizeObjects pods as a member's API
// server serves them (managed fields, probes, status conditions) and
// prints the bytes each table takes in the database, data and indexes, per
// object and as a ratio to the objects' compact JSON as served, measured
// in the same run: after the initial sync, after every pod changed once
// (the log then holds every pre-image), and after the log was compacted
// and every pod changed once more.
func BenchmarkBytesPerObject(b *testing.B) {
	n := sizeObjects
	if v := os.Getenv("PANORAMA_BENCH_SIZE_OBJECTS"); v != "" {
		var err error
		if n, err = strconv.Atoi(v); err != nil || n < storagetest.BenchBatch || n%storagetest.BenchBatch != 0 {
			b.Fatalf("PANORAMA_BENCH_SIZE_OBJECTS=%q: want a multiple of %d", v, storagetest.BenchBatch)
		}
	}
	for _, be := range storagetest.Backends() {
		b.Run(be.Name, func(b *testing.B) {
			s := be.Open(b)
			ctx := context.Background()
			write := func(round int) {
				start := time.Now()
				storagetest.StoreRealisticPods(b, s, podsGVR, rand.New(rand.NewPCG(11, 11)), n, round, storagetest.BenchCluster)
				rate := float64(n) / time.Since(start).Seconds()
				b.ReportMetric(rate, fmt.Sprintf("round-%d-objects/s", round))
				b.Logf("%s: round %d wrote %d pods at %.0f/s", be.Name, round, n, rate)
			}
			write(0)
			jsonBytes := servedJSONBytes(b, s, n)
			b.Logf("%s: %d pods, %.0f bytes of compact JSON each as served", be.Name, n, float64(jsonBytes)/float64(n))
			report := func(phase, metric string) {
				sizes := tableBytes(b, be.Name, s)
				var total int64
				line := ""
				for _, t := range sizeTables {
					total += sizes[t]
					line += fmt.Sprintf("  %s %.0f B (%.2fx)", t, float64(sizes[t])/float64(n), float64(sizes[t])/float64(jsonBytes))
				}
				ratio := float64(total) / float64(jsonBytes)
				b.ReportMetric(ratio, metric+"-sql/json")
				b.Logf("%s: %-32s %5.0f B per object, %.2fx its JSON;%s", be.Name, phase, float64(total)/float64(n), ratio, line)
			}
			if be.Name == "postgres" {
				noteStandbyFeedback(b, s)
			}
			report("after the initial sync", "synced")
			write(1)
			report("after one change of each", "changed")
			// Databases keep the space compaction frees for later rows
			// rather than shrink their files: the steady state is a log
			// compacted as the log grows again. PostgreSQL's rows are
			// vacuumed by the store, as it writes and after compaction
			// (InnoDB's purge runs by itself).
			cur, _, err := s.Revision(ctx)
			if err != nil {
				b.Fatal(err)
			}
			if err := s.Compact(ctx, cur, true); err != nil { // keeping history, as installs do
				b.Fatal(err)
			}
			write(2)
			report("compacted, then one more change", "steady")
		})
	}
}

// noteStandbyFeedback says when a hot standby of the PostgreSQL server
// holds its vacuum back (hot_standby_feedback): the rows replaced since
// the oldest snapshot the standby may still read stay, so the figures
// then grow with the standby's lag, which here, on the same two cores,
// took PostgreSQL from 1.60 to 2.05–2.15 × the JSON.
func noteStandbyFeedback(b *testing.B, s *sqlstore.Store) {
	var standbys int
	if err := sqlstore.GormDB(s).Raw("SELECT count(*) FROM pg_stat_replication WHERE backend_xmin IS NOT NULL").Scan(&standbys).Error; err != nil {
		b.Fatal(err)
	}
	if standbys > 0 {
		b.Logf("postgres: %d hot standby(s) with hot_standby_feedback hold the vacuum back by their lag: replaced rows stay longer than the store's vacuums alone keep them", standbys)
	}
}

// servedJSONBytes adds up the JSON of every stored object as List serves it.
func servedJSONBytes(b *testing.B, s storage.Interface, want int) int64 {
	var total, n int64
	q := storage.ListQuery{GVR: podsGVR, Limit: storage.MaxLimit}
	for {
		res, err := s.List(context.Background(), &q)
		if err != nil {
			b.Fatal(err)
		}
		for _, o := range res.Objects {
			total += int64(len(o.Data))
		}
		n += int64(len(res.Objects))
		if res.Continue == "" {
			break
		}
		q.Continue = res.Continue
	}
	if n != int64(want) {
		b.Fatalf("listed %d objects, want %d", n, want)
	}
	return total
}

// tableBytes returns the bytes each of sizeTables takes, data and indexes,
// as the database accounts for them: SQLite's pages, InnoDB's pages after
// ANALYZE TABLE has counted them, PostgreSQL's relation files with their
// TOAST and indexes.
func tableBytes(b *testing.B, backend string, s *sqlstore.Store) map[string]int64 {
	db := sqlstore.GormDB(s)
	var query string
	switch backend {
	case "sqlite":
		return sqliteTableBytes(b, db)
	case "mysql":
		if err := db.Exec("ANALYZE TABLE " + strings.Join(sizeTables, ", ")).Error; err != nil {
			b.Fatal(err)
		}
		query = "SELECT table_name AS name, data_length + index_length AS bytes FROM information_schema.tables WHERE table_schema = DATABASE()"
	case "postgres":
		query = "SELECT relname AS name, pg_total_relation_size(oid) AS bytes FROM pg_class WHERE relkind = 'r' AND relnamespace = 'public'::regnamespace"
	}
	var rows []struct {
		Name  string
		Bytes int64
	}
	if err := db.Raw(query).Scan(&rows).Error; err != nil {
		b.Fatal(err)
	}
	out := map[string]int64{}
	for _, r := range rows {
		out[r.Name] = r.Bytes
	}
	return out
}

// sqliteTableBytes counts the pages each table and its indexes use: the
// pages in use (not on the free list) before and after dropping it, in a
// transaction rolled back. The SQLite build has no dbstat table.
func sqliteTableBytes(b *testing.B, db *gorm.DB) map[string]int64 {
	out := map[string]int64{}
	rollback := errors.New("rollback")
	err := db.Transaction(func(tx *gorm.DB) error {
		used := func() int64 {
			var pages, free, size int64
			for _, p := range []struct {
				pragma string
				v      *int64
			}{{"page_count", &pages}, {"freelist_count", &free}, {"page_size", &size}} {
				if err := tx.Raw("PRAGMA " + p.pragma).Scan(p.v).Error; err != nil {
					b.Fatal(err)
				}
			}
			return (pages - free) * size
		}
		before := used()
		for _, t := range sizeTables {
			if err := tx.Exec("DROP TABLE " + t).Error; err != nil {
				b.Fatal(err)
			}
			after := used()
			out[t], before = before-after, after
		}
		return rollback
	})
	if !errors.Is(err, rollback) {
		b.Fatal(err)
	}
	return out
}
