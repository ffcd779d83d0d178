package sqlstore_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/panorama-io/panorama/storage"
	"github.com/panorama-io/panorama/storage/sqlstore"
	"github.com/panorama-io/panorama/storage/storagetest"
	"github.com/panorama-io/panorama/test/testenv"
)

// TestNewTablesAnalyzedEarly: PostgreSQL's statistics of a new database
// are refreshed after its first thousand or so written objects, not
// twenty thousand: until then its plans assume default selectivities
// (a first sync's key lookups read whole namespaces).
func TestNewTablesAnalyzedEarly(t *testing.T) {
	s := backend(t, "postgres").Open(t)
	upsertPods(t, s, 1500, "1")
	testenv.Eventually(t, 30*time.Second, func() error {
		// last_analyze: the store's analyze, not autovacuum's
		// (last_autoanalyze).
		var analyzed int
		if err := sqlstore.GormDB(s).Raw("SELECT count(last_analyze) FROM pg_stat_user_tables WHERE relname = 'resources'").Scan(&analyzed).Error; err != nil {
			return err
		}
		if analyzed != 1 {
			return errors.New("resources not analyzed after 1,500 objects were written")
		}
		return nil
	})
}

// TestLargeTablesAnalyzedAsTheyGrowByHalf: a store on a database of many
// objects refreshes PostgreSQL's statistics once half as many rows were
// written as those objects, not every 20,000 rows (an initial sync of a
// million objects ran fifty refreshes, each reading more than the last),
// or once 20,000 were and ten minutes passed (churn).
func TestLargeTablesAnalyzedAsTheyGrowByHalf(t *testing.T) {
	const objects = 44000 // a refresh is due 22,000 rows on
	opts := backend(t, "postgres").Options(t)
	first := storagetest.OpenStore(t, opts)
	upsertPods(t, first, objects, "1")
	db := sqlstore.GormDB(first)
	// Counts the objects for the next store to read as it opens.
	execAll(t, db, "VACUUM (ANALYZE) resources")
	// settled waits until no store's maintenance runs, and for the
	// statistics to show what ran.
	settled := func() {
		testenv.Eventually(t, time.Minute, func() error {
			var running int
			if err := db.Raw("SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() AND query LIKE 'VACUUM%' AND state = 'active'").
				Scan(&running).Error; err != nil {
				return err
			}
			if running > 0 {
				return errors.New("a vacuum is running")
			}
			return nil
		})
		time.Sleep(2 * time.Second)
	}
	analyzes := func() (n int) {
		if err := db.Raw("SELECT analyze_count FROM pg_stat_user_tables WHERE relname = 'resources'").Scan(&n).Error; err != nil {
			t.Fatal(err)
		}
		return n
	}
	settled()
	before := analyzes()

	s := storagetest.OpenStore(t, opts)
	upsertPods(t, s, 21000, "2") // replaced rows: vacuums only
	settled()
	if n := analyzes() - before; n != 0 {
		t.Fatalf("21,000 rows written over %d objects: %d refreshes of the statistics, want none", objects, n)
	}
	analyzed := func(why string) {
		testenv.Eventually(t, time.Minute, func() error {
			if analyzes() == before {
				return errors.New("resources not analyzed after " + why)
			}
			return nil
		})
		settled()
		before = analyzes()
	}
	upsertPods(t, s, 1500, "3")
	analyzed("22,500 rows were written over 44,000 objects")

	// Churn: 20,000 rows refresh the statistics ten minutes after the
	// last refresh, not sooner.
	upsertPods(t, s, 20000, "4")
	settled()
	if n := analyzes() - before; n != 0 {
		t.Fatalf("20,000 rows written within ten minutes of a refresh: %d refreshes of the statistics, want none", n)
	}
	sqlstore.AgeStatistics(s, 10*time.Minute)
	upsertPods(t, s, 500, "5")
	analyzed("20,500 rows were written, ten minutes after the last refresh")
}

// upsertPods writes n pods of one cluster at memberRV, 500 a batch as a
// synchronizer's pages come.
func upsertPods(t *testing.T, s *sqlstore.Store, n int, memberRV string) {
	t.Helper()
	for i := 0; i < n; i += 500 {
		changes := make([]storage.Change, 0, 500)
		for j := i; j < min(i+500, n); j++ {
			changes = append(changes, storage.Upsert(object("Pod", "default", fmt.Sprintf("pod-%05d", j), memberRV)))
		}
		if _, err := s.ForCluster("east", storage.Unfenced).Apply(context.Background(), podsGVR, changes); err != nil {
			t.Fatal(err)
		}
	}
}

// backend is the storagetest backend of name, for a test of what one
// database alone does.
func backend(t *testing.T, name string) storagetest.Backend {
	for _, b := range storagetest.Backends() {
		if b.Name == name {
			return b
		}
	}
	t.Fatalf("no %s backend", name)
	return storagetest.Backend{}
}

// TestVacuumedAfterReplaces: PostgreSQL's tables are vacuumed once enough
// rows were replaced or deleted, and not for rows only added (an initial
// sync has nothing to vacuum).
func TestVacuumedAfterReplaces(t *testing.T) {
	s := backend(t, "postgres").Open(t)
	// resources' analyzes, and its vacuums beyond those: VACUUM (ANALYZE)
	// counts as both, the migrations' ANALYZE as an analyze.
	maintained := func() (analyzes, vacuums int) {
		var n struct{ Analyzes, Vacuums int }
		if err := sqlstore.GormDB(s).Raw("SELECT analyze_count AS analyzes, vacuum_count - analyze_count AS vacuums FROM pg_stat_user_tables WHERE relname = 'resources'").
			Scan(&n).Error; err != nil {
			t.Fatal(err)
		}
		return n.Analyzes, n.Vacuums
	}
	analyzes, vacuums := maintained()
	upsertPods(t, s, 3000, "1")
	// The early analyze after the first thousand is the only maintenance:
	// wait for it, and for the statistics to show all that ran.
	testenv.Eventually(t, 30*time.Second, func() error {
		if a, _ := maintained(); a == analyzes {
			return errors.New("resources not analyzed after 3,000 objects were added")
		}
		return nil
	})
	time.Sleep(2 * time.Second)
	if _, v := maintained(); v != vacuums {
		t.Fatalf("3,000 objects added: %d vacuums, want none", v-vacuums)
	}
	upsertPods(t, s, 3000, "2")
	testenv.Eventually(t, 30*time.Second, func() error {
		if _, v := maintained(); v == vacuums {
			return errors.New("resources not vacuumed after 3,000 objects were replaced")
		}
		return nil
	})
}
