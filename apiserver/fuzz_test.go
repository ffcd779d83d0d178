package apiserver

import (
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	searchv1alpha1 "github.com/panorama-io/panorama/apis/search/v1alpha1"
	"github.com/panorama-io/panorama/storage"
)

// Seeds of the fuzz targets, which `go test` runs as tests: every search
// parameter, resourceVersion form and path shape, plus inputs that were
// bugs.
var (
	fuzzQueries = []string{
		"",
		"limit=5&continue=abc",
		"labelSelector=app%3Dweb,search.panorama.io/clusters%20in%20(east,west)",
		"labelSelector=search.panorama.io/orderby%3Dname.desc&fieldSelector=status.phase%3DRunning",
		"fieldSelector=metadata.name!%3Dx,spec.nodeName%3Dn1",
		"clusters=east,west&namespaces=ns&names=a,b&fuzzyName=we",
		"ownerUID=u1&ownerSeniority=1",
		"ownerName=web&ownerGR=replicasets.apps&ownerSeniority=2",
		"since=2024-01-02&before=1700000000&orderby=created_at%20desc,name",
		"withRemainingCount=true&onlyMetadata=1&limit=1",
		"resourceVersion=0",
		"resourceVersion=7&resourceVersionMatch=Exact",
		"resourceVersion=7&resourceVersionMatch=NotOlderThan&sendInitialEvents=true&allowWatchBookmarks=true",
		"resourceVersion=-1",
		"resourceVersion=99999999999999999999",
		"timeoutSeconds=-5&watch=1",
		"names=a%00b",
		"fuzzyName=%ff",
		"labelSelector=a%3E1",
		"orderby=name,name",
		"ownerSeniority=100000",
		"labelSelector=%zz",
		"groupBy=cluster,label:app,field:status.phase&limit=3",
		"labelSelector=search.panorama.io/groupBy%3Dlabel.app,search.panorama.io/groupBy%3Dnamespace",
		"groupBy=label:&resourceVersion=5&continue=x",
		"images=nginx,redis&fieldSelector=images%3Dnginx:1.27,ownerKind!%3DReplicaSet",
		"labelSelector=search.panorama.io/images%20in%20(nginx,%00)",
		"images=,&fieldSelector=nope%3Dx",
		"labelSelector=" + url.QueryEscape(labelValues(70, 1000)), // more values than a database binds
	}
	fuzzPaths = []string{
		"/api/v1/pods",
		"/api/v1/namespaces/ns/pods",
		"/api/v1/namespaces/ns/pods/a",
		"/clusters/east/api/v1/pods",
		"/clusters/east/api/v1/namespaces/ns/pods/a",
		"/clusters//api/v1/pods",
		"/clusters/east",
		"/api/v1/namespaces/ns/pods/a/log",
		"/clusters/_flat/api/v1/pods",
		"/clusters/_flat/api/v1/namespaces/east.ns/pods/a",
		"/clusters/_flat/api/v1/namespaces/east.ns/pods/a/log",
		"/apis/apps/v1/deployments",
		"/api",
		"/apis",
		"",
		"/",
		"/openapi/v3",
		"/clusters/east/openapi/v3/api/v1",
		"/openapi/v3/apis/apps/v1",
		"/clusters/east/api/v1/namespaces/ns/pods/a\xff",
		"/clusters/east/api/v1/namespaces/n\x00s/pods/a/history",
	}
)

// FuzzParseRequest: parsing any query never panics, fails only with a 4xx
// Status, and what it accepts passes storage's validation.
func FuzzParseRequest(f *testing.F) {
	for _, q := range fuzzQueries {
		f.Add(q, "", "", false)
		f.Add(q, "east", "ns", true)
	}
	f.Fuzz(func(t *testing.T, query, cluster, namespace string, watch bool) {
		values, _ := url.ParseQuery(query) // as http.Request.URL.Query: what parses
		r, err := parseListOptions(values, podsGVR, cluster, namespace, watch)
		if err != nil {
			var bad badRequest
			var invalid *storage.InvalidError
			if !errors.As(err, &bad) && !errors.As(err, &invalid) {
				t.Fatalf("%q: %T %v, want a badRequest or an InvalidError", query, err, err)
			}
			if code := toStatus(t.Context(), err, podsGVR.GroupResource()).Status().Code; code/100 != 4 {
				t.Fatalf("%q: %v is a %d", query, err, code)
			}
			return
		}
		if err := r.query.Validate(); err != nil {
			t.Fatalf("%q parsed, but storage refuses it: %v", query, err)
		}
		if len(r.groupBy) > 0 {
			if q, err := r.countQuery(); err == nil {
				if err := q.Validate(); err != nil {
					t.Fatalf("%q parsed as a count, but storage refuses it: %v", query, err)
				}
			}
		}
		if r.version.rev < 0 || r.query.Revision < 0 {
			t.Fatalf("%q: negative revision %+v", query, r.version)
		}
	})
}

// FuzzServePath sends any path and query, but watches, to the handler
// over a real store (SQLite): it never panics, never answers 5xx but 504
// (a revision the store has not reached), and every failure is a JSON
// Status.
func FuzzServePath(f *testing.F) {
	// Paths are fuzzed below the group version, so that both the views'
	// paths and the deprecated ones are explored.
	groupVersion := "/apis/" + searchv1alpha1.SchemeGroupVersion.String()
	for _, p := range fuzzPaths {
		for _, q := range fuzzQueries {
			f.Add(strings.TrimPrefix(ResourcesPrefix, groupVersion)+p, q)
			f.Add(strings.TrimPrefix(viewPathOf(p), groupVersion), q)
		}
	}
	h, store := testHandler(f)
	for _, name := range []string{"a", "b"} {
		putPod(f, store, "east", name)
	}
	putOpenAPI(f, store, "east", "v1.37.2", map[string]string{"api/v1": openAPIDoc("v1.37.2", []string{"/api/v1/pods"}, map[string]string{"P": "p"})})
	srv := asUser(h)
	f.Fuzz(func(t *testing.T, path, query string) {
		u := &url.URL{Path: groupVersion + path, RawQuery: query}
		req, err := http.NewRequest(http.MethodGet, u.String(), nil)
		if err != nil || req.URL.Path != u.Path {
			return // not a path a client can send
		}
		if _, rest, ok := splitPath(req.URL.Path); ok {
			if info, err := memberRequestInfo(req, rest); err == nil && info.Verb == "watch" {
				return // a watch streams until it times out
			}
		}
		rec := httptest.NewRecorder()
		srv.ServeHTTP(rec, req)
		if rec.Code/100 == 5 && rec.Code != http.StatusGatewayTimeout {
			t.Fatalf("GET %s: %d %s", u, rec.Code, rec.Body)
		}
		if rec.Code/100 != 2 {
			var st metav1.Status
			if err := json.Unmarshal(rec.Body.Bytes(), &st); err != nil || st.Kind != "Status" || int(st.Code) != rec.Code {
				t.Fatalf("GET %s: %d is not a Status: %s", u, rec.Code, rec.Body)
			}
		}
	})
}

// FuzzSplitPath: a path that names a cluster never reads every cluster,
// and the parts put back together are the path.
func FuzzSplitPath(f *testing.F) {
	for _, p := range fuzzPaths {
		f.Add(ResourcesPrefix + p)
	}
	f.Add(ResourcesPrefix + "x/api")
	f.Fuzz(func(t *testing.T, path string) {
		cluster, rest, ok := splitPath(path)
		if !ok {
			return
		}
		named := strings.HasPrefix(path, ResourcesPrefix+"/clusters/")
		if named != (cluster != "") || strings.Contains(cluster, "/") {
			t.Fatalf("%q: cluster %q", path, cluster)
		}
		rebuilt := ResourcesPrefix + rest
		if named {
			rebuilt = ResourcesPrefix + "/clusters/" + cluster + rest
		}
		if rebuilt != path && rebuilt != path+"/" {
			t.Fatalf("%q: cluster %q and rest %q make %q", path, cluster, rest, rebuilt)
		}
	})
}

// viewPathOf is the view path of a path written as under the deprecated
// prefix ("/clusters/east/api/v1/pods", "/api/v1/pods").
func viewPathOf(p string) string {
	if after, ok := strings.CutPrefix(p, "/clusters/"); ok {
		cluster, rest, _ := strings.Cut(after, "/")
		return searchv1alpha1.ViewPath(cluster) + "/" + rest
	}
	return searchv1alpha1.ViewPath("") + p
}
