package apiserver

import (
	"context"
	"database/sql"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strconv"
	"testing"
	"time"

	searchv1alpha1 "github.com/panorama-io/panorama/apis/search/v1alpha1"
	"github.com/panorama-io/panorama/apiserver/watchcache"
	"github.com/panorama-io/panorama/storage/sqlstore"
	"github.com/panorama-io/panorama/storage/storagetest"
)

// TestListsThroughAReplica serves lists from a PostgreSQL streaming
// replica (--storage-read-dsn) while the writer writes to the primary, and
// pauses the replica's replay: a list, latest or at a resourceVersion the
// client got from the primary, never shows an older state; it is read
// from the primary instead.
func TestListsThroughAReplica(t *testing.T) {
	ctx := context.Background()
	opts := storagetest.PostgresReplica(t)
	writer := storagetest.OpenStore(t, sqlstore.Options{Driver: opts.Driver, DSN: opts.DSN, MaxOpenConns: 4})
	store, err := sqlstore.OpenForReads(ctx, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = store.Close() })
	standby, err := sql.Open("pgx", opts.ReadDSN)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_, _ = standby.Exec("SELECT pg_wal_replay_resume()")
		_ = standby.Close()
	})
	cctx, cancel := context.WithCancel(ctx)
	t.Cleanup(cancel)
	// The cache tails the replica: while its replay is paused, a list
	// waits for the cache to reach the primary's revision as long as a
	// read waits for the replica (--storage-read-wait), then reads the
	// store, which reads the primary.
	c := watchcache.New(store, watchcache.Options{PollInterval: 100 * time.Millisecond})
	go func() { _ = c.Run(cctx) }()
	reg := NewRegistry()
	reg.Set(clusterServing("east", podsGVR, "Pod"))
	h := &Handler{registry: reg, store: store, cache: c, crds: crdColumns{store: store}, authz: testGrants}
	mux := http.NewServeMux()
	mux.Handle(searchv1alpha1.ViewsPrefix+"/", h)
	srv := httptest.NewServer(asUser(mux))
	t.Cleanup(srv.Close)
	pods := srv.URL + searchv1alpha1.ViewPath("") + "/api/v1/pods"

	list := func(query string, want int, atLeast int64) {
		t.Helper()
		code, _, body := getJSON(t, pods+query, "")
		if code != http.StatusOK {
			t.Fatalf("list%s: %d %v", query, code, body)
		}
		rv, _ := strconv.ParseInt(body["metadata"].(map[string]any)["resourceVersion"].(string), 10, 64)
		if n := len(body["items"].([]any)); n != want || rv < atLeast {
			t.Fatalf("list%s: %d pods at %d, want %d at %d or later", query, n, rv, want, atLeast)
		}
	}
	putPod(t, writer, "east", "a")
	list("", 1, 1)

	if _, err := standby.Exec("SELECT pg_wal_replay_pause()"); err != nil {
		t.Fatal(err)
	}
	replicated := store.(*sqlstore.Replicated)
	fallbacks := replicated.Fallbacks()
	putPod(t, writer, "east", "b")
	rev, _, err := writer.Revision(ctx)
	if err != nil {
		t.Fatal(err)
	}
	list("", 2, rev)
	list(fmt.Sprintf("?resourceVersion=%d", rev), 2, rev)
	list(fmt.Sprintf("?resourceVersion=%d&resourceVersionMatch=Exact", rev), 2, rev)
	// The latest list; the NotOlderThan list's check and the list; the
	// Exact list.
	if n := replicated.Fallbacks() - fallbacks; n != 4 {
		t.Fatalf("%d reads fell back to the primary, want 4", n)
	}
}
