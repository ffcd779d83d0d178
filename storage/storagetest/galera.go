package storagetest

import (
	"strings"
	"testing"

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
