package sqlstore_test

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/panorama-io/panorama/storage"
	"github.com/panorama-io/panorama/storage/sqlstore"
	"github.com/panorama-io/panorama/storage/storagetest"
)

// TestDatabaseSizeErrorRefusesTheBatch: a write the database refuses for
// its size is refused (storage.IsInvalid), not failed as the database's
// error, which a synchronizer would retry forever: its caller then writes
// the objects apart, down to the one refused. An object of 24 MiB of JSON
// that does not compress is more than MariaDB's default
// max_allowed_packet takes; PostgreSQL and SQLite take it.
func TestDatabaseSizeErrorRefusesTheBatch(t *testing.T) {
	raw := make([]byte, 18<<20)
	_, _ = rand.Read(raw)
	data := base64.StdEncoding.EncodeToString(raw)
	storagetest.ForEach(t, func(t *testing.T, b storagetest.Backend) {
		s := b.Open(t)
		big := object("Secret", "ns", "big", "1", func(u *unstructured.Unstructured) { u.Object["data"] = map[string]any{"k": data} })
		good := object("Secret", "ns", "good", "1")
		_, err := s.ForCluster("east", storage.Unfenced).Apply(context.Background(), secretsGVR, []storage.Change{storage.Upsert(good), storage.Upsert(big)})
		var some *storage.InvalidObjectError
		switch {
		case b.Name != "mysql" && err != nil:
			t.Fatalf("%v, want both stored", err)
		case b.Name == "mysql" && (!storage.IsInvalid(err) || errors.As(err, &some)):
			t.Fatalf("%v, want the batch refused whole", err)
		}
		if got := names(t, s, storage.ListQuery{GVR: secretsGVR}); (b.Name == "mysql") != (len(got) == 0) {
			t.Fatalf("stored %q", got)
		}
	})
}

// TestSizeErrorsAreRefusals: SQLite's and PostgreSQL's errors for a value
// larger than they take are refusals of the write's values, as MariaDB's
// is (TestDatabaseSizeErrorRefusesTheBatch); a database's other errors
// are not.
func TestSizeErrorsAreRefusals(t *testing.T) {
	storagetest.ForEach(t, func(t *testing.T, b storagetest.Backend) {
		db := sqlstore.GormDB(b.Open(t))
		var n int64
		if tooLarge, ok := map[string]string{
			"sqlite":   "SELECT zeroblob(2000000000)",    // SQLITE_TOOBIG
			"postgres": "SELECT repeat('x', 1100000000)", // 54000
		}[b.Name]; ok {
			err := db.Raw(tooLarge).Scan(&n).Error
			if reason, ok := sqlstore.Refusal(fmt.Errorf("wrapped: %w", err)); !ok || reason != "the database refused a value as too large" {
				t.Errorf("%s: %v is %q, %v", tooLarge, err, reason, ok)
			}
		}
		err := db.Raw("SELECT no_such_column FROM no_such_table").Scan(&n).Error
		if _, ok := sqlstore.Refusal(err); err == nil || ok {
			t.Errorf("%v is a refusal", err)
		}
	})
}
