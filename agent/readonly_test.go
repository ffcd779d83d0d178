package agent_test

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/panorama-io/panorama/agent"
)

// TestReadOnly sends ReadOnly every kind of request a hub could make and
// checks which reach the member (next) and how the others are refused.
func TestReadOnly(t *testing.T) {
	allowed := []string{
		"/api", "/api/v1", "/apis", "/apis/apps", "/apis/apps/v1",
		"/version", "/readyz", "/readyz?verbose", "/livez", "/healthz",
		"/openapi/v2", "/openapi/v3", "/openapi/v3/api/v1", "/openapi/v3/apis/apps/v1?hash=ABC",
		// list and watch of resources, with selectors.
		"/api/v1/pods", "/api/v1/namespaces",
		"/api/v1/namespaces/shop/pods",
		"/api/v1/namespaces/shop/pods?labelSelector=app%3Dweb&limit=500",
		"/api/v1/namespaces/shop/pods?watch=true&resourceVersion=10&allowWatchBookmarks=true",
		"/apis/apps/v1/deployments?watch=1",
		"/apis/apiextensions.k8s.io/v1/customresourcedefinitions",
		"/api/v1/watch/namespaces/shop/pods", "/api/v1/watch/namespaces/shop/pods/web-1",
	}
	for _, target := range allowed {
		t.Run("GET "+target, func(t *testing.T) {
			w, reached := serve(t, httptest.NewRequest(http.MethodGet, target, nil))
			if w.Code != http.StatusOK || reached == nil {
				t.Fatalf("GET %s: %d %s, want forwarded", target, w.Code, w.Body)
			}
			if reached.URL.RequestURI() != target {
				t.Errorf("forwarded %s, want %s", reached.URL.RequestURI(), target)
			}
		})
	}

	for _, c := range []struct {
		method, target string
		header         http.Header
		code           int32
		message        string // in the Status
	}{
		{http.MethodPost, "/api/v1/namespaces/shop/pods", nil, 405, "only GET to the member: POST is not allowed"},
		{http.MethodPut, "/api/v1/namespaces/shop/pods/web-1", nil, 405, "PUT is not allowed"},
		{http.MethodPatch, "/apis/apps/v1/namespaces/shop/deployments/web", nil, 405, "PATCH is not allowed"},
		{http.MethodDelete, "/api/v1/namespaces/shop/pods/web-1", nil, 405, "DELETE is not allowed"},
		{http.MethodDelete, "/api/v1/namespaces/shop/pods", nil, 405, "DELETE is not allowed"},
		{http.MethodHead, "/api/v1/pods", nil, 405, "HEAD is not allowed"},
		{http.MethodOptions, "/api", nil, 405, "OPTIONS is not allowed"},
		{http.MethodPost, "/api/v1/namespaces/shop/pods/web-1/exec?command=sh", nil, 405, "POST is not allowed"},

		// Subresources, even read with GET and even where RBAC's "*" grants them.
		{http.MethodGet, "/api/v1/namespaces/shop/pods/web-1/exec?command=sh&stdin=true", nil, 403, `pods/exec "web-1" is forbidden: the agent forwards no subresource (exec)`},
		{http.MethodGet, "/api/v1/namespaces/shop/pods/web-1/attach", nil, 403, "no subresource (attach)"},
		{http.MethodGet, "/api/v1/namespaces/shop/pods/web-1/portforward", nil, 403, "no subresource (portforward)"},
		{http.MethodGet, "/api/v1/namespaces/shop/pods/web-1/log", nil, 403, "no subresource (log)"},
		{http.MethodGet, "/api/v1/namespaces/shop/pods/web-1/proxy/admin", nil, 403, "no subresource (proxy)"},
		{http.MethodGet, "/api/v1/nodes/n1/proxy/configz", nil, 403, `nodes/proxy "n1" is forbidden`},
		{http.MethodGet, "/api/v1/namespaces/shop/services/web:80/proxy", nil, 403, "no subresource (proxy)"},
		{http.MethodGet, "/apis/apps/v1/namespaces/shop/deployments/web/status", nil, 403, "no subresource (status)"},
		{http.MethodGet, "/apis/apps/v1/namespaces/shop/deployments/web/scale", nil, 403, "no subresource (scale)"},
		{http.MethodGet, "/api/v1/namespaces/shop/status", nil, 403, "no subresource (status)"},
		// Reads by name: a sync lists and watches.
		{http.MethodGet, "/api/v1/namespaces/shop/pods/web-1", nil, 403, `pods "web-1" is forbidden: the agent forwards only list and watch, not get`},
		{http.MethodGet, "/api/v1/nodes/n1", nil, 403, "not get"},
		{http.MethodGet, "/api/v1/namespaces/shop", nil, 403, "not get"},
		{http.MethodGet, "/apis/apps/v1/namespaces/shop/deployments/web", nil, 403, "not get"},
		// The deprecated proxy verb.
		{http.MethodGet, "/api/v1/proxy/nodes/n1/configz", nil, 403, "only list and watch, not proxy"},
		{http.MethodGet, "/api/v1/proxy/namespaces/shop/pods/web-1", nil, 403, "not proxy"},

		// Upgrades to a stream.
		{http.MethodGet, "/api/v1/namespaces/shop/pods/web-1", http.Header{"Upgrade": {"websocket"}, "Connection": {"Upgrade"}}, 403, "does not upgrade connections"},
		{http.MethodGet, "/api/v1/namespaces/shop/pods", http.Header{"Upgrade": {"SPDY/3.1"}}, 403, "does not upgrade connections"},
		{http.MethodGet, "/api/v1/pods", http.Header{"Connection": {"keep-alive, upgrade"}}, 403, "does not upgrade connections"},

		// The member's other endpoints.
		{http.MethodGet, "/metrics", nil, 403, "does not forward /metrics"},
		{http.MethodGet, "/metrics/slis", nil, 403, "does not forward /metrics/slis"},
		{http.MethodGet, "/logs/kube-apiserver.log", nil, 403, "does not forward /logs/kube-apiserver.log"},
		{http.MethodGet, "/debug/pprof/profile", nil, 403, "does not forward /debug/pprof/profile"},
		{http.MethodGet, "/debug/flags/v", nil, 403, "does not forward"},
		{http.MethodGet, "/", nil, 403, "does not forward /:"},
		{http.MethodGet, "/readyz/etcd", nil, 403, "does not forward /readyz/etcd"},
		{http.MethodGet, "/api/v2", nil, 403, "does not forward /api/v2"},
		{http.MethodGet, "/openapi", nil, 403, "does not forward /openapi:"},
		{http.MethodGet, "/openapi/v3x", nil, 403, "does not forward"},
		{http.MethodGet, "/ui", nil, 403, "does not forward"},
		{http.MethodGet, "/apis/apps/v1/watch", nil, 403, "does not forward"},

		// Paths the member could read otherwise than the filter does.
		{http.MethodGet, "/api/v1/namespaces/shop/pods/web-1/../../../../nodes/n1/proxy", nil, 403, "only canonical paths"},
		{http.MethodGet, "/api/v1/namespaces/shop/pods/./web-1/exec", nil, 403, "only canonical paths"},
		{http.MethodGet, "/api/v1//pods", nil, 403, "only canonical paths"},
		{http.MethodGet, "/api/v1/pods/", nil, 403, "only canonical paths"},
		{http.MethodGet, "/api/v1/namespaces/shop/pods/web-1%2Fexec", nil, 403, "only canonical paths"},
	} {
		t.Run(c.method+" "+c.target, func(t *testing.T) {
			r := httptest.NewRequest(c.method, c.target, nil)
			for k, v := range c.header {
				r.Header[k] = v
			}
			w, reached := serve(t, r)
			if reached != nil {
				t.Fatalf("%s %s reached the member", c.method, c.target)
			}
			if int32(w.Code) != c.code {
				t.Errorf("code %d, want %d", w.Code, c.code)
			}
			if ct := w.Header().Get("Content-Type"); ct != "application/json" {
				t.Errorf("Content-Type %q", ct)
			}
			var st metav1.Status
			if err := json.Unmarshal(w.Body.Bytes(), &st); err != nil {
				t.Fatalf("not a Status: %v\n%s", err, w.Body)
			}
			wantReason := metav1.StatusReasonForbidden
			if c.code == http.StatusMethodNotAllowed {
				wantReason = metav1.StatusReasonMethodNotAllowed
			}
			if st.Kind != "Status" || st.APIVersion != "v1" || st.Status != metav1.StatusFailure || st.Code != c.code || st.Reason != wantReason {
				t.Errorf("Status %+v, want a Failure %d %s", st, c.code, wantReason)
			}
			if !strings.Contains(st.Message, c.message) {
				t.Errorf("message %q, want it to say %q", st.Message, c.message)
			}
		})
	}
}

// TestReadOnlyForwardsNoCredentials checks that the member sees none of
// the hub's headers but the allowed ones, and no body: the hub can choose
// neither who the request is served as nor anything else about it.
func TestReadOnlyForwardsNoCredentials(t *testing.T) {
	r := httptest.NewRequest(http.MethodGet, "/api/v1/namespaces/shop/secrets", strings.NewReader("a body"))
	sent := http.Header{
		"Accept":                   {"application/vnd.kubernetes.protobuf;as=Table;v=v1;g=meta.k8s.io", "application/json"},
		"Accept-Encoding":          {"gzip"},
		"User-Agent":               {"controller-manager/v0.37.2"},
		"Authorization":            {"Bearer hub-token"},
		"Impersonate-User":         {"system:admin"},
		"Impersonate-Group":        {"system:masters"},
		"Impersonate-Uid":          {"1"},
		"Impersonate-Extra-Scopes": {"all"},
		"X-Remote-User":            {"system:admin"},
		"X-Remote-Group":           {"system:masters"},
		"X-Remote-Extra-Scope":     {"all"},
		"X-Forwarded-For":          {"10.0.0.1"},
		"Cookie":                   {"session=1"},
		"Content-Type":             {"application/json"},
	}
	for k, v := range sent {
		r.Header[k] = v
	}
	w, reached := serveWith(t, r, true)
	if w.Code != http.StatusOK || reached == nil {
		t.Fatalf("%d %s, want forwarded", w.Code, w.Body)
	}
	want := http.Header{"Accept": sent["Accept"], "Accept-Encoding": sent["Accept-Encoding"], "User-Agent": sent["User-Agent"]}
	if len(reached.Header) != len(want) {
		t.Errorf("forwarded headers %v, want only %v", reached.Header, want)
	}
	for k, v := range want {
		if got := reached.Header.Values(k); strings.Join(got, "|") != strings.Join(v, "|") {
			t.Errorf("%s: forwarded %q, want %q", k, got, v)
		}
	}
	if reached.ContentLength != 0 || reached.Body != http.NoBody {
		t.Errorf("forwarded a body (length %d)", reached.ContentLength)
	}
	// The hub's own request is left as it was.
	if r.Header.Get("Authorization") == "" {
		t.Error("the hub's request lost its headers")
	}
}

// TestReadOnlySecrets: core Secrets reach the member only when the agent
// forwards them, however they are read; a custom resource named secrets
// is any resource.
func TestReadOnlySecrets(t *testing.T) {
	reads := []string{
		"/api/v1/secrets", "/api/v1/secrets?watch=true", "/api/v1/watch/secrets",
		"/api/v1/namespaces/shop/secrets", "/api/v1/namespaces/shop/secrets?fieldSelector=metadata.name%3Ddb-pass",
		"/api/v1/watch/namespaces/shop/secrets/db-pass",
	}
	for _, target := range reads {
		w, reached := serveWith(t, httptest.NewRequest(http.MethodGet, target, nil), false)
		var status metav1.Status
		if err := json.Unmarshal(w.Body.Bytes(), &status); err != nil || reached != nil || w.Code != http.StatusForbidden ||
			!strings.Contains(status.Message, "no Secrets unless started with --forward-secrets") {
			t.Errorf("GET %s without --forward-secrets: %d %s (forwarded: %v), want 403 naming the flag", target, w.Code, w.Body, reached != nil)
		}
		if w, reached := serveWith(t, httptest.NewRequest(http.MethodGet, target, nil), true); w.Code != http.StatusOK || reached == nil {
			t.Errorf("GET %s with --forward-secrets: %d %s, want forwarded", target, w.Code, w.Body)
		}
	}
	if w, reached := serve(t, httptest.NewRequest(http.MethodGet, "/apis/example.com/v1/secrets", nil)); w.Code != http.StatusOK || reached == nil {
		t.Errorf("GET of a custom resource named secrets: %d %s, want forwarded", w.Code, w.Body)
	}
}

// serve sends r through ReadOnly, without Secrets, and returns the answer
// and the request next saw, nil if none reached it.
func serve(t *testing.T, r *http.Request) (*httptest.ResponseRecorder, *http.Request) {
	t.Helper()
	return serveWith(t, r, false)
}

func serveWith(t *testing.T, r *http.Request, secrets bool) (*httptest.ResponseRecorder, *http.Request) {
	t.Helper()
	var reached *http.Request
	next := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		reached = r
		w.WriteHeader(http.StatusOK)
	})
	w := httptest.NewRecorder()
	agent.ReadOnly(next, secrets).ServeHTTP(w, r)
	return w, reached
}
