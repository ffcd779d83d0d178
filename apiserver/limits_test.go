package apiserver

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/rest"

	"github.com/panorama-io/panorama/apiserver/watchcache"
	"github.com/panorama-io/panorama/storage"
	"github.com/panorama-io/panorama/storage/storagetest"
)

// serveOn serves the handler over a store of backend b, as testServer
// over SQLite.
func serveOn(t *testing.T, b storagetest.Backend) (storage.Interface, *rest.Config) {
	store := b.Open(t)
	_, cfg, _ := serveHandler(t, testHandlerOver(t, store, watchcache.Options{PollInterval: 100 * time.Millisecond}), store)
	return store, cfg
}

// statusOf gets path (below the view of all clusters, with its query) and
// returns the answer's code, and the Status's code when it is one.
func statusOf(t *testing.T, cfg *rest.Config, path string) (code int, body historyBody) {
	t.Helper()
	code, _ = getAs(t, viewURL(cfg, path), "", "", &body)
	return code, body
}

// TestUnstorableNamesAreNotFound: a get, or a history, of a name or
// namespace that no object can have (invalid UTF-8, NUL) finds nothing,
// as kube-apiserver answers of a name that cannot exist, on every
// database: PostgreSQL refused them as parameters, a 500.
func TestUnstorableNamesAreNotFound(t *testing.T) {
	storagetest.ForEach(t, func(t *testing.T, b storagetest.Backend) {
		store, cfg := serveOn(t, b)
		putPod(t, store, "east", "a")
		for _, path := range []string{
			"/clusters/east/api/v1/namespaces/ns/pods/%ff",
			"/clusters/east/api/v1/namespaces/ns/pods/a%00",
			"/clusters/east/api/v1/namespaces/%ff/pods/a",
			"/clusters/east/api/v1/namespaces/ns/pods/%ff/history",
			"/clusters/east/api/v1/namespaces/%00/pods/a/history",
		} {
			if code, body := statusOf(t, cfg, path); code != http.StatusNotFound || body.Kind != "Status" || body.Code != code {
				t.Errorf("GET %s: %d %+v, want a 404 Status", path, code, body)
			}
		}
		if code, body := statusOf(t, cfg, "/clusters/east/api/v1/namespaces/ns/pods/a/history"); code != http.StatusOK {
			t.Errorf("history of a: %d %+v", code, body)
		}
	})
}

// labelValues is a label selector of requirements requirements of values
// values each.
func labelValues(requirements, values int) string {
	terms := make([]string, requirements)
	for i := range terms {
		vs := make([]string, values)
		for j := range vs {
			vs[j] = fmt.Sprint("v", j)
		}
		terms[i] = fmt.Sprintf("k%d in (%s)", i, strings.Join(vs, ","))
	}
	return strings.Join(terms, ",")
}

// TestSelectorValuesBounded: a query of more values than the databases
// bind (70 label requirements of 1,000 values: SQLite binds 32,766
// parameters a statement, PostgreSQL 65,535) is a 400 on every database,
// never a 500, and the most that is allowed is served, whichever of the
// store's plans it takes.
func TestSelectorValuesBounded(t *testing.T) {
	many := make([]string, storage.MaxListValues)
	for i := range many {
		many[i] = fmt.Sprint("x", i)
	}
	storagetest.ForEach(t, func(t *testing.T, b storagetest.Backend) {
		store, cfg := serveOn(t, b)
		putPod(t, store, "east", "a")
		tooMany := url.Values{"labelSelector": {labelValues(70, 1000)}}
		if code, body := statusOf(t, cfg, "/api/v1/pods?"+tooMany.Encode()); code != http.StatusBadRequest || body.Kind != "Status" || body.Code != code {
			t.Errorf("70 × 1,000 label values: %d %+v, want a 400 Status", code, body)
		}
		// 4,999 values and requirements with the two clusters the view
		// names, to which the namespaces' cluster ranges add on MariaDB;
		// withRemainingCount reads the store.
		allowed := url.Values{
			"labelSelector": {labelValues(3, storage.MaxListValues-1)}, "names": {strings.Join(many[:storage.MaxListValues-1], ",") + ",a"},
			"namespaces": {strings.Join(many[:storage.MaxListValues-4], ",") + ",ns"}, "limit": {"10"}, "withRemainingCount": {"true"},
		}
		for _, path := range []string{"/api/v1/pods", "/clusters/east/api/v1/pods"} {
			if code, body := statusOf(t, cfg, path+"?"+allowed.Encode()); code != http.StatusOK || body.Kind != "PodList" {
				t.Errorf("%s with %d values: %d %+v, want it served", path, storage.MaxQueryValues-1, code, body)
			}
		}
	})
}

// TestOwnerOfManyObjectsServed: an owner filter whose owners are more
// than a statement binds (an ownerName that 33,000 objects have, more
// parameters than SQLite binds) is served, children and grandchildren,
// on every database.
func TestOwnerOfManyObjectsServed(t *testing.T) {
	const owners = 33_000
	storagetest.ForEach(t, func(t *testing.T, b storagetest.Backend) {
		store, cfg := serveOn(t, b)
		ctx := context.Background()
		pod := func(ns, name, owner string) storage.Change {
			u := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "Pod",
				"metadata": map[string]any{"name": name, "namespace": ns, "resourceVersion": "1", "uid": ns + "/" + name}}}
			if owner != "" {
				u.Object["metadata"].(map[string]any)["ownerReferences"] = []any{map[string]any{"apiVersion": "v1", "kind": "Pod", "name": "owner", "uid": owner}}
			}
			return storage.Upsert(u)
		}
		var batch []storage.Change
		for i := range owners {
			batch = append(batch, pod(fmt.Sprintf("ns-%05d", i), "owner", ""))
			if len(batch) == 5000 || i == owners-1 {
				if _, err := store.ForCluster("east", storage.Unfenced).Apply(ctx, podsGVR, batch); err != nil {
					t.Fatal(err)
				}
				batch = nil
			}
		}
		if _, err := store.ForCluster("east", storage.Unfenced).Apply(ctx, podsGVR, []storage.Change{
			pod("ns-00007", "child", "ns-00007/owner"), pod("ns-32000", "child", "ns-32000/owner"),
			pod("ns-00007", "grandchild", "ns-00007/child"),
		}); err != nil {
			t.Fatal(err)
		}
		for query, want := range map[string]string{
			"ownerName=owner":                   "ns-00007/child ns-32000/child",
			"ownerName=owner&ownerSeniority=1":  "ns-00007/grandchild",
			"ownerName=owner&groupBy=namespace": "",
		} {
			var body struct {
				Kind  string `json:"kind"`
				Items []struct {
					Metadata struct{ Namespace, Name string } `json:"metadata"`
				} `json:"items"`
			}
			code, _ := getAs(t, viewURL(cfg, "/clusters/east/api/v1/pods?"+query), "", "", &body)
			var got []string
			for _, it := range body.Items {
				got = append(got, it.Metadata.Namespace+"/"+it.Metadata.Name)
			}
			if code != http.StatusOK || want != "" && strings.Join(got, " ") != want {
				t.Errorf("%s: %d %s %q, want %q", query, code, body.Kind, got, want)
			}
		}
	})
}
