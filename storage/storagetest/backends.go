// Package storagetest opens real databases for tests: SQLite in a temporary
// folder, and the MariaDB and PostgreSQL servers of the machine, each test in
// a database of its own.
//
// A server that cannot be reached skips its backend, unless
// PANORAMA_REQUIRE_DB=1 (as CI sets), where it fails the test. The unit
// tier (go test -short, make test-unit) runs on SQLite alone: there, every
// test of a server is skipped (SkipServerInUnitTier).
//
// Beyond the backends every test runs on, Galera and PostgresReplica
// reach the MariaDB Galera cluster of hack/galera.sh and the PostgreSQL
// streaming replica of hack/pgreplica.sh, for the tests of what only they
// show.
package storagetest

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	_ "github.com/go-sql-driver/mysql"
	_ "github.com/jackc/pgx/v5/stdlib"

	"github.com/panorama-io/panorama/storage/sqlstore"
)

// Backend is one database kind.
type Backend struct {
	Name string
	open func(t testing.TB) sqlstore.Options
}

// Servers where the tests find MariaDB and PostgreSQL; overridable.
var (
	MySQLAddr    = envOr("PANORAMA_TEST_MYSQL", "root@tcp(127.0.0.1:3306)/")
	PostgresAddr = envOr("PANORAMA_TEST_POSTGRES", "host=127.0.0.1 port=5432 user=postgres sslmode=disable")
)

func envOr(k, def string) string {
	if v := os.Getenv(k); v != "" {
		return v
	}
	return def
}

// Backends lists SQLite, MySQL and PostgreSQL.
func Backends() []Backend {
	return []Backend{
		{Name: "sqlite", open: func(t testing.TB) sqlstore.Options {
			return sqlstore.Options{Driver: "sqlite", DSN: filepath.Join(t.TempDir(), "panorama.db")}
		}},
		{Name: "mysql", open: func(t testing.TB) sqlstore.Options {
			db := freshDatabase(t, "mysql", MySQLAddr+"test", "CREATE DATABASE %s CHARACTER SET utf8mb4 COLLATE utf8mb4_bin", "DROP DATABASE IF EXISTS %s")
			return sqlstore.Options{Driver: "mysql", DSN: MySQLAddr + db + "?charset=utf8mb4", MaxOpenConns: 10}
		}},
		{Name: "postgres", open: func(t testing.TB) sqlstore.Options {
			db := freshDatabase(t, "pgx", PostgresAddr+" dbname=test", "CREATE DATABASE %s", "DROP DATABASE IF EXISTS %s WITH (FORCE)")
			return sqlstore.Options{Driver: "postgres", DSN: PostgresAddr + " dbname=" + db, MaxOpenConns: 10}
		}},
	}
}

// Options returns how to reach a new, empty database of this backend,
// removed when the test ends.
func (b Backend) Options(t testing.TB) sqlstore.Options { return b.open(t) }

// Open opens a new, empty store of this backend, closed when the test ends.
func (b Backend) Open(t testing.TB) *sqlstore.Store {
	t.Helper()
	return OpenStore(t, b.open(t))
}

// OpenStore opens a store on the database opts reach, closed when the
// test ends: a second store on a Backend's Options plays another process
// sharing that database.
func OpenStore(t testing.TB, opts sqlstore.Options) *sqlstore.Store {
	t.Helper()
	s, err := sqlstore.Open(context.Background(), opts)
	if err != nil {
		t.Fatalf("opening %s: %v", opts.Driver, err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s
}

// ForEach runs fn as a subtest per backend.
func ForEach(t *testing.T, fn func(t *testing.T, b Backend)) {
	for _, b := range Backends() {
		t.Run(b.Name, func(t *testing.T) { fn(t, b) })
	}
}

// SkipServerInUnitTier skips a test that needs a database server in the
// unit tier (go test -short), which runs on SQLite alone.
func SkipServerInUnitTier(t testing.TB) {
	t.Helper()
	if testing.Short() {
		t.Skip("needs a database server, which the unit tier (go test -short, make test-unit) does not use: make test runs it")
	}
}

func freshDatabase(t testing.TB, driver, adminDSN, create, drop string) string {
	t.Helper()
	SkipServerInUnitTier(t)
	admin, err := sql.Open(driver, adminDSN)
	if err == nil {
		err = admin.Ping()
	}
	if err != nil {
		if os.Getenv("PANORAMA_REQUIRE_DB") != "" {
			t.Fatalf("%s is required (PANORAMA_REQUIRE_DB is set) but unreachable: %v", driver, err)
		}
		t.Skipf("%s unreachable: %v", driver, err)
	}
	suffix := make([]byte, 6)
	_, _ = rand.Read(suffix)
	name := "panorama_test_" + hex.EncodeToString(suffix)
	if _, err := admin.Exec(fmt.Sprintf(create, name)); err != nil {
		t.Fatalf("creating database %s: %v", name, err)
	}
	t.Cleanup(func() {
		_, _ = admin.Exec(fmt.Sprintf(drop, name))
		_ = admin.Close()
	})
	return name
}
