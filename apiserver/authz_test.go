package apiserver

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/sync/errgroup"
	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/apiserver/pkg/authorization/authorizer"
	"k8s.io/apiserver/pkg/authorization/authorizerfactory"
	genericapifilters "k8s.io/apiserver/pkg/endpoints/filters"
	apirequest "k8s.io/apiserver/pkg/endpoints/request"
	genericoptions "k8s.io/apiserver/pkg/server/options"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	searchv1alpha1 "github.com/panorama-io/panorama/apis/search/v1alpha1"
	"github.com/panorama-io/panorama/apiserver/hostauthz"
	"github.com/panorama-io/panorama/storage"
	"github.com/panorama-io/panorama/storage/storagetest"
	"github.com/panorama-io/panorama/test/testenv"
)

// grant is one RBAC-like rule of the fake authorizer; "" matches anything
// but namespace, where "" is cluster-wide (matching every namespace).
type grant struct{ verb, resource, cluster, namespace string }

// grants are the rules of the test users; the default user "admin" may do
// everything.
var grants = map[string][]grant{
	"admin":    {{}},
	"east":     {{resource: "pods", cluster: "east"}, {verb: "get", resource: clustersResource, cluster: "east"}},
	"nsuser":   {{resource: "pods", namespace: "ns"}},
	"services": {{resource: "services"}},
	"pods":     {{resource: "pods"}},
	// shop reads namespace shop only; svccm services and config maps only.
	"shop":  {{resource: "pods", namespace: "shop"}, {resource: "services", namespace: "shop"}, {resource: "configmaps", namespace: "shop"}},
	"svccm": {{resource: "services"}, {resource: "configmaps"}},
}

var testGrants = authorizer.AuthorizerFunc(func(_ context.Context, a authorizer.Attributes) (authorizer.Decision, string, error) {
	for _, g := range grants[a.GetUser().GetName()] {
		if (g.verb == "" || g.verb == a.GetVerb()) && (g.resource == "" || g.resource == a.GetResource()) &&
			(g.cluster == "" || g.cluster == a.GetName()) && (g.namespace == "" || g.namespace == a.GetNamespace()) &&
			a.GetAPIGroup() == "search.panorama.io" {
			return authorizer.DecisionAllow, "", nil
		}
	}
	return authorizer.DecisionNoOpinion, "", nil
})

// asUser authenticates the Impersonate-User header, "admin" without one,
// in the groups of the Impersonate-Group headers.
func asUser(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		name := r.Header.Get("Impersonate-User")
		if name == "" {
			name = "admin"
		}
		u := &user.DefaultInfo{Name: name, Groups: r.Header.Values("Impersonate-Group")}
		h.ServeHTTP(w, r.WithContext(apirequest.WithUser(r.Context(), u)))
	})
}

func as(cfg *rest.Config, name, cluster string) *rest.Config {
	c := rest.CopyConfig(cfg)
	c.Impersonate.UserName = name
	if cluster != "" {
		c.Host = strings.TrimSuffix(c.Host, searchv1alpha1.ViewPath("")) + searchv1alpha1.ViewPath(cluster)
	}
	return c
}

// warnings collects the Warning headers a client gets.
type warnings []string

func (w *warnings) HandleWarningHeaderWithContext(_ context.Context, _ int, _ string, text string) {
	*w = append(*w, text)
}

func listNames(t *testing.T, cfg *rest.Config, namespace string) ([]string, []string, error) {
	t.Helper()
	var warns warnings
	cfg = rest.CopyConfig(cfg)
	cfg.WarningHandlerWithContext = &warns
	list, err := dynamic.NewForConfigOrDie(cfg).Resource(podsGVR).Namespace(namespace).List(context.Background(), metav1.ListOptions{})
	if err != nil {
		return nil, warns, err
	}
	var names []string
	for _, o := range list.Items {
		names = append(names, o.GetName())
	}
	slices.Sort(names)
	return names, warns, nil
}

// TestAuthorization: every read is answered over exactly what the user may
// read, 403 when that is nothing, and 404 for what they may not see.
func TestAuthorization(t *testing.T) {
	store, cfg, _ := testServer(t)
	putPod(t, store, "east", "a")
	putPod(t, store, "west", "b")

	cases := []struct {
		user, cluster, namespace string
		want                     []string // nil: 403
		warn                     string
	}{
		{"admin", "", "", []string{"a", "b"}, ""},
		{"east", "", "", []string{"a"}, "clusters you may not list pods in are left out"},
		{"east", "east", "", []string{"a"}, ""},
		{"east", "west", "", nil, ""},
		{"nsuser", "", "", nil, ""}, // -A needs cluster-wide permission, as in kube
		{"nsuser", "", "ns", []string{"a", "b"}, ""},
		{"nsuser", "west", "ns", []string{"b"}, ""},
		{"nsuser", "west", "other", nil, ""},
		{"services", "", "ns", nil, ""}, // another resource type
		{"nobody", "east", "ns", nil, ""},
	}
	for _, c := range cases {
		got, warns, err := listNames(t, as(cfg, c.user, c.cluster), c.namespace)
		if c.want == nil {
			if !apierrors.IsForbidden(err) {
				t.Errorf("%+v: want 403, got %v %v", c, got, err)
			}
			continue
		}
		if err != nil || !slices.Equal(got, c.want) {
			t.Errorf("%+v: got %v %v", c, got, err)
		}
		if c.warn != "" && !strings.Contains(strings.Join(warns, "\n"), c.warn) {
			t.Errorf("%+v: warnings %q", c, warns)
		}
	}

	// get, across clusters and in one.
	for _, c := range []struct {
		user, cluster, name string
		forbidden           bool
	}{{"east", "", "a", false}, {"east", "", "b", false}, {"east", "west", "b", true}, {"services", "", "a", true}} {
		_, err := dynamic.NewForConfigOrDie(as(cfg, c.user, c.cluster)).Resource(podsGVR).Namespace("ns").Get(context.Background(), c.name, metav1.GetOptions{})
		switch {
		case c.forbidden && !apierrors.IsForbidden(err):
			t.Errorf("get %+v: want 403, got %v", c, err)
		case !c.forbidden && c.name == "b" && !apierrors.IsNotFound(err):
			t.Errorf("get %+v: west's b must not be found for east's user, got %v", c, err)
		case !c.forbidden && c.name == "a" && err != nil:
			t.Errorf("get %+v: %v", c, err)
		}
	}

	// An unknown cluster is 403 to who may not read there, not 404.
	if _, _, err := listNames(t, as(cfg, "east", "south"), "ns"); !apierrors.IsForbidden(err) {
		t.Errorf("unknown cluster for east's user: %v", err)
	}

	// Discovery of a cluster only for who may see it; 404 otherwise.
	for _, c := range []struct {
		user, cluster string
		code          int
	}{{"east", "east", 200}, {"east", "west", 404}, {"nobody", "east", 404}, {"admin", "west", 200}} {
		req, _ := http.NewRequest(http.MethodGet, viewURL(cfg, "/clusters/"+c.cluster+"/api/v1"), nil)
		req.Header.Set("Impersonate-User", c.user)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		_ = resp.Body.Close()
		if resp.StatusCode != c.code {
			t.Errorf("discovery %+v: %d", c, resp.StatusCode)
		}
	}
}

// TestAuthorizationCacheOn: the delegated authorizer caches the host's
// answers, both ways, so that checking clusters one by one stays cheap.
func TestAuthorizationCacheOn(t *testing.T) {
	o := NewOptions().Recommended.Authorization
	if o.AllowCacheTTL <= 0 || o.DenyCacheTTL <= 0 {
		t.Fatalf("decision cache off: allow %v deny %v", o.AllowCacheTTL, o.DenyCacheTTL)
	}
}

// TestCollectionAuthorization: a collection answers the types and clusters
// the user may read, and is 403 when that is none.
func TestCollectionAuthorization(t *testing.T) {
	store, cfg, reg := testServer(t)
	svcGVR := podsGVR.GroupVersion().WithResource("services")
	reg.Set(clusterServing("east", svcGVR, "Service"))
	for _, c := range []string{"east", "west"} {
		u := map[string]any{"apiVersion": "v1", "kind": "Service",
			"metadata": map[string]any{"name": "s-" + c, "namespace": "kube-system", "resourceVersion": "1", "uid": "s" + c}}
		putObject(t, store, c, svcGVR, u)
	}
	get := func(user, query string) (int, string) {
		req, _ := http.NewRequest(http.MethodGet, strings.TrimSuffix(cfg.Host, searchv1alpha1.ViewPath(""))+CollectionsPath+"/networking?"+query, nil)
		req.Header.Set("Impersonate-User", user)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var b strings.Builder
		_, _ = io.Copy(&b, resp.Body)
		return resp.StatusCode, b.String()
	}
	if code, body := get("admin", "clusters=west&namespaces=kube-system"); code != 200 || !strings.Contains(body, "s-west") {
		t.Errorf("admin: %d %s", code, body)
	}
	if code, body := get("services", ""); code != 200 || !strings.Contains(body, "s-east") || !strings.Contains(body, "s-west") {
		t.Errorf("services user: %d %s", code, body)
	}
	// Allowed on pods of east only: services are none of theirs.
	if code, body := get("east", "clusters=west&namespaces=kube-system"); code != http.StatusForbidden || strings.Contains(body, "s-west") {
		t.Errorf("east user: %d %s", code, body)
	}
	if code, body := get("nsuser", "namespaces=kube-system"); code != http.StatusForbidden {
		t.Errorf("nsuser: %d %s", code, body)
	}
}

func putObject(t *testing.T, s storage.Interface, cluster string, gvr schema.GroupVersionResource, obj map[string]any) {
	t.Helper()
	if _, err := s.ForCluster(cluster, storage.Unfenced).Apply(context.Background(), gvr, []storage.Change{storage.Upsert(&unstructured.Unstructured{Object: obj})}); err != nil {
		t.Fatal(err)
	}
}

// TestPathShapeClusterNames: the host grants every user resource names
// api, apis and clusters, so clusters so named are nobody's to read.
func TestPathShapeClusterNames(t *testing.T) {
	_, cfg, reg := testServer(t)
	reg.Set(clusterServing("api", podsGVR, "Pod"))
	if _, _, err := listNames(t, as(cfg, "admin", "api"), "ns"); !apierrors.IsForbidden(err) {
		t.Fatalf("cluster api: %v", err)
	}
}

// countingAuthorizer counts the checks that reach the host's authorizer.
type countingAuthorizer struct {
	authorizer.Authorizer
	n atomic.Int64
}

func (c *countingAuthorizer) Authorize(ctx context.Context, a authorizer.Attributes) (authorizer.Decision, string, error) {
	c.n.Add(1)
	return c.Authorizer.Authorize(ctx, a)
}

// during is how many checks f made.
func (c *countingAuthorizer) during(f func()) int64 {
	before := c.n.Load()
	f()
	return c.n.Load() - before
}

// countedHandler is testHandler over clusters serving pods, its checks
// counted.
func countedHandler(t testing.TB, clusters ...string) (*Handler, storage.Interface, *countingAuthorizer) {
	h, store := testHandler(t)
	h.registry = NewRegistry()
	for _, c := range clusters {
		h.registry.Set(clusterServing(c, podsGVR, "Pod"))
	}
	checks := &countingAuthorizer{Authorizer: testGrants}
	h.authz = checks
	return h, store, checks
}

// fleet is east and n-1 more clusters.
func fleet(n int) []string {
	out := []string{"east"}
	for i := 1; i < n; i++ {
		out = append(out, fmt.Sprintf("member-%02d", i))
	}
	return out
}

// viewsMux routes h's paths as the server does.
func viewsMux(h *Handler) http.Handler {
	mux := http.NewServeMux()
	mux.Handle(searchv1alpha1.ViewsPrefix+"/", h)
	mux.Handle(ResourcesPrefix+"/", h)
	mux.HandleFunc(CollectionsPath+"/", h.ServeCollections)
	return mux
}

// serve serves h for the test, at the URL it returns.
func serve(t testing.TB, h http.Handler) string {
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	return srv.URL
}

// answer is what a client gets: the code, the Warning headers, the body.
type answer struct {
	code     int
	warnings string
	body     string
}

// call sends a request as user in groups.
func call(t testing.TB, method, url, user string, groups []string, body string) answer {
	t.Helper()
	req, err := http.NewRequest(method, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Impersonate-User", user)
	for _, g := range groups {
		req.Header.Add("Impersonate-Group", g)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return answer{code: resp.StatusCode, warnings: strings.Join(resp.Header.Values("Warning"), "\n"), body: string(data)}
}

// madeUpPods is a list of pods naming as many clusters that do not exist
// and namespaces as a query may.
func madeUpPods() string {
	var clusters, namespaces []string
	for i := range storage.MaxListValues {
		clusters = append(clusters, fmt.Sprintf("made-up-%d", i))
		namespaces = append(namespaces, fmt.Sprintf("ns-%d", i))
	}
	return viewPathOf("/api/v1/pods") + "?" + url.Values{
		"clusters": {strings.Join(clusters, ",")}, "namespaces": {strings.Join(namespaces, ",")},
	}.Encode()
}

// TestAuthorizationChecksOfMadeUpNames: naming clusters that do not exist,
// and many namespaces, costs no more checks than naming none, whoever
// asks.
func TestAuthorizationChecksOfMadeUpNames(t *testing.T) {
	h, _, checks := countedHandler(t, "east", "west")
	base := serve(t, asUser(viewsMux(h)))
	madeUp := madeUpPods()
	for _, name := range []string{"admin", "pods", "nsuser", "east", "services", "nobody"} {
		none := checks.during(func() { call(t, http.MethodGet, base+viewPathOf("/api/v1/pods"), name, nil, "") })
		var got answer
		named := checks.during(func() { got = call(t, http.MethodGet, base+madeUp, name, nil, "") })
		if named > none || (got.code != http.StatusOK && got.code != http.StatusForbidden) {
			t.Errorf("%s: %d checks naming made-up clusters and namespaces (%d %.200s), %d naming none", name, named, got.code, got.body, none)
		}
	}
}

// TestAuthorizationChecksOfGrantsAcross: a grant across clusters, or across
// clusters in a namespace, costs one check per read however many clusters
// there are.
func TestAuthorizationChecksOfGrantsAcross(t *testing.T) {
	h, store, checks := countedHandler(t, fleet(50)...)
	putPod(t, store, "member-07", "a")
	base := serve(t, asUser(viewsMux(h)))
	for _, c := range []struct {
		user, path string
		code       int
	}{
		{"admin", "/api/v1/pods", http.StatusOK},
		{"pods", "/api/v1/pods", http.StatusOK},
		{"pods", "/api/v1/pods?namespaces=ns,other,third", http.StatusOK},
		{"pods", "/api/v1/namespaces/ns/pods/a", http.StatusOK},
		{"pods", "/api/v1/pods?groupBy=cluster", http.StatusOK},
		{"nsuser", "/api/v1/namespaces/ns/pods", http.StatusOK},
		{"nsuser", "/api/v1/pods?namespaces=ns", http.StatusOK},
		{"nsuser", "/clusters/member-07/api/v1/namespaces/ns/pods/a", http.StatusOK},
	} {
		var got answer
		if n := checks.during(func() { got = call(t, http.MethodGet, base+viewPathOf(c.path), c.user, nil, "") }); n != 1 || got.code != c.code {
			t.Errorf("%s %s: %d checks, %d %.200s; want 1 check, %d", c.user, c.path, n, got.code, got.body, c.code)
		}
	}
}

// TestAuthorizationChecksBounded: a read that would need more checks than
// maxAuthorizationChecks is refused with 400 once it has made them; a self
// rules review so bounded answers what it checked, Incomplete.
func TestAuthorizationChecksBounded(t *testing.T) {
	h, _, checks := countedHandler(t, fleet(50)...)
	for _, c := range fleet(50) {
		cl := clusterServing(c, podsGVR, "Pod")
		for i := range 10 {
			cl.Status.SyncResources = append(cl.Status.SyncResources, clusterServing("", schema.GroupVersionResource{
				Group: "example.com", Version: "v1", Resource: fmt.Sprintf("things%d", i)}, fmt.Sprintf("Thing%d", i)).Status.SyncResources...)
		}
		h.registry.Set(cl)
	}
	base := serve(t, asUser(viewsMux(h)))

	var namespaces []string
	for i := range 100 {
		namespaces = append(namespaces, fmt.Sprintf("ns-%d", i))
	}
	var got answer
	n := checks.during(func() {
		got = call(t, http.MethodGet, base+viewPathOf("/api/v1/pods?namespaces="+strings.Join(namespaces, ",")), "east", nil, "")
	})
	if n != maxAuthorizationChecks || got.code != http.StatusBadRequest || !strings.Contains(got.body, "authorization checks") {
		t.Errorf("east's list of 100 namespaces over 50 clusters: %d checks, %d %s", n, got.code, got.body)
	}

	n = checks.during(func() {
		got = call(t, http.MethodPost, base+viewPathOf("/apis/authorization.k8s.io/v1/selfsubjectrulesreviews"), "nobody", nil, `{"spec":{"namespace":"ns"}}`)
	})
	var review authorizationv1.SelfSubjectRulesReview
	if err := json.Unmarshal([]byte(got.body), &review); err != nil || n != maxAuthorizationChecks || !review.Status.Incomplete ||
		!strings.Contains(review.Status.EvaluationError, "authorization checks") {
		t.Errorf("rules review of 12 types over 50 clusters: %d checks, %d %s", n, got.code, got.body)
	}
}

// TestAuthorizationStopsWithRequest: no check is made once the request's
// context has ended.
func TestAuthorizationStopsWithRequest(t *testing.T) {
	h, _, checks := countedHandler(t, fleet(50)...)
	ctx, cancel := context.WithCancel(apirequest.WithUser(context.Background(), &user.DefaultInfo{Name: "east"}))
	defer cancel()
	const atCancel = 5
	checks.Authorizer = authorizer.AuthorizerFunc(func(ctx context.Context, a authorizer.Attributes) (authorizer.Decision, string, error) {
		if checks.n.Load() == atCancel {
			cancel()
		}
		return testGrants.Authorize(ctx, a)
	})
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequestWithContext(ctx, http.MethodGet, viewPathOf("/api/v1/pods"), nil))
	if n := checks.n.Load(); n != atCancel || rec.Code != http.StatusGatewayTimeout {
		t.Errorf("%d checks, %d %s; want %d and 504", n, rec.Code, rec.Body, atCancel)
	}
}

// TestAnonymousRefused: anonymous users, and any of the group
// system:unauthenticated, are refused every read, review and discovery of
// Panorama before any check; public paths are left to the host.
func TestAnonymousRefused(t *testing.T) {
	h, store, checks := countedHandler(t, "east", "west")
	putPod(t, store, "east", "a")
	authz, err := serverAuthorizer(checks, genericoptions.NewDelegatingAuthorizationOptions().AlwaysAllowPaths)
	if err != nil {
		t.Fatal(err)
	}
	resolver := requestInfoResolver{delegate: &apirequest.RequestInfoFactory{APIPrefixes: sets.NewString("api", "apis"), GrouplessAPIPrefixes: sets.NewString("api")}}
	base := serve(t, asUser(genericapifilters.WithRequestInfo(genericapifilters.WithAuthorization(viewsMux(h), authz, codecs), resolver)))

	requests := []struct{ method, path, body string }{
		{http.MethodGet, viewPathOf("/api/v1/pods"), ""},
		{http.MethodGet, viewPathOf("/api/v1/pods?watch=1"), ""},
		{http.MethodGet, viewPathOf("/clusters/east/api/v1/namespaces/ns/pods/a"), ""},
		{http.MethodGet, viewPathOf("/clusters/east/api/v1/namespaces/ns/pods/a/history"), ""},
		{http.MethodGet, viewPathOf("/clusters/east/api/v1"), ""},
		{http.MethodGet, viewPathOf("/clusters/east/version"), ""},
		{http.MethodGet, viewPathOf("/apis"), ""},
		{http.MethodGet, viewPathOf("/version"), ""},
		{http.MethodGet, searchv1alpha1.ViewPath(searchv1alpha1.FlatClusters) + "/api/v1/pods", ""},
		{http.MethodGet, ResourcesPrefix + "/clusters/east/api/v1/pods", ""},
		{http.MethodGet, CollectionsPath + "/workloads", ""},
		{http.MethodPost, viewPathOf("/apis/authorization.k8s.io/v1/selfsubjectaccessreviews"), `{"spec":{"resourceAttributes":{"verb":"list","resource":"pods"}}}`},
		{http.MethodPost, viewPathOf("/clusters/east/apis/authorization.k8s.io/v1/selfsubjectrulesreviews"), `{"spec":{"namespace":"ns"}}`},
	}
	for _, who := range []struct {
		name   string
		groups []string
	}{{user.Anonymous, []string{user.AllUnauthenticated}}, {user.Anonymous, nil}, {"someone", []string{user.AllUnauthenticated}}} {
		for _, r := range requests {
			if got := call(t, r.method, base+r.path, who.name, who.groups, r.body); got.code != http.StatusForbidden {
				t.Errorf("%s %s as %+v: %d %.200s, want 403", r.method, r.path, who, got.code, got.body)
			}
		}
	}
	if n := checks.n.Load(); n != 0 {
		t.Errorf("anonymous requests made %d checks", n)
	}

	// Who is authenticated passes, to the handler's checks.
	if got := call(t, http.MethodGet, base+viewPathOf("/api/v1/pods"), "east", nil, ""); got.code != http.StatusOK || checks.n.Load() == 0 {
		t.Errorf("east's list through the filters: %d %.200s", got.code, got.body)
	}
	// Public paths are the delegated authorizer's (the host's), as for
	// kube-apiserver.
	anonymous := &user.DefaultInfo{Name: user.Anonymous, Groups: []string{user.AllUnauthenticated}}
	for _, p := range append(genericoptions.NewDelegatingAuthorizationOptions().AlwaysAllowPaths, "/version") {
		if d, reason, _ := authz.Authorize(context.Background(), authorizer.AttributesRecord{User: anonymous, Verb: "get", Path: p}); d == authorizer.DecisionDeny {
			t.Errorf("anonymous get %s refused: %s", p, reason)
		}
	}
}

// TestAuthorizationNamesNoUnreadableCluster: what a user is told (403
// messages, warnings, self reviews) names no cluster they may not read and
// did not name, and stays the same when such a cluster is added.
func TestAuthorizationNamesNoUnreadableCluster(t *testing.T) {
	h, store, _ := countedHandler(t, "east", "west")
	putPod(t, store, "east", "a")
	putPod(t, store, "west", "b")
	putPod(t, store, "hidden", "c") // its Cluster comes later
	base := serve(t, asUser(viewsMux(h)))
	requests := []struct {
		method, path, body string
		named              string // the cluster the request names, if any
	}{
		{http.MethodGet, "/api/v1/pods", "", ""},
		{http.MethodGet, "/api/v1/namespaces/ns/pods", "", ""},
		{http.MethodGet, "/api/v1/pods?namespaces=ns,other", "", ""},
		{http.MethodGet, "/api/v1/pods?groupBy=cluster", "", ""},
		{http.MethodGet, "/api/v1/namespaces/ns/pods/a", "", ""},
		{http.MethodGet, "/api/v1/namespaces/ns/pods/b", "", ""},
		{http.MethodGet, "/api/v1/pods?clusters=east", "", "east"},
		{http.MethodGet, "/clusters/east/api/v1/namespaces/ns/pods/a/history", "", "east"},
		{http.MethodPost, "/apis/authorization.k8s.io/v1/selfsubjectaccessreviews", `{"spec":{"resourceAttributes":{"verb":"list","resource":"pods","namespace":"ns"}}}`, ""},
		{http.MethodPost, "/apis/authorization.k8s.io/v1/selfsubjectaccessreviews", `{"spec":{"resourceAttributes":{"verb":"get","resource":"pods"}}}`, ""},
		{http.MethodPost, "/apis/authorization.k8s.io/v1/selfsubjectrulesreviews", `{"spec":{"namespace":"ns"}}`, ""},
	}
	// unreadable are the clusters each user may read no pods of.
	unreadable := map[string][]string{"east": {"west", "hidden"}, "services": {"east", "west", "hidden"}, "nobody": {"east", "west", "hidden"}}
	answers := func() map[string]answer {
		out := map[string]answer{}
		for name, hidden := range unreadable {
			for _, r := range requests {
				got := call(t, r.method, base+viewPathOf(r.path), name, nil, r.body)
				told := got.warnings
				if got.code >= 400 || r.method == http.MethodPost {
					told += "\n" + got.body
				}
				for _, c := range hidden {
					if c != r.named && strings.Contains(told, c) {
						t.Errorf("%s %s as %s names cluster %s: %s", r.method, r.path, name, c, told)
					}
				}
				out[name+" "+r.method+" "+r.path+" "+r.body] = got
			}
		}
		return out
	}
	before := answers()
	h.registry.Set(clusterServing("hidden", podsGVR, "Pod"))
	after := answers()
	for k, a := range before {
		if after[k] != a {
			t.Errorf("%s: a cluster the user may not read changed the answer from %+v to %+v", k, a, after[k])
		}
	}
}

// TestMissingClusterAsUnreadable: a read in a cluster that does not exist
// is answered, byte for byte, as one in a cluster that exists and the user
// may not read.
func TestMissingClusterAsUnreadable(t *testing.T) {
	withWest, westStore, _ := countedHandler(t, "east", "west")
	putPod(t, westStore, "west", "b")
	withoutWest, _, _ := countedHandler(t, "east")
	exists, missing := serve(t, asUser(viewsMux(withWest))), serve(t, asUser(viewsMux(withoutWest)))
	for _, path := range []string{
		"/clusters/west/api/v1/namespaces/ns/pods/b/history",
		"/clusters/west/api/v1/namespaces/ns/pods/b",
		"/clusters/west/api/v1/namespaces/ns/pods",
		"/clusters/west/api/v1/pods",
		"/api/v1/pods?clusters=west",
		"/api/v1/namespaces/ns/pods?clusters=west",
	} {
		for _, name := range []string{"east", "services", "nobody"} {
			a := call(t, http.MethodGet, exists+viewPathOf(path), name, nil, "")
			b := call(t, http.MethodGet, missing+viewPathOf(path), name, nil, "")
			if a != b || a.code != http.StatusForbidden {
				t.Errorf("%s as %s: %+v where west exists, %+v where it does not", path, name, a, b)
			}
		}
	}
}

// BenchmarkAuthorizationChecks reports the checks one read costs over 50
// clusters: of a tenant granted one namespace against the admin's, and of
// a read naming 1,000 made-up clusters and 1,000 namespaces against one
// naming none.
func BenchmarkAuthorizationChecks(b *testing.B) {
	h, _, checks := countedHandler(b, fleet(50)...)
	base := serve(b, asUser(viewsMux(h)))
	reads := []struct{ name, user, path string }{
		{"tenant", "nsuser", viewPathOf("/api/v1/namespaces/ns/pods")},
		{"admin", "admin", viewPathOf("/api/v1/namespaces/ns/pods")},
		{"named", "nsuser", madeUpPods()},
		{"none", "nsuser", viewPathOf("/api/v1/pods")},
	}
	total := map[string]float64{}
	loops := 0
	for b.Loop() {
		for _, r := range reads {
			total[r.name] += float64(checks.during(func() { call(b, http.MethodGet, base+r.path, r.user, nil, "") }))
		}
		loops++
	}
	for _, r := range reads {
		total[r.name] /= float64(loops)
		b.ReportMetric(total[r.name], r.name+"-checks/op")
	}
	b.ReportMetric(total["tenant"]/total["admin"], "tenant/admin")
	b.ReportMetric(total["named"]/total["none"], "named/none")
	b.Logf("checks per read over 50 clusters: tenant of one namespace %.0f, admin %.0f (%.2f x); naming 1,000 made-up clusters and 1,000 namespaces %.0f, naming none %.0f (%.3f x)",
		total["tenant"], total["admin"], total["tenant"]/total["admin"], total["named"], total["none"], total["named"]/total["none"])
}

// hostWithTenants starts a host where each tenant has README's grant,
// pods in namespace ns of every cluster (a RoleBinding each of one Role),
// and "admin" reads everything (a ClusterRoleBinding), and returns an admin
// client of it.
func hostWithTenants(tb testing.TB, tenants ...string) kubernetes.Interface {
	host := testenv.Start(tb, testenv.WithoutCRDs())
	client := kubernetes.NewForConfigOrDie(host.Config)
	ctx := context.Background()
	read := []string{"get", "list", "watch"}
	objects := []func() error{
		func() error {
			_, err := client.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "ns"}}, metav1.CreateOptions{})
			return err
		},
		func() error {
			_, err := client.RbacV1().Roles("ns").Create(ctx, &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: "pods"}, Rules: []rbacv1.PolicyRule{{
				APIGroups: []string{searchv1alpha1.GroupName}, Resources: []string{"pods"}, Verbs: read}}}, metav1.CreateOptions{})
			return err
		},
		func() error {
			_, err := client.RbacV1().ClusterRoles().Create(ctx, &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: "admin-reads"}, Rules: []rbacv1.PolicyRule{{
				APIGroups: []string{searchv1alpha1.GroupName}, Resources: []string{"*"}, Verbs: read}}}, metav1.CreateOptions{})
			return err
		},
		func() error {
			_, err := client.RbacV1().ClusterRoleBindings().Create(ctx, &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "admin-reads"},
				RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "admin-reads"},
				Subjects: []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: rbacv1.UserKind, Name: "admin"}}}, metav1.CreateOptions{})
			return err
		},
	}
	for _, tenant := range tenants {
		objects = append(objects, func() error {
			_, err := client.RbacV1().RoleBindings("ns").Create(ctx, &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: tenant},
				RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: "pods"},
				Subjects: []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: rbacv1.UserKind, Name: tenant}}}, metav1.CreateOptions{})
			return err
		})
	}
	for _, create := range objects {
		if err := create(); err != nil {
			tb.Fatal(err)
		}
	}
	return client
}

// handlerAuthorizedBy serves a handler over clusters, each with a pod in
// namespace ns, authorized by client's host in modes, and returns its URL
// and the SubjectAccessReviews it sends, counted, cached for ttl.
func handlerAuthorizedBy(tb testing.TB, client kubernetes.Interface, modes []string, ttl time.Duration, clusters []string) (string, *countingAuthorizer) {
	delegation := genericoptions.NewDelegatingAuthorizationOptions()
	sar, err := authorizerfactory.DelegatingAuthorizerConfig{SubjectAccessReviewClient: client.AuthorizationV1(),
		AllowCacheTTL: ttl, DenyCacheTTL: ttl, WebhookRetryBackoff: delegation.WebhookRetryBackoff}.New()
	if err != nil {
		tb.Fatal(err)
	}
	sars := &countingAuthorizer{Authorizer: sar}
	factory := informers.NewSharedInformerFactory(client, 0)
	o := hostauthz.NewOptions()
	o.Modes = modes
	authz, _, err := o.New(factory, sars, delegation)
	if err != nil {
		tb.Fatal(err)
	}
	stop, cancel := context.WithCancel(context.Background())
	tb.Cleanup(cancel)
	factory.Start(stop.Done())
	factory.WaitForCacheSync(stop.Done())
	h, store, _ := countedHandler(tb, clusters...)
	h.authz = authz
	for _, c := range clusters {
		putPod(tb, store, c, "a")
	}
	return serve(tb, asUser(viewsMux(h))), sars
}

// TestTenantReadsAskTheHostNothing: in the default --authorization-mode,
// RBAC, a tenant's reads across a fleet, allowed or not, are decided by
// the host's RBAC in process: no SubjectAccessReview reaches the host. With
// RBAC,Webhook only what RBAC does not allow is asked; with Webhook,
// everything.
func TestTenantReadsAskTheHostNothing(t *testing.T) {
	client := hostWithTenants(t, "tenant")
	reads := []struct {
		path string
		code int
	}{
		{"/api/v1/namespaces/ns/pods", http.StatusOK},
		{"/api/v1/pods?namespaces=ns", http.StatusOK},
		{"/clusters/member-07/api/v1/namespaces/ns/pods/a", http.StatusOK},
		{"/api/v1/namespaces/ns/pods?groupBy=cluster", http.StatusOK},
		{"/api/v1/pods", http.StatusForbidden},
		{"/api/v1/namespaces/other/pods", http.StatusForbidden},
	}
	for _, c := range []struct {
		modes                  []string
		askAllowed, askRefused bool
	}{
		{hostauthz.NewOptions().Modes, false, false},
		{[]string{hostauthz.ModeRBAC, hostauthz.ModeWebhook}, false, true},
		{[]string{hostauthz.ModeWebhook}, true, true},
	} {
		// Uncached, so that every read that asks is seen asking.
		base, sars := handlerAuthorizedBy(t, client, c.modes, time.Nanosecond, fleet(50))
		for _, r := range reads {
			var got answer
			n := sars.during(func() { got = call(t, http.MethodGet, base+viewPathOf(r.path), "tenant", nil, "") })
			if ask := map[bool]bool{true: c.askAllowed, false: c.askRefused}[r.code == http.StatusOK]; (n > 0) != ask || got.code != r.code {
				t.Errorf("%v: tenant %s: %d SubjectAccessReviews, %d %.200s; want %d, asking the host %v", c.modes, r.path, n, got.code, got.body, r.code, ask)
			}
		}
	}
}

// BenchmarkTenantReads: 100 tenants (PANORAMA_BENCH_TENANTS), each granted
// one namespace of every cluster, list it across 50 clusters
// (PANORAMA_BENCH_TENANT_CLUSTERS) once each, 10 at a time, and the admin
// makes as many lists; in mode RBAC and in mode Webhook (the
// delegated authorizer at its default cache). Prints each mode's tenant
// p50 and p99 as ratios to the admin's of the same mode, and the questions
// per tenant read that reach the delegated authorizer (each a
// SubjectAccessReview unless its cache answers).
func BenchmarkTenantReads(b *testing.B) {
	const concurrency = 10
	tenants := storagetest.EnvInt(b, "PANORAMA_BENCH_TENANTS", 100, 1)
	clusters := storagetest.EnvInt(b, "PANORAMA_BENCH_TENANT_CLUSTERS", 50, 1)
	var names []string
	for i := range tenants {
		names = append(names, fmt.Sprintf("tenant-%03d", i))
	}
	client := hostWithTenants(b, names...)
	// lists has each of users list pods in ns across clusters, concurrency
	// at a time, and returns the latencies.
	lists := func(base string, users []string) []time.Duration {
		lat := make([]time.Duration, len(users))
		var g errgroup.Group
		g.SetLimit(concurrency)
		for i, u := range users {
			g.Go(func() error {
				start := time.Now()
				if got := call(b, http.MethodGet, base+viewPathOf("/api/v1/namespaces/ns/pods"), u, nil, ""); got.code != http.StatusOK {
					return fmt.Errorf("%s: %d %.200s", u, got.code, got.body)
				}
				lat[i] = time.Since(start)
				return nil
			})
		}
		if err := g.Wait(); err != nil {
			b.Fatal(err)
		}
		return lat
	}
	admins := slices.Repeat([]string{"admin"}, tenants)
	for _, modes := range [][]string{hostauthz.NewOptions().Modes, {hostauthz.ModeWebhook}} {
		name := strings.Join(modes, ",")
		b.Run(name, func(b *testing.B) {
			ttl := genericoptions.NewDelegatingAuthorizationOptions().AllowCacheTTL
			base, sars := handlerAuthorizedBy(b, client, modes, ttl, fleet(clusters))
			// The watch cache's first load and the client's connections
			// are no one's.
			lists(base, admins)
			var tenant, admin []time.Duration
			var asked int64
			for b.Loop() {
				asked += sars.during(func() { tenant = append(tenant, lists(base, names)...) })
				admin = append(admin, lists(base, admins)...)
			}
			slices.Sort(tenant)
			slices.Sort(admin)
			p50 := float64(storagetest.Quantile(tenant, 0.50)) / float64(storagetest.Quantile(admin, 0.50))
			p99 := float64(storagetest.Quantile(tenant, 0.99)) / float64(storagetest.Quantile(admin, 0.99))
			perRead := float64(asked) / float64(len(tenant))
			b.ReportMetric(p50, "tenant/admin-p50")
			b.ReportMetric(p99, "tenant/admin-p99")
			b.ReportMetric(perRead, "delegated-checks/tenant-read")
			b.Logf("%s: %d tenants listing one namespace across %d clusters: p50 %v (%.2fx the admin's %v), p99 %v (%.2fx the admin's %v), %.2f questions to the delegated authorizer per read",
				name, tenants, clusters, storagetest.Quantile(tenant, 0.50), p50, storagetest.Quantile(admin, 0.50),
				storagetest.Quantile(tenant, 0.99), p99, storagetest.Quantile(admin, 0.99), perRead)
		})
	}
}
