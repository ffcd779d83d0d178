package sqlstore_test

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"regexp"
	"slices"
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

// statement is one query a Store ran, with its arguments.
type statement struct {
	sql  string
	vars []any
}

// isKeyLookup tells the statements that look up the stored rows of a
// write's keys (lookup.go).
func isKeyLookup(st statement) bool {
	return strings.HasPrefix(st.sql, "SELECT * FROM") && strings.Contains(st.sql, "AND name IN")
}

// queryRecorder keeps the queries a Store runs while it records.
type queryRecorder struct {
	mu        sync.Mutex
	recording bool
	out       []statement
}

func newQueryRecorder(t testing.TB, s *sqlstore.Store) *queryRecorder {
	t.Helper()
	r := &queryRecorder{}
	record := func(tx *gorm.DB) {
		r.mu.Lock()
		defer r.mu.Unlock()
		if r.recording {
			r.out = append(r.out, statement{sql: tx.Statement.SQL.String(), vars: append([]any(nil), tx.Statement.Vars...)})
		}
	}
	// Finds are queries; Raw statements scanned are rows.
	callbacks := sqlstore.GormDB(s).Callback()
	if err := callbacks.Query().After("gorm:query").Register("test:record", record); err != nil {
		t.Fatal(err)
	}
	if err := callbacks.Row().After("gorm:row").Register("test:record", record); err != nil {
		t.Fatal(err)
	}
	return r
}

// record returns the queries run while fn runs.
func (r *queryRecorder) record(fn func()) []statement {
	r.mu.Lock()
	r.recording, r.out = true, nil
	r.mu.Unlock()
	fn()
	r.mu.Lock()
	defer r.mu.Unlock()
	r.recording = false
	return r.out
}

// rowsExamined runs the statements again and counts the rows the database
// read to answer them: index entries and table rows, whether they were
// returned or filtered out. MariaDB counts them in the session's
// Handler_read_* status and, for the index entries an index condition
// rejected, in Handler_icp_*; PostgreSQL in EXPLAIN ANALYZE. SQLite counts
// nothing that its driver shows, so there the plans are checked instead:
// every table is searched by an index, never scanned or sorted.
//
// With asIfLarge, PostgreSQL plans as for tables larger than a test's: it
// rightly reads a table of a few thousand rows whole rather than through
// an index, which says nothing about the index range a large log gets.
func rowsExamined(t testing.TB, b storagetest.Backend, s *sqlstore.Store, stmts []statement, asIfLarge bool) int64 {
	t.Helper()
	ctx := context.Background()
	conn := storeConn(t, s)
	defer conn.Close()
	var total int64
	switch b.Name {
	case "mysql":
		// SHOW STATUS reads rows itself: measure that once and take it off.
		base := handlerReads(t, conn)
		overhead := handlerReads(t, conn) - base
		before := handlerReads(t, conn)
		for _, st := range stmts {
			drain(t, conn, st.sql, st.vars)
		}
		total = handlerReads(t, conn) - before - overhead
	case "postgres":
		if asIfLarge {
			if _, err := conn.ExecContext(ctx, "SET enable_seqscan = off"); err != nil {
				t.Fatal(err)
			}
			defer func() { _, _ = conn.ExecContext(ctx, "RESET enable_seqscan") }()
		}
		for _, st := range stmts {
			var plan string
			if err := conn.QueryRowContext(ctx, "EXPLAIN (ANALYZE, FORMAT JSON) "+st.sql, st.vars...).Scan(&plan); err != nil {
				t.Fatalf("explain %s: %v", st.sql, err)
			}
			var nodes []struct{ Plan pgPlan }
			if err := json.Unmarshal([]byte(plan), &nodes); err != nil {
				t.Fatal(err)
			}
			for _, n := range nodes {
				total += n.Plan.rowsRead()
			}
		}
	case "sqlite":
		for _, st := range stmts {
			steps := sqlitePlan(t, conn, st)
			// A subquery run as a co-routine yields its rows to a scan of
			// its name: it is no table.
			coroutines := map[string]bool{}
			for _, d := range steps {
				if name, ok := strings.CutPrefix(d, "CO-ROUTINE "); ok {
					coroutines[name] = true
				}
			}
			for _, d := range steps {
				// A list of values (row values IN) is scanned too: it is no table.
				scan := strings.HasPrefix(d, "SCAN ") && !strings.HasPrefix(d, "SCAN panorama_meta") && !strings.HasSuffix(d, " CONSTANT ROWS") &&
					!coroutines[strings.TrimPrefix(d, "SCAN ")]
				if scan || strings.Contains(d, "TEMP B-TREE FOR ORDER BY") {
					t.Errorf("sqlite plan of %s:\n%s", st.sql, strings.Join(steps, "\n"))
				}
			}
		}
	}
	return total
}

// storeConn is a connection of s's pool, to be closed (SQLite's only one).
func storeConn(t testing.TB, s *sqlstore.Store) *sql.Conn {
	t.Helper()
	sqlDB, err := sqlstore.GormDB(s).DB()
	if err != nil {
		t.Fatal(err)
	}
	conn, err := sqlDB.Conn(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return conn
}

// sqlitePlan is SQLite's plan of st, a line a step.
func sqlitePlan(t testing.TB, conn *sql.Conn, st statement) []string {
	t.Helper()
	rows, err := conn.QueryContext(context.Background(), "EXPLAIN QUERY PLAN "+st.sql, st.vars...)
	if err != nil {
		t.Fatalf("explain %s: %v", st.sql, err)
	}
	defer rows.Close()
	var steps []string
	for rows.Next() {
		var id, parent, unused int
		var detail string
		if err := rows.Scan(&id, &parent, &unused, &detail); err != nil {
			t.Fatal(err)
		}
		steps = append(steps, detail)
	}
	return steps
}

func handlerReads(t testing.TB, conn *sql.Conn) int64 {
	t.Helper()
	// An index condition (ICP) rejects entries inside the engine, which no
	// Handler_read counter sees: they are the attempts it did not match.
	rows, err := conn.QueryContext(context.Background(),
		"SHOW SESSION STATUS WHERE Variable_name LIKE 'Handler_read%' OR Variable_name IN ('Handler_icp_attempts', 'Handler_icp_match')")
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var n int64
	for rows.Next() {
		var name string
		var v int64
		if err := rows.Scan(&name, &v); err != nil {
			t.Fatal(err)
		}
		if name == "Handler_icp_match" {
			v = -v
		}
		n += v
	}
	return n
}

func drain(t testing.TB, conn *sql.Conn, query string, vars []any) {
	t.Helper()
	rows, err := conn.QueryContext(context.Background(), query, vars...)
	if err != nil {
		t.Fatalf("%s: %v", query, err)
	}
	defer rows.Close()
	for rows.Next() {
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
}

// pgPlan is a node of PostgreSQL's EXPLAIN (ANALYZE, FORMAT JSON).
type pgPlan struct {
	NodeType       string   `json:"Node Type"`
	ActualRows     float64  `json:"Actual Rows"`
	ActualLoops    float64  `json:"Actual Loops"`
	RemovedFilter  float64  `json:"Rows Removed by Filter"`
	RemovedRecheck float64  `json:"Rows Removed by Index Recheck"`
	Plans          []pgPlan `json:"Plans"`
}

// rowsRead adds up what the scans of the plan read: the rows they passed
// on and the rows their filters dropped, in every loop.
func (p pgPlan) rowsRead() int64 {
	var n int64
	// A bitmap heap scan reads again what its bitmap index scan found.
	if strings.HasSuffix(p.NodeType, "Scan") && p.NodeType != "Bitmap Index Scan" {
		n = int64((p.ActualRows + p.RemovedFilter + p.RemovedRecheck) * p.ActualLoops)
	}
	for _, c := range p.Plans {
		n += c.rowsRead()
	}
	return n
}

// costObjects are stored by costFixture, in three clusters and seven
// namespaces, each created a second after the one before.
const costObjects, costLimit = 3000, 50

func costFixture(t *testing.T, s *sqlstore.Store) { costPods(t, s, nil) }

// costPods writes costObjects pods, each made by costPod and then shape
// (if any), in batches of 500 that go to the clusters in turn, has the
// planner count them, and returns the store's revision.
func costPods(t *testing.T, s *sqlstore.Store, shape func(i int, pod *unstructured.Unstructured)) int64 {
	t.Helper()
	const batch = 500
	for i := 0; i < costObjects; i += batch {
		changes := make([]storage.Change, 0, batch)
		for j := i; j < i+batch; j++ {
			pod := costPod(j, "1")
			if shape != nil {
				shape(j, pod)
			}
			changes = append(changes, storage.Upsert(pod))
		}
		if _, err := s.ForCluster(clusters[(i/batch)%len(clusters)], storage.Unfenced).Apply(context.Background(), podsGVR, changes); err != nil {
			t.Fatal(err)
		}
	}
	refreshStatistics(t, s)
	rev, _, err := s.Revision(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return rev
}

// refreshStatistics has the planner count the rows, as a Store does after
// many more writes than a test makes: plans are chosen by the counts.
func refreshStatistics(t *testing.T, s *sqlstore.Store) {
	t.Helper()
	if err := sqlstore.RefreshStatistics(s); err != nil {
		t.Fatal(err)
	}
}

func costPod(i int, memberRV string) *unstructured.Unstructured {
	return object("Pod", fmt.Sprintf("ns-%d", i%7), fmt.Sprintf("pod-%05d", i), memberRV, withCreated(baseTime.Add(time.Duration(i)*time.Second)))
}

// indexedOrders are the orderings an index serves, in both directions: a
// page of them must cost the same wherever it starts.
var indexedOrders = [][]storage.OrderBy{
	nil,
	{{Field: storage.OrderCluster, Desc: true}},
	{{Field: storage.OrderCreated}},
	{{Field: storage.OrderCreated, Desc: true}},
}

// latePage lists the page of q that starts after position `from` of the
// list at revision rev, checks it against that list, and returns the
// statements the page ran.
func latePage(t *testing.T, s *sqlstore.Store, rec *queryRecorder, q storage.ListQuery, rev int64, from int) []statement {
	t.Helper()
	ctx := context.Background()
	all := q
	all.Limit, all.Revision = 0, rev
	full, err := s.List(ctx, &all)
	if err != nil {
		t.Fatal(err)
	}
	q.Continue = storage.EncodeContinue(rev, q.Order(), &full.Objects[from])
	var page *storage.ListResult
	stmts := rec.record(func() {
		if page, err = s.List(ctx, &q); err != nil {
			t.Fatal(err)
		}
	})
	want := full.Objects[from+1 : from+1+int(q.Limit)]
	if len(page.Objects) != len(want) {
		t.Fatalf("page of %d objects, want %d", len(page.Objects), len(want))
	}
	for i := range want {
		if page.Objects[i].Key != want[i].Key || page.Objects[i].Revision != want[i].Revision {
			t.Fatalf("object %d of the page is %v at %d, want %v at %d", i, page.Objects[i].Key, page.Objects[i].Revision, want[i].Key, want[i].Revision)
		}
	}
	return stmts
}

// TestLatePageReadsAboutLimitRows: a page near the end of a list reads
// about as many rows as it returns, as the first page does; the keyset seek
// must be an index range on every database (MariaDB does not make one of a
// row-value comparison).
func TestLatePageReadsAboutLimitRows(t *testing.T) {
	storagetest.ForEach(t, func(t *testing.T, b storagetest.Backend) {
		s := b.Open(t)
		rec := newQueryRecorder(t, s)
		costFixture(t, s)
		rev, _, err := s.Revision(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		for _, order := range indexedOrders {
			q := storage.ListQuery{GVR: podsGVR, Limit: costLimit, OrderBy: order}
			stmts := latePage(t, s, rec, q, rev, costObjects-3*costLimit)
			if n := rowsExamined(t, b, s, stmts, false); n > 3*costLimit {
				t.Errorf("orderby %v: a late page of %d read %d rows", order, costLimit, n)
			}
		}
	})
}

// TestFleetPageReadsAboutLimitRows: so does a page from anywhere in a
// list of many clusters of one namespace each (a fleet of one member's
// copies). MariaDB planned such a page as a ref of the resource's rows
// with the seek as an index condition, which reads every index entry
// before the page (walkIndex), and which its Handler_read counters do not
// show: pages of 500 from a quarter, the middle and near the end of 10,000
// read 3,008, 5,508 and 9,008 rows, in either order.
func TestFleetPageReadsAboutLimitRows(t *testing.T) {
	const fleet, perCluster, limit = 50, 200, 500
	storagetest.ForEach(t, func(t *testing.T, b storagetest.Backend) {
		s := b.Open(t)
		rec := newQueryRecorder(t, s)
		ctx := context.Background()
		for c := range fleet {
			changes := make([]storage.Change, 0, perCluster)
			for i := range perCluster {
				// Created in turns across the clusters.
				created := withCreated(baseTime.Add(time.Duration(i*fleet+c) * time.Second))
				changes = append(changes, storage.Upsert(object("Pod", "default", fmt.Sprintf("pod-%05d", i), "1", created)))
			}
			if _, err := s.ForCluster(fmt.Sprintf("fleet-%02d", c), storage.Unfenced).Apply(ctx, podsGVR, changes); err != nil {
				t.Fatal(err)
			}
		}
		refreshStatistics(t, s)
		rev, _, err := s.Revision(ctx)
		if err != nil {
			t.Fatal(err)
		}
		const n = fleet * perCluster
		for _, order := range indexedOrders {
			for _, from := range []int{n / 4, n / 2, n - 3*limit} {
				q := storage.ListQuery{GVR: podsGVR, Limit: limit, OrderBy: order}
				stmts := latePage(t, s, rec, q, rev, from)
				if rows := rowsExamined(t, b, s, stmts, false); rows > 3*limit {
					t.Errorf("orderby %v: a page of %d after the %dth of %d read %d rows", order, limit, from, n, rows)
				}
			}
			// One cluster's page reads about that cluster, in any order:
			// the creation-time index holds the cluster after the time,
			// and walking it would test the other clusters' rows too.
			q := storage.ListQuery{GVR: podsGVR, Limit: 50, OrderBy: order, Clusters: []string{"fleet-07"}}
			stmts := latePage(t, s, rec, q, rev, perCluster/2)
			if rows := rowsExamined(t, b, s, stmts, false); rows > 2*perCluster {
				t.Errorf("orderby %v: a page of one cluster's %d read %d rows", order, perCluster, rows)
			}
		}
	})
}

// TestPageCostIndependentOfChangesAfterPin: a page pinned to a revision
// after which many changes landed (as a forged old continue token asks)
// reads about as many rows as it returns, not the log since the pin.
func TestPageCostIndependentOfChangesAfterPin(t *testing.T) {
	storagetest.ForEach(t, func(t *testing.T, b storagetest.Backend) {
		s := b.Open(t)
		rec := newQueryRecorder(t, s)
		costFixture(t, s)
		ctx := context.Background()
		pin, _, err := s.Revision(ctx)
		if err != nil {
			t.Fatal(err)
		}
		// Every third object changes twice and every 30th is deleted: the
		// log after the pin is 2,100 entries, the page 50. The page reads
		// its rows, the changed rows it skips (a third), their log entries
		// and pre-images: several times 50, and never the whole log.
		for round := range 2 {
			for c, cluster := range clusters {
				var changes []storage.Change
				for i := c * costObjects / 3; i < (c+1)*costObjects/3; i++ {
					switch {
					case i%30 == 0 && round == 1:
						changes = append(changes, storage.Delete(fmt.Sprintf("ns-%d", i%7), fmt.Sprintf("pod-%05d", i)))
					case i%3 == 0:
						changes = append(changes, storage.Upsert(costPod(i, fmt.Sprint(2+round))))
					}
				}
				if _, err := s.ForCluster(cluster, storage.Unfenced).Apply(ctx, podsGVR, changes); err != nil {
					t.Fatal(err)
				}
			}
		}
		// A forged token can name no older revision than the compacted one;
		// there the log since the pin is all the log there is.
		if err := s.Compact(ctx, pin, false); err != nil {
			t.Fatal(err)
		}
		refreshStatistics(t, s)
		for _, order := range indexedOrders {
			for _, from := range []int{0, costObjects / 2, costObjects - 3*costLimit} {
				q := storage.ListQuery{GVR: podsGVR, Limit: costLimit, OrderBy: order}
				stmts := latePage(t, s, rec, q, pin, from)
				if n := rowsExamined(t, b, s, stmts, true); n > 10*costLimit {
					t.Errorf("orderby %v from %d: a page of %d pinned before 2,100 changes read %d rows", order, from, costLimit, n)
				}
			}
		}
	})
}

// TestWriteReadsOnlyItsKeys: a write looks up the stored rows of its keys
// reading about one row each, however many clusters hold a copy of each
// name, and however many objects share their namespace; not every
// cluster's copy (MariaDB through the index of names, PostgreSQL through
// that of namespaces and names when it takes the two for independent:
// with names spread over 50 namespaces, it then estimates a namespace and
// name at less than a row), nor the namespace's every object (PostgreSQL,
// given the keys as (cluster, namespace, name) tuples, seeks the cluster
// and namespace they share and filters the names).
func TestWriteReadsOnlyItsKeys(t *testing.T) {
	const copies, perCluster, written = 20, 300, 10
	for _, namespaces := range []int{50, 1} {
		t.Run(fmt.Sprintf("%d-namespaces", namespaces), func(t *testing.T) {
			storagetest.ForEach(t, func(t *testing.T, b storagetest.Backend) {
				s := b.Open(t)
				ctx := context.Background()
				write := func(cluster string, n int, memberRV string) {
					changes := make([]storage.Change, n)
					for i := range changes {
						changes[i] = storage.Upsert(object("Pod", fmt.Sprint("ns-", i%namespaces), fmt.Sprint("pod-", i), memberRV))
					}
					if _, err := s.ForCluster(cluster, storage.Unfenced).Apply(ctx, podsGVR, changes); err != nil {
						t.Fatal(err)
					}
				}
				for c := range copies {
					write(fmt.Sprint("member-", c), perCluster, "1")
				}
				if err := sqlstore.RefreshStatistics(s); err != nil {
					t.Fatal(err)
				}
				rec := newQueryRecorder(t, s)
				var lookups []statement
				for _, st := range rec.record(func() { write("member-3", written, "2") }) {
					if isKeyLookup(st) {
						lookups = append(lookups, st)
					}
				}
				// A list of names a namespace, LookupLists lists a statement.
				lists := min(written, namespaces)
				if want := (lists + sqlstore.LookupLists(s) - 1) / sqlstore.LookupLists(s); len(lookups) != want {
					t.Fatalf("the write looked its keys up in %d statements, want %d", len(lookups), want)
				}
				if b.Name == "sqlite" {
					// SQLite counts no rows read: its plan must seek each key whole.
					conn := storeConn(t, s)
					for _, st := range lookups {
						if steps := sqlitePlan(t, conn, st); !slices.ContainsFunc(steps, func(d string) bool {
							return strings.Contains(d, "cluster=? AND namespace=? AND name=?")
						}) {
							t.Errorf("sqlite looks keys up with\n%s", strings.Join(steps, "\n"))
						}
					}
					_ = conn.Close()
				}
				if rows := rowsExamined(t, b, s, lookups, false); rows > 3*written {
					t.Errorf("looking up %d keys, each stored in %d clusters, read %d rows", written, copies, rows)
				}
			})
		})
	}
}

// TestSelectorPageReadsAboutWhatItShows: a page selected by labels reads
// about as many rows as it must test to fill it, whether the labels it
// requires are common or rare and whatever it excludes: not every object
// that has a common label (MariaDB plans the attribute subqueries as
// semi-joins that read all their matches unless the store probes each
// row's attributes in the order of the page instead, probe.go), nor every
// row of the resource for a rare one.
func TestSelectorPageReadsAboutWhatItShows(t *testing.T) {
	storagetest.ForEach(t, func(t *testing.T, b storagetest.Backend) {
		s := b.Open(t)
		rec := newQueryRecorder(t, s)
		// Every other pod is labelled half=yes, every 300th rare=yes.
		rev := costPods(t, s, func(j int, pod *unstructured.Unstructured) {
			l := map[string]string{"half": "no"}
			if j%2 == 0 {
				l["half"] = "yes"
			}
			if j%300 == 0 {
				l["rare"] = "yes"
			}
			pod.SetLabels(l)
		})
		for _, tc := range []struct {
			selector string
			matches  int
			probes   string // on MariaDB: the conditions probed, in order
		}{
			{"half=yes", costObjects / 2, "IS NOT NULL"},
			{"half!=yes", costObjects / 2, "IS NULL"},
			{"half in (yes),rare", costObjects / 300, ""},
			{"rare,half notin (no)", costObjects / 300, "IS NULL"},
		} {
			for _, order := range indexedOrders[:3] {
				q := storage.ListQuery{GVR: podsGVR, Limit: 2, OrderBy: order, Labels: mustReqs(tc.selector)}
				if tc.matches > 100 {
					q.Limit = costLimit
				}
				from := tc.matches / 2
				stmts := latePage(t, s, rec, q, rev, from)
				if b.Name == "mysql" {
					checkProbes(t, stmts, tc.probes)
				}
				// A page reads fewer than the plan that does not suit its
				// selection would: all the matches of a common label,
				// those tested of a rare one.
				checkPageReads(t, b, s, stmts, tc.selector, order, q.Limit, tc.matches)
			}
		}
	})
}

// checkPageReads fails t when a page of limit of matches (of costObjects),
// read by stmts, read as many rows as all of its matches and as the rows
// it must test in order until it is full, about objects/matches a row it
// shows.
func checkPageReads(t *testing.T, b storagetest.Backend, s *sqlstore.Store, stmts []statement, query string, order []storage.OrderBy, limit int64, matches int) {
	t.Helper()
	tested := int(limit+1) * costObjects / matches
	if n := rowsExamined(t, b, s, stmts, true); n >= int64(max(tested, matches)) {
		t.Errorf("%s, orderby %v: a page of %d of %d matches read %d rows, to test %d", query, order, limit, matches, n, tested)
	}
}

// TestKeywordPageReadsAboutWhatItShows: a page of a keyword search reads
// about as many rows as it must test to fill it on MariaDB, whose text
// index finds every match of a word before the page's LIMIT applies: a
// common word's page probes each row's document in the page's order, a
// rare word's reads its matches by the index (probe.go).
func TestKeywordPageReadsAboutWhatItShows(t *testing.T) {
	storagetest.ForEach(t, func(t *testing.T, b storagetest.Backend) {
		s := b.Open(t)
		rec := newQueryRecorder(t, s)
		// Every other pod's note has the word half, every 300th's rare.
		rev := costPods(t, s, func(j int, pod *unstructured.Unstructured) {
			note := "deployed by ci"
			if j%2 == 0 {
				note += ", half of them"
			}
			if j%300 == 0 {
				note += ", a rare one"
			}
			pod.SetAnnotations(map[string]string{"note": note})
		})
		for _, tc := range []struct {
			terms   string
			matches int
			probes  string // on MariaDB
		}{
			{"half", costObjects / 2, "IS NOT NULL"},
			{"hal*", costObjects / 2, "IS NOT NULL"},
			{"rare", costObjects / 300, ""},
			{"rare,half", costObjects / 300, ""},
		} {
			for _, order := range indexedOrders[:3] {
				q := storage.ListQuery{GVR: podsGVR, Limit: 2, OrderBy: order, Keywords: keywords(tc.terms)}
				if tc.matches > 100 {
					q.Limit = costLimit
				}
				stmts := latePage(t, s, rec, q, rev, tc.matches/2)
				if b.Name != "mysql" {
					continue // their text indexes are read to the page's end
				}
				checkProbes(t, stmts, tc.probes)
				checkPageReads(t, b, s, stmts, "q="+tc.terms, order, q.Limit, tc.matches)
			}
		}
	})
}

// TestImageValuesReadTheirCells: an images search resolves the part of an
// image it is given to the images that contain it by reading about one
// row per cluster and image, not the images of every row: MariaDB read the
// index of images from its start to the matches, 3 s at a million pods.
// The page then reads as a label's of those values does, and must return
// what the whole list has there.
func TestImageValuesReadTheirCells(t *testing.T) {
	storagetest.ForEach(t, func(t *testing.T, b storagetest.Backend) {
		s := b.Open(t)
		rec := newQueryRecorder(t, s)
		// 30 images, each on a 30th of the pods; every 300th pod has a
		// rare one too.
		const images = 30 + 1
		rev := costPods(t, s, func(j int, pod *unstructured.Unstructured) {
			containers := []any{map[string]any{"name": "app", "image": fmt.Sprintf("registry.example/team-%02d/app:1", j%30)}}
			if j%300 == 0 {
				containers = append(containers, map[string]any{"name": "x", "image": "registry.example/rare/x:1"})
			}
			_ = unstructured.SetNestedSlice(pod.Object, containers, "spec", "containers")
		})
		contains := regexp.MustCompile(`(LOCATE|STRPOS|INSTR)\(`)
		for _, tc := range []struct {
			images  []string
			matches int
			limit   int64
		}{
			{[]string{"/team-27/"}, costObjects / 30, costLimit},
			{[]string{"/rare/"}, costObjects / 300, 2},
			{[]string{"/team-1", "/rare/"}, costObjects/30*10 + costObjects/300, costLimit},
		} {
			for _, order := range indexedOrders[:3] {
				q := storage.ListQuery{GVR: podsGVR, Limit: tc.limit, OrderBy: order, Images: tc.images}
				var resolve []statement
				for _, st := range latePage(t, s, rec, q, rev, tc.matches/4) {
					if contains.MatchString(st.sql) {
						resolve = append(resolve, st)
					}
				}
				if len(resolve) != 1 {
					t.Fatalf("images %v: %d statements test images for a part, want 1: %v", tc.images, len(resolve), resolve)
				}
				if n := rowsExamined(t, b, s, resolve, true); n > 2*images*int64(len(clusters)) {
					t.Errorf("images %v, orderby %v: resolving them read %d rows, for %d images in %d clusters: %s", tc.images, order, n, images, len(clusters), resolve[0].sql)
				}
			}
		}
	})
}

// checkProbes checks the attribute conditions that the page of stmts
// probes row by row (probe.go), as the "IS NULL" or "IS NOT NULL" they
// end in, in order. At the sizes of a test, MariaDB still plans a common
// label's semi-join well; at a million objects it read every match.
func checkProbes(t *testing.T, stmts []statement, want string) {
	t.Helper()
	page := stmts[len(stmts)-1].sql
	var got []string
	for _, m := range regexp.MustCompile(`\) (IS (NOT )?NULL)\)`).FindAllStringSubmatch(page, -1) {
		got = append(got, m[1])
	}
	if strings.Join(got, ",") != want {
		t.Errorf("the page probes %q, want %q: %s", got, want, page)
	}
}

// TestNamespacePageReadsItsRange: a page of a namespace across clusters
// reads about as many rows as it returns, not those of the namespaces
// before it in each cluster, nor the whole namespace to sort it (MariaDB
// does either unless the page names the clusters as well: clusterRanges).
func TestNamespacePageReadsItsRange(t *testing.T) {
	const namespaces, perCluster = 30, 3000
	storagetest.ForEach(t, func(t *testing.T, b storagetest.Backend) {
		s := b.Open(t)
		rec := newQueryRecorder(t, s)
		ctx := context.Background()
		for _, cluster := range clusters {
			for i := 0; i < perCluster; i += 500 {
				changes := make([]storage.Change, 0, 500)
				for j := i; j < i+500; j++ {
					changes = append(changes, storage.Upsert(object("Pod", fmt.Sprintf("ns-%02d", j%namespaces), fmt.Sprintf("pod-%05d", j), "1")))
				}
				if _, err := s.ForCluster(cluster, storage.Unfenced).Apply(ctx, podsGVR, changes); err != nil {
					t.Fatal(err)
				}
			}
		}
		refreshStatistics(t, s)
		rev, _, err := s.Revision(ctx)
		if err != nil {
			t.Fatal(err)
		}
		for _, order := range indexedOrders[:2] {
			q := storage.ListQuery{GVR: podsGVR, Namespaces: []string{"ns-17"}, Limit: costLimit, OrderBy: order}
			stmts := latePage(t, s, rec, q, rev, len(clusters)*perCluster/namespaces/2)
			// About four reads a row it returns on MariaDB (index entry,
			// row, range ends); without the clusters, 358 here (the
			// namespace's 300 rows sorted), and at a million objects the
			// namespaces before it in every cluster.
			if n := rowsExamined(t, b, s, stmts, true); n > 5*costLimit {
				t.Errorf("orderby %v: a page of %d of a namespace read %d rows", order, costLimit, n)
			}
		}
	})
}

// TestPostgresPlansEachExecution: PostgreSQL plans every execution of the
// store's statements for its parameters. pgx prepares each statement, and
// a generic plan, which PostgreSQL may keep from the sixth execution on,
// estimated a label on a quarter of a million pods to match 338 of them:
// a page that required it read and sorted all 251,100 (3.7 s).
func TestPostgresPlansEachExecution(t *testing.T) {
	s := backend(t, "postgres").Open(t)
	upsertPods(t, s, 100, "1")
	var plans struct{ Generic, Custom int }
	// One connection: prepared statements are a session's.
	if err := sqlstore.GormDB(s).Connection(func(conn *gorm.DB) error {
		for i := range 10 {
			var n int
			if err := conn.Raw("SELECT count(*) FROM resources WHERE name = ?", fmt.Sprintf("pod-%05d", i)).Scan(&n).Error; err != nil {
				return err
			}
		}
		return conn.Raw(`SELECT COALESCE(SUM(generic_plans), 0) AS generic, COALESCE(SUM(custom_plans), 0) AS custom
			FROM pg_prepared_statements WHERE statement = 'SELECT count(*) FROM resources WHERE name = $1'`).Scan(&plans).Error
	}); err != nil {
		t.Fatal(err)
	}
	if plans.Generic != 0 || plans.Custom != 10 {
		t.Errorf("10 executions of a prepared statement: %d generic plans, %d custom, want 0 and 10", plans.Generic, plans.Custom)
	}
}

// TestPostgresEstimatesCommonLabels: PostgreSQL estimates how many
// attribute rows a common label has from the kind, key and value together,
// not from the three's shares multiplied (a tenth of the rows hold the key
// and a tenth the value: a hundredth, where all of them are the label's).
func TestPostgresEstimatesCommonLabels(t *testing.T) {
	s := backend(t, "postgres").Open(t)
	const pods = 2000
	for i := 0; i < pods; i += 500 {
		changes := make([]storage.Change, 0, 500)
		for j := i; j < i+500; j++ {
			changes = append(changes, storage.Upsert(object("Pod", "default", fmt.Sprintf("pod-%05d", j), "1", func(u *unstructured.Unstructured) {
				labels := map[string]string{"k0": "web"}
				for k := 1; k < 10; k++ {
					labels[fmt.Sprintf("k%d", k)] = fmt.Sprintf("v%d-%d", k, j)
				}
				u.SetLabels(labels)
			})))
		}
		apply(t, s, podsGVR, changes...)
	}
	db := sqlstore.GormDB(s)
	execAll(t, db, "ANALYZE object_attributes")
	var plan []struct {
		Plan struct {
			Rows float64 `json:"Plan Rows"`
		}
	}
	var out string
	// As a list asks, by the ids it looks up first.
	var ids struct{ Key, Value int64 }
	if err := db.Raw("SELECT k.id AS key, v.id AS value FROM attribute_keys k JOIN attribute_values v ON v.key_id = k.id WHERE k.kind = 'l' AND k.name = 'k0' AND v.value = 'web'").
		Scan(&ids).Error; err != nil || ids.Value == 0 {
		t.Fatalf("ids of k0=web: %+v, %v", ids, err)
	}
	if err := db.Raw(fmt.Sprintf("EXPLAIN (FORMAT JSON) SELECT object_id FROM object_attributes WHERE key_id = %d AND value_id = %d", ids.Key, ids.Value)).Scan(&out).Error; err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal([]byte(out), &plan); err != nil || len(plan) != 1 {
		t.Fatalf("%s: %v", out, err)
	}
	if rows := plan[0].Plan.Rows; rows < pods/2 || rows > 2*pods {
		t.Errorf("a label of all %d pods estimated at %.0f attribute rows", pods, rows)
	}
}
