package apiserver

import (
	"context"
	"io"
	"net/http"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/apiserver/pkg/authorization/authorizer"
	genericapifilters "k8s.io/apiserver/pkg/endpoints/filters"
	apirequest "k8s.io/apiserver/pkg/endpoints/request"
	genericoptions "k8s.io/apiserver/pkg/server/options"

	searchv1alpha1 "github.com/panorama-io/panorama/apis/search/v1alpha1"
)

// TestSearchPage: the page is served under every view, through the
// generic server's filters: to authenticated users as the host allows the
// path (system:discovery allows /apis/* to them), to anonymous users
// never, and it writes nothing.
func TestSearchPage(t *testing.T) {
	h, _, _ := countedHandler(t, "east", "west")
	// The host's system:discovery: every authenticated user may get
	// non-resource paths under /apis.
	discovery := authorizer.AuthorizerFunc(func(_ context.Context, a authorizer.Attributes) (authorizer.Decision, string, error) {
		if !a.IsResourceRequest() && a.GetVerb() == "get" && strings.HasPrefix(a.GetPath(), "/apis/") {
			return authorizer.DecisionAllow, "", nil
		}
		return authorizer.DecisionNoOpinion, "", nil
	})
	authz, err := serverAuthorizer(discovery, genericoptions.NewDelegatingAuthorizationOptions().AlwaysAllowPaths)
	if err != nil {
		t.Fatal(err)
	}
	resolver := requestInfoResolver{delegate: &apirequest.RequestInfoFactory{APIPrefixes: sets.NewString("api", "apis"), GrouplessAPIPrefixes: sets.NewString("api")}}
	base := serve(t, asUser(genericapifilters.WithRequestInfo(genericapifilters.WithAuthorization(viewsMux(h), authz, codecs), resolver)))
	noRedirect := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}

	get := func(method, path, who string, groups ...string) (*http.Response, string) {
		t.Helper()
		req, _ := http.NewRequest(method, base+path, nil)
		req.Header.Set("Impersonate-User", who)
		for _, g := range groups {
			req.Header.Add("Impersonate-Group", g)
		}
		resp, err := noRedirect.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		body, err := io.ReadAll(resp.Body)
		if err != nil {
			t.Fatal(err)
		}
		return resp, string(body)
	}

	for _, view := range []string{"", "east", searchv1alpha1.FlatClusters} {
		page := searchv1alpha1.ViewPath(view) + "/ui/"
		resp, body := get(http.MethodGet, page, "east")
		if resp.StatusCode != http.StatusOK || resp.Header.Get("Content-Type") != "text/html; charset=utf-8" ||
			!strings.Contains(body, `src="app.js"`) || !strings.Contains(resp.Header.Get("Content-Security-Policy"), "script-src 'self'") {
			t.Errorf("%s: %d %q %.100s", page, resp.StatusCode, resp.Header, body)
		}
		if resp, body := get(http.MethodGet, page+"app.js", "east"); resp.StatusCode != http.StatusOK || !strings.Contains(body, "import") {
			t.Errorf("%sapp.js: %d %.100s", page, resp.StatusCode, body)
		}
		// Relative, so that it holds behind kubectl proxy's or any prefix.
		if resp, _ := get(http.MethodGet, strings.TrimSuffix(page, "/"), "east"); resp.StatusCode != http.StatusMovedPermanently || resp.Header.Get("Location") != "ui/" {
			t.Errorf("%s without its slash: %d to %q, want 301 to ui/", page, resp.StatusCode, resp.Header.Get("Location"))
		}
		for _, missing := range []string{"nothing.js", "vendor/", "vendor/diff"} {
			if resp, _ := get(http.MethodGet, page+missing, "east"); resp.StatusCode != http.StatusNotFound {
				t.Errorf("%s%s: %d, want 404", page, missing, resp.StatusCode)
			}
		}
		if resp, _ := get(http.MethodPost, page, "east"); resp.StatusCode != http.StatusMethodNotAllowed && resp.StatusCode != http.StatusForbidden {
			t.Errorf("POST %s: %d, want it refused", page, resp.StatusCode)
		}
		for _, who := range []struct {
			name   string
			groups []string
		}{{user.Anonymous, []string{user.AllUnauthenticated}}, {user.Anonymous, nil}, {"someone", []string{user.AllUnauthenticated}}} {
			for _, p := range []string{page, strings.TrimSuffix(page, "/"), page + "app.js"} {
				if resp, body := get(http.MethodGet, p, who.name, who.groups...); resp.StatusCode != http.StatusForbidden || strings.Contains(body, "<html") {
					t.Errorf("%s as %+v: %d %.100s, want 403", p, who, resp.StatusCode, body)
				}
			}
		}
	}
	// The deprecated prefix has no page: the page finds its view in the
	// views' paths only, and under a cluster's deprecated path it would
	// search every cluster.
	for _, page := range []string{ResourcesPrefix + "/ui/", ResourcesPrefix + "/clusters/east/ui/", ResourcesPrefix + "/clusters/east/ui"} {
		if resp, body := get(http.MethodGet, page, "east"); resp.StatusCode != http.StatusNotFound || strings.Contains(body, "<html") {
			t.Errorf("%s: %d %.100s, want 404", page, resp.StatusCode, body)
		}
	}
	// Only /ui and what is under it is the page's.
	if resp, _ := get(http.MethodGet, searchv1alpha1.ViewPath("")+"/uix", "east"); resp.StatusCode != http.StatusNotFound {
		t.Errorf("/uix: %d, want 404", resp.StatusCode)
	}
}
