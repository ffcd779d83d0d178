package apiserver

import (
	"context"
	"io"
	"net/http"
	"slices"
	"strings"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/apiserver/pkg/authorization/authorizer"
	apirequest "k8s.io/apiserver/pkg/endpoints/request"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"

	"github.com/panorama-io/panorama/storage"
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

// asUser authenticates the Impersonate-User header, "admin" without one.
func asUser(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		name := r.Header.Get("Impersonate-User")
		if name == "" {
			name = "admin"
		}
		h.ServeHTTP(w, r.WithContext(apirequest.WithUser(r.Context(), &user.DefaultInfo{Name: name})))
	})
}

func as(cfg *rest.Config, name, cluster string) *rest.Config {
	c := rest.CopyConfig(cfg)
	c.Impersonate.UserName = name
	if cluster != "" {
		c.Host = strings.TrimSuffix(c.Host, ViewPath("")) + ViewPath(cluster)
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
		{"east", "", "", []string{"a"}, "1 clusters left out"},
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
// answers, both ways, so that checking every cluster stays cheap.
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
		req, _ := http.NewRequest(http.MethodGet, strings.TrimSuffix(cfg.Host, ViewPath(""))+CollectionsPath+"/networking?"+query, nil)
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
	if _, err := s.Apply(context.Background(), cluster, gvr, []storage.Change{storage.Upsert(&unstructured.Unstructured{Object: obj})}); err != nil {
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
