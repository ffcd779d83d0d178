package storagetest

import (
	"database/sql"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/panorama-io/panorama/storage/sqlstore"
)

// GaleraAddrs are the nodes of the MariaDB Galera cluster that
// hack/galera.sh runs (comma-separated in PANORAMA_TEST_GALERA).
var GaleraAddrs = strings.Split(envOr("PANORAMA_TEST_GALERA",
	"root@tcp(127.0.0.1:3311)/,root@tcp(127.0.0.1:3312)/,root@tcp(127.0.0.1:3313)/"), ",")

// Galera returns how to reach a new, empty database on each node of the
// Galera cluster, removed when the test ends: one database, replicated,
// reached through a different node by each Options. An unreachable cluster
// skips the test, or fails it under PANORAMA_REQUIRE_DB.
func Galera(t testing.TB) []sqlstore.Options {
	t.Helper()
	if len(GaleraAddrs) < 2 {
		t.Fatalf("PANORAMA_TEST_GALERA names %d nodes; a multi-primary test needs 2 or more", len(GaleraAddrs))
	}
	// The database is created through node 1: DDL replicates to all nodes
	// before it returns (total order isolation).
	db := freshDatabase(t, "mysql", GaleraAddrs[0]+"test", "CREATE DATABASE %s CHARACTER SET utf8mb4 COLLATE utf8mb4_bin", "DROP DATABASE IF EXISTS %s")
	out := make([]sqlstore.Options, len(GaleraAddrs))
	for i, addr := range GaleraAddrs {
		out[i] = sqlstore.Options{Driver: "mysql", DSN: addr + db + "?charset=utf8mb4", MaxOpenConns: 10}
	}
	return out
}

// GaleraScript runs hack/galera.sh with args ("start", "kill N",
// "start-node N"), for tests that crash and restart nodes of its cluster.
// A cluster named by PANORAMA_TEST_GALERA is not the script's to crash:
// the test is skipped.
func GaleraScript(t testing.TB, args ...string) {
	t.Helper()
	SkipServerInUnitTier(t)
	if os.Getenv("PANORAMA_TEST_GALERA") != "" {
		t.Skip("kills and restarts nodes of the cluster of hack/galera.sh only, not of PANORAMA_TEST_GALERA")
	}
	_, here, _, _ := runtime.Caller(0)
	script := filepath.Join(filepath.Dir(here), "..", "..", "hack", "galera.sh")
	out, err := exec.Command(script, args...).CombinedOutput()
	if err != nil {
		t.Fatalf("hack/galera.sh %v: %v\n%s", args, err, out)
	}
}

// PostgresReplicaAddr is the streaming replica of the PostgreSQL server
// that hack/pgreplica.sh runs.
var PostgresReplicaAddr = envOr("PANORAMA_TEST_POSTGRES_REPLICA", "host=127.0.0.1 port=5433 user=postgres sslmode=disable")

// PostgresReplica returns how to reach a new, empty database on the
// PostgreSQL primary, removed when the test ends, with ReadDSN set to the
// same database on its streaming replica, once the replica has it. An
// unreachable replica skips the test, or fails it under
// PANORAMA_REQUIRE_DB.
func PostgresReplica(t testing.TB) sqlstore.Options {
	t.Helper()
	SkipServerInUnitTier(t)
	replica, err := sql.Open("pgx", PostgresReplicaAddr+" dbname=postgres")
	if err == nil {
		err = replica.Ping()
	}
	if err != nil {
		if os.Getenv("PANORAMA_REQUIRE_DB") != "" {
			t.Fatalf("the PostgreSQL replica is required (PANORAMA_REQUIRE_DB is set) but unreachable (hack/pgreplica.sh start): %v", err)
		}
		t.Skipf("PostgreSQL replica unreachable (hack/pgreplica.sh start): %v", err)
	}
	defer replica.Close()
	db := freshDatabase(t, "pgx", PostgresAddr+" dbname=test", "CREATE DATABASE %s", "DROP DATABASE IF EXISTS %s WITH (FORCE)")
	// The replica replays the CREATE DATABASE soon; the limit only keeps a
	// broken replica from hanging the test.
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(10 * time.Millisecond) {
		var n int
		if err := replica.QueryRow("SELECT count(*) FROM pg_database WHERE datname = $1", db).Scan(&n); err != nil {
			t.Fatal(err)
		}
		if n == 1 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the replica has not replayed the creation of database %s", db)
		}
	}
	return sqlstore.Options{
		Driver: "postgres", DSN: PostgresAddr + " dbname=" + db, MaxOpenConns: 10,
		ReadDSN: PostgresReplicaAddr + " dbname=" + db, ReadWait: sqlstore.DefaultReadWait,
	}
}
