package sqlstore_test

import (
	"context"
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
	s := postgres(t).Open(t)
	ctx := context.Background()
	for i := 0; i < 1500; i += 500 {
		changes := make([]storage.Change, 0, 500)
		for j := i; j < i+500; j++ {
			changes = append(changes, storage.Upsert(object("Pod", "default", fmt.Sprintf("pod-%05d", j), "1")))
		}
		if _, err := s.Apply(ctx, "east", podsGVR, changes); err != nil {
			t.Fatal(err)
		}
	}
	testenv.Eventually(t, 30*time.Second, func() error {
		var counted float64
		if err := sqlstore.GormDB(s).Raw("SELECT reltuples FROM pg_class WHERE oid = 'resources'::regclass").Scan(&counted).Error; err != nil {
			return err
		}
		if counted < 1000 {
			return fmt.Errorf("the planner counts %.0f objects of 1,500", counted)
		}
		return nil
	})
}

func postgres(t *testing.T) storagetest.Backend {
	for _, b := range storagetest.Backends() {
		if b.Name == "postgres" {
			return b
		}
	}
	t.Fatal("no PostgreSQL backend")
	return storagetest.Backend{}
}
