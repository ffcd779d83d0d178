package apiserver

import (
	"cmp"
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/runtime/schema"

	searchv1alpha1 "github.com/panorama-io/panorama/apis/search/v1alpha1"
	"github.com/panorama-io/panorama/storage"
)

// countsBody is the JSON of a count, of its Table or of a Status.
type countsBody struct {
	searchv1alpha1.Counts
	Message           string `json:"message"` // of a Status
	ColumnDefinitions []struct {
		Name string `json:"name"`
	} `json:"columnDefinitions"`
	Rows []struct {
		Cells []any `json:"cells"`
	} `json:"rows"`
}

func getCounts(t *testing.T, url, user, accept string) (int, http.Header, countsBody) {
	t.Helper()
	var body countsBody
	code, header := getAs(t, url, user, accept, &body)
	return code, header, body
}

// groups spells a count's items as "value/value=count ...", in order; a
// term the group lacks reads <none>.
func (b countsBody) groups() string {
	var out []string
	for _, it := range b.Items {
		var values []string
		for _, term := range b.GroupBy {
			v, ok := it.Group[term]
			if !ok {
				v = "<none>"
			}
			values = append(values, v)
		}
		out = append(out, fmt.Sprintf("%s=%d", strings.Join(values, "/"), it.Count))
	}
	return strings.Join(out, " ")
}

// TestCounts: a list with groupBy answers counts under the list's filters
// and authorization, as JSON and as a Table, and refuses what it cannot
// mean with a 400 Status.
func TestCounts(t *testing.T) {
	store, cfg, registry := testServer(t)
	pod := func(cluster, ns, name, phase string, labels map[string]any) {
		meta := map[string]any{"name": name, "namespace": ns, "resourceVersion": "1", "uid": cluster + name}
		if labels != nil {
			meta["labels"] = labels
		}
		putObject(t, store, cluster, podsGVR, map[string]any{"apiVersion": "v1", "kind": "Pod", "metadata": meta,
			"status": map[string]any{"phase": phase}})
	}
	pod("east", "ns", "a", "Running", map[string]any{"app": "web"})
	pod("east", "ns", "c", "Pending", map[string]any{"app": "web"})
	pod("east", "other", "d", "Running", nil)
	pod("west", "ns", "b", "Running", map[string]any{"app": "db"})
	rev, _, err := store.Revision(context.Background())
	if err != nil {
		t.Fatal(err)
	}

	for _, c := range []struct {
		path, user, want, warn string
	}{
		{"/api/v1/pods?groupBy=cluster,field:status.phase", "", "east/Running=2 east/Pending=1 west/Running=1", ""},
		// As a label, for kubectl get -l; a missing label is a group first
		// among equal counts.
		{"/api/v1/pods?labelSelector=search.panorama.io/groupBy=label.app", "", "web=2 <none>=1 db=1", ""},
		{"/api/v1/pods?labelSelector=app=web,search.panorama.io/groupBy=cluster", "", "east=2", ""},
		{"/clusters/west/api/v1/pods?groupBy=namespace", "", "ns=1", ""},
		{"/api/v1/pods?groupBy=namespace&fieldSelector=status.phase=Running&clusters=east", "", "ns=1 other=1", ""},
		// Only what the user may list is counted.
		{"/api/v1/pods?groupBy=cluster,namespace", "east", "east/ns=2 east/other=1", "clusters you may not list pods in are left out"},
		{"/api/v1/namespaces/ns/pods?groupBy=cluster", "nsuser", "east=2 west=1", ""},
		{"/api/v1/pods?groupBy=namespace&namespaces=ns,other", "nsuser", "ns=3", "1 namespaces left out"},
		{"/api/v1/pods?groupBy=cluster,namespace&limit=1", "", "east/ns=2", "2 more groups left out"},
	} {
		code, header, body := getCounts(t, viewURL(cfg, c.path), c.user, "")
		if code != 200 || body.Kind != "Counts" || body.groups() != c.want || body.ListMeta.ResourceVersion != fmt.Sprint(rev) {
			t.Errorf("%s as %q: %d %+v, want %s at %d", c.path, c.user, code, body, c.want, rev)
		}
		if warns := strings.Join(header.Values("Warning"), "\n"); !strings.Contains(warns, c.warn) {
			t.Errorf("%s as %q: warnings %q, want %q", c.path, c.user, warns, c.warn)
		}
		if strings.Contains(c.path, "limit=1") && (body.ListMeta.RemainingItemCount == nil || *body.ListMeta.RemainingItemCount != 2) {
			t.Errorf("%s: remainingItemCount %v, want 2", c.path, body.ListMeta.RemainingItemCount)
		}
	}
	for _, c := range []struct{ path, user string }{
		{"/api/v1/pods?groupBy=cluster", "nsuser"}, // -A needs a cluster-wide grant, as lists do
		{"/clusters/west/api/v1/pods?groupBy=cluster", "east"},
	} {
		if code, _, body := getCounts(t, viewURL(cfg, c.path), c.user, ""); code != http.StatusForbidden || body.Kind != "Status" {
			t.Errorf("%s as %q: %d %+v, want 403", c.path, c.user, code, body)
		}
	}

	code, _, table := getCounts(t, viewURL(cfg, "/api/v1/pods?groupBy=namespace,label:app"), "", tableContentType)
	var cols []string
	for _, c := range table.ColumnDefinitions {
		cols = append(cols, c.Name)
	}
	var rows []string
	for _, r := range table.Rows {
		rows = append(rows, fmt.Sprint(r.Cells...))
	}
	if code != 200 || table.Kind != "Table" || strings.Join(cols, ",") != "namespace,label:app,Count" ||
		strings.Join(rows, ",") != "nsweb2,nsdb1,other<none>1" || table.ListMeta.ResourceVersion != fmt.Sprint(rev) {
		t.Errorf("table: %d %+v", code, table)
	}

	for _, path := range []string{
		"/api/v1/pods?groupBy=name",
		"/api/v1/pods?groupBy=label:bad%20key",
		"/api/v1/pods?groupBy=field:spec.unknown",
		"/api/v1/pods?groupBy=cluster,cluster",
		"/api/v1/pods?groupBy=cluster,namespace,label:a,label:b,label:c",
		"/api/v1/pods?groupBy=cluster&watch=1",
		"/api/v1/pods?groupBy=cluster&resourceVersion=1",
		"/api/v1/pods?groupBy=cluster&continue=abc",
		"/api/v1/pods?groupBy=cluster&orderby=name",
		"/api/v1/pods?labelSelector=search.panorama.io/groupBy!=cluster",
	} {
		if code, _, body := getCounts(t, viewURL(cfg, path), "", ""); code != http.StatusBadRequest || body.Kind != "Status" {
			t.Errorf("%s: %d %+v, want 400", path, code, body)
		}
	}
	registry.Set(clusterServing("south", schema.GroupVersionResource{Group: "apps", Version: "v1", Resource: "deployments"}, "Deployment"))
	if code, _, body := getCounts(t, strings.TrimSuffix(cfg.Host, searchv1alpha1.ViewPath(""))+CollectionsPath+"/workloads?groupBy=cluster", "", ""); code != http.StatusBadRequest {
		t.Errorf("collection with groupBy: %d %+v, want 400", code, body)
	}
	// The limit is kubectl's page size, capped rather than refused.
	if code, _, body := getCounts(t, viewURL(cfg, fmt.Sprintf("/api/v1/pods?groupBy=cluster&limit=%d", storage.MaxLimit+1)), "", ""); code != 200 || body.groups() != "east=3 west=1" {
		t.Errorf("large limit: %d %+v", code, body)
	}
}

// countingStore counts the counts the store answers.
type countingStore struct {
	storage.Interface
	counts atomic.Int32
}

func (s *countingStore) Count(ctx context.Context, q *storage.CountQuery) (*storage.CountResult, error) {
	s.counts.Add(1)
	return s.Interface.Count(ctx, q)
}

// TestCountsFromCache: a count under a label selector is the watch
// cache's once the cache holds the pods, and sees the writes made before
// it (the latest revision) unless resourceVersion is 0; before, the store
// answers it and the cache loads the pods. A count the store's summary
// answers is the summary's until the cache holds the pods, and loads
// nothing.
func TestCountsFromCache(t *testing.T) {
	h, raw := testHandler(t)
	store := &countingStore{Interface: raw}
	h.store = store
	srv := httptest.NewServer(asUser(h))
	t.Cleanup(srv.Close)
	base := srv.URL + searchv1alpha1.ViewPath("")
	pod := func(cluster, name, app string) int64 {
		putObject(t, store, cluster, podsGVR, map[string]any{"apiVersion": "v1", "kind": "Pod",
			"metadata": map[string]any{"name": name, "namespace": "ns", "resourceVersion": "1", "labels": map[string]any{"app": app}}})
		rev, _, err := store.Revision(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		return rev
	}
	count := func(query, want string, rev int64, fromStore int32) {
		t.Helper()
		before := store.counts.Load()
		code, _, body := getCounts(t, base+"/api/v1/pods?"+query, "", "")
		if code != http.StatusOK || body.groups() != want || body.ListMeta.ResourceVersion != fmt.Sprint(rev) {
			t.Errorf("%s: %d %+v, want %s at %d", query, code, body, want, rev)
		}
		if n := store.counts.Load() - before; n != fromStore {
			t.Errorf("%s: the store counted %d times, want %d", query, n, fromStore)
		}
	}
	pod("east", "a", "web")
	pod("west", "b", "db")
	rev := pod("east", "c", "web")
	count("groupBy=label:app", "web=2 db=1", rev, 1) // the summary's
	if h.cache.Holds(podsGVR) {
		t.Fatal("a count the summary answers loaded pods into the cache")
	}
	const selected = "labelSelector=app%3Dweb&groupBy=cluster"
	count(selected, "east=2", rev, 1) // the cache has no pods yet, and loads them
	if err := h.cache.WaitForRevision(context.Background(), rev); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		if _, ok, err := h.cache.Count(context.Background(), &storage.CountQuery{Query: storage.ListQuery{GVR: podsGVR},
			GroupBy: []storage.GroupBy{{Kind: storage.GroupCluster}}}, rev); ok || err != nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the count did not load pods into the cache within 10s")
		}
	}
	rev = pod("west", "d", "web")
	count(selected, "east=2 west=1", rev, 0)
	count(selected+"&resourceVersion=0", "east=2 west=1", rev, 0)
	count("groupBy=label:app", "web=3 db=1", rev, 0)                    // the cache's, now it holds pods
	count("groupBy=label:app&withHeldSince=true", "web=3 db=1", rev, 1) // periods are the summary's
}

// TestCountsHeldSince: withHeldSince gives each group the write its
// current period began at, which the groups' later writes leave as it
// is, as JSON and as a Table; what the summary cannot answer is a 400.
func TestCountsHeldSince(t *testing.T) {
	store, cfg, _ := testServer(t)
	memberRV := 0
	pod := func(cluster, ns, name, app string) (int64, time.Time) {
		before := time.Now()
		memberRV++
		putObject(t, store, cluster, podsGVR, map[string]any{"apiVersion": "v1", "kind": "Pod", "metadata": map[string]any{"name": name,
			"namespace": ns, "resourceVersion": fmt.Sprint(memberRV), "uid": cluster + name, "labels": map[string]any{"app": app}}})
		rev, _, err := store.Revision(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		return rev, before
	}
	eastWeb, eastWebAt := pod("east", "ns", "a", "web")
	westDB, _ := pod("west", "ns", "b", "db")
	pod("east", "ns", "c", "web")
	eastDB, _ := pod("east", "ns", "a", "db") // a leaves web, which c holds

	periods := func(body countsBody) string {
		var out []string
		for _, it := range body.Items {
			out = append(out, fmt.Sprintf("%s/%s@%d", it.Group["cluster"], it.Group["label:app"], it.HeldSince.Revision))
		}
		slices.Sort(out)
		return strings.Join(out, " ")
	}
	code, _, body := getCounts(t, viewURL(cfg, "/api/v1/pods?groupBy=cluster,label:app&withHeldSince=true"), "", "")
	want := fmt.Sprintf("east/db@%d east/web@%d west/db@%d", eastDB, eastWeb, westDB)
	if code != http.StatusOK || periods(body) != want {
		t.Fatalf("%d %+v, want %s", code, body, want)
	}
	for _, it := range body.Items {
		if it.Group["cluster"] == "east" && it.Group["label:app"] == "web" &&
			(it.HeldSince.Time == nil || it.HeldSince.Time.Time.Before(eastWebAt.Truncate(time.Microsecond)) || it.HeldSince.Time.Time.After(time.Now())) {
			t.Errorf("east/web: time %v, want that of its write, after %s", it.HeldSince.Time, eastWebAt)
		}
	}
	// A namespace's reader gets the namespace's periods.
	if code, _, body := getCounts(t, viewURL(cfg, "/api/v1/namespaces/ns/pods?groupBy=cluster,label:app&withHeldSince=true"), "nsuser", ""); code != http.StatusOK || periods(body) != want {
		t.Errorf("nsuser: %d %+v, want %s", code, body, want)
	}

	// The flat view sums its namespaces' groups: the earliest start.
	code, _, body = getCounts(t, viewURL(cfg, "/clusters/"+searchv1alpha1.FlatClusters+"/api/v1/pods?groupBy=label:app&withHeldSince=true"), "", "")
	if want := fmt.Sprintf("/db@%d /web@%d", westDB, eastWeb); code != http.StatusOK || periods(body) != want {
		t.Errorf("flat view: %d %+v, want %s", code, body, want)
	}

	code, _, table := getCounts(t, viewURL(cfg, "/api/v1/pods?labelSelector=search.panorama.io/groupBy=label.app,search.panorama.io/withHeldSince=true"), "", tableContentType)
	var cols, rows []string
	for _, c := range table.ColumnDefinitions {
		cols = append(cols, c.Name)
	}
	for _, r := range table.Rows {
		if len(r.Cells) != 4 {
			t.Fatalf("row %v: want 4 cells", r.Cells)
		}
		rows = append(rows, fmt.Sprint(r.Cells[0], "=", r.Cells[1], "@", r.Cells[3]))
	}
	wantRows := fmt.Sprintf("db=2@%d,web=1@%d", westDB, eastWeb) // db's is the earlier of its clusters'
	if code != http.StatusOK || strings.Join(cols, ",") != "label:app,Count,Held Since,Since Revision" || strings.Join(rows, ",") != wantRows {
		t.Errorf("table: %d columns %v rows %v, want rows %s", code, cols, rows, wantRows)
	}

	for _, path := range []string{
		"/api/v1/pods?withHeldSince=true",
		"/api/v1/pods?withHeldSince=true&watch=1",
		"/api/v1/pods?withHeldSince=yes&groupBy=cluster",
		"/api/v1/pods?groupBy=cluster&withHeldSince=true&labelSelector=app%3Dweb",
		"/api/v1/pods?groupBy=label:app,cluster,namespace,field:status.phase&withHeldSince=true",
		"/api/v1/pods?groupBy=field:status.podIP&withHeldSince=true",
	} {
		if code, _, body := getCounts(t, viewURL(cfg, path), "", ""); code != http.StatusBadRequest || body.Kind != "Status" || !strings.Contains(body.Message, "withHeldSince") {
			t.Errorf("%s: %d %+v, want a 400 naming withHeldSince", path, code, body)
		}
	}
}

// TestFlatViewCounts: a count through the flat view counts what the same
// list through it returns, its groups' namespaces flat; what the view
// would filter, which a count cannot, is refused.
func TestFlatViewCounts(t *testing.T) {
	store, cfg, _ := testServer(t)
	for _, p := range []struct{ cluster, ns, name string }{
		{"east", "ns", "a"}, {"east", "ns", "b"}, {"east", "other", "c"}, {"west", "ns", "a"},
	} {
		putObject(t, store, p.cluster, podsGVR, map[string]any{"apiVersion": "v1", "kind": "Pod",
			"metadata": map[string]any{"name": p.name, "namespace": p.ns, "resourceVersion": "1"}})
	}
	flat := func(path string) string { return viewURL(cfg, "/clusters/"+searchv1alpha1.FlatClusters+path) }
	// listed groups a list's items as a count by namespace (and cluster)
	// would, and spells them as Counts.groups does.
	listed := func(query string, byCluster bool) string {
		t.Helper()
		items, _ := flatItems(t, flat("/api/v1/pods?"+query))
		counts := map[string]int{}
		for _, it := range items {
			ns, _, _ := strings.Cut(it, "/")
			if byCluster {
				cluster, _, _ := splitFlatNamespace(ns)
				ns = cluster + "/" + ns
			}
			counts[ns]++
		}
		var groups []string
		for g, n := range counts {
			groups = append(groups, fmt.Sprintf("%s=%d", g, n))
		}
		slices.SortFunc(groups, func(a, b string) int {
			ga, na, _ := strings.Cut(a, "=")
			gb, nb, _ := strings.Cut(b, "=")
			return cmp.Or(cmp.Compare(nb, na), cmp.Compare(ga, gb)) // counts have one digit here
		})
		return strings.Join(groups, " ")
	}
	for _, c := range []struct {
		query     string
		byCluster bool
		want      string
	}{
		{"groupBy=namespace", false, "east.ns=2 east.other=1 west.ns=1"},
		{"groupBy=cluster,namespace", true, "east/east.ns=2 east/east.other=1 west/west.ns=1"},
		{"groupBy=namespace&namespaces=west.ns", false, "west.ns=1"},
		{"groupBy=namespace&namespaces=east.ns,east.other", false, "east.ns=2 east.other=1"},
		{"groupBy=namespace&fieldSelector=metadata.namespace%3Deast.other", false, "east.other=1"},
		{"groupBy=namespace&resourceVersion=0", false, "east.ns=2 east.other=1 west.ns=1"},
	} {
		code, _, body := getCounts(t, flat("/api/v1/pods?"+c.query), "", "")
		list := listed(strings.ReplaceAll(strings.ReplaceAll(c.query, "groupBy=cluster,namespace", ""), "groupBy=namespace", ""), c.byCluster)
		if code != http.StatusOK || body.groups() != c.want || list != c.want {
			t.Errorf("%s: %d, count %q, list %q, want %q", c.query, code, body.groups(), list, c.want)
		}
	}
	// The Table of a count too.
	if code, _, table := getCounts(t, flat("/api/v1/pods?groupBy=namespace&namespaces=west.ns"), "", tableContentType); code != http.StatusOK ||
		len(table.Rows) != 1 || fmt.Sprint(table.Rows[0].Cells...) != "west.ns1" {
		t.Errorf("Table of a count: %d %+v", code, table)
	}
	for _, query := range []string{
		"groupBy=namespace&namespaces=east.ns,west.other", // not the same namespaces in each cluster
		"groupBy=cluster&fieldSelector=metadata.namespace%21%3Deast.ns",
		"groupBy=namespace,label:a,label:b,label:c", // cluster would be a fifth term
	} {
		if code, _, body := getCounts(t, flat("/api/v1/pods?"+query), "", ""); code != http.StatusBadRequest || body.Kind != "Status" {
			t.Errorf("%s: %d %+v, want 400", query, code, body)
		}
	}
}
