package tunnel_test

import (
	"context"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hashicorp/yamux"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	utilnet "k8s.io/apimachinery/pkg/util/net"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/panorama-io/panorama/tunnel"
)

// tokens accepts token "<cluster>-token" for cluster, and counts its calls.
type tokens struct {
	mu    sync.Mutex
	calls int
}

func (a *tokens) Authenticate(_ context.Context, token, cluster string) (string, error) {
	a.mu.Lock()
	a.calls++
	a.mu.Unlock()
	switch token {
	case cluster + "-token":
		return "agent-of-" + cluster, nil
	case "edge-token", "other-token":
		return "", apierrors.NewForbidden(tunnel.ClustersResource, cluster, errors.New("not this Cluster's agent"))
	}
	return "", apierrors.NewUnauthorized("unknown token")
}

type hubServer struct {
	hub    *tunnel.Hub
	server *httptest.Server
	roots  *x509.CertPool
	auth   *tokens

	mu      sync.Mutex
	changes []string
}

func newHub(t *testing.T, owns func(string) bool) *hubServer {
	h := &hubServer{auth: &tokens{}}
	h.hub = tunnel.NewHub(h.auth, tunnel.HubOptions{Owns: owns, Changed: func(cluster string) {
		h.mu.Lock()
		defer h.mu.Unlock()
		h.changes = append(h.changes, cluster)
	}})
	h.server = httptest.NewTLSServer(h.hub)
	t.Cleanup(h.server.Close)
	h.roots = x509.NewCertPool()
	h.roots.AddCert(h.server.Certificate())
	return h
}

// agent connects as cluster's agent and serves what it is sent with an
// HTTP handler that answers with the path asked for.
func (h *hubServer) agent(t *testing.T, cluster string) net.Listener {
	t.Helper()
	l, err := tunnel.Connect(context.Background(), tunnel.URL(h.server.URL, cluster), cluster+"-token", h.roots)
	if err != nil {
		t.Fatalf("Connect: %v", err)
	}
	go func() {
		_ = http.Serve(l, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			fmt.Fprintf(w, "%s served %s", cluster, r.URL.Path)
		}))
	}()
	t.Cleanup(func() { l.Close() })
	h.waitFor(t, cluster, true)
	return l
}

func (h *hubServer) waitFor(t *testing.T, cluster string, connected bool) {
	t.Helper()
	err := wait.PollUntilContextTimeout(context.Background(), 10*time.Millisecond, 30*time.Second, true, func(context.Context) (bool, error) {
		return h.hub.Status(cluster).Connected == connected, nil
	})
	if err != nil {
		t.Fatalf("cluster %s: connected never became %v", cluster, connected)
	}
}

// get sends a GET through cluster's tunnel, opened by its own agent.
func (h *hubServer) get(cluster, path string) (string, error) {
	return h.getAs(cluster, "agent-of-"+cluster, path)
}

func (h *hubServer) getAs(cluster, agent, path string) (string, error) {
	c := &http.Client{Transport: &http.Transport{DialContext: h.hub.Dialer(cluster, agent)}}
	resp, err := c.Get("http://member" + path)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	return string(body), err
}

func TestTunnelCarriesRequestsToItsClusterOnly(t *testing.T) {
	h := newHub(t, nil)
	h.agent(t, "edge")
	h.agent(t, "other")
	for _, cluster := range []string{"edge", "other"} {
		got, err := h.get(cluster, "/version")
		if want := cluster + " served /version"; err != nil || got != want {
			t.Errorf("GET through %s's tunnel = %q, %v; want %q", cluster, got, err, want)
		}
	}
	if st := h.hub.Status("edge"); !st.Connected || st.Since.IsZero() || st.Agent != "agent-of-edge" {
		t.Errorf("Status(edge) = %+v, want connected since a time, by agent-of-edge", st)
	}
	// A client of edge's member as served by another agent (one bound to
	// edge since) reaches nothing.
	if _, err := h.getAs("edge", "agent-of-other", "/version"); !utilnet.IsConnectionRefused(err) {
		t.Errorf("GET through edge's tunnel as another agent's: %v, want a refused connection", err)
	}
}

func TestDialWithoutTunnelIsRefused(t *testing.T) {
	h := newHub(t, nil)
	_, err := h.get("edge", "/version")
	if !utilnet.IsConnectionRefused(err) {
		t.Fatalf("GET with no tunnel: %v, want a refused connection (reflectors retry their watch on it)", err)
	}
	l := h.agent(t, "edge")
	l.Close()
	h.waitFor(t, "edge", false)
	if _, err := h.get("edge", "/version"); !utilnet.IsConnectionRefused(err) {
		t.Errorf("GET after the agent left: %v, want a refused connection", err)
	}
	if st := h.hub.Status("edge"); st.Connected || st.Since.IsZero() {
		t.Errorf("Status after the agent left = %+v, want disconnected since a time", st)
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if want := []string{"edge", "edge"}; fmt.Sprint(h.changes) != fmt.Sprint(want) {
		t.Errorf("Changed called for %v, want %v (open, close)", h.changes, want)
	}
}

func TestReconnectReplacesTheTunnel(t *testing.T) {
	h := newHub(t, nil)
	first := h.agent(t, "edge")
	h.agent(t, "edge")
	if _, err := first.Accept(); err == nil {
		t.Fatal("the replaced tunnel still accepts connections")
	}
	if got, err := h.get("edge", "/healthz"); err != nil || got != "edge served /healthz" {
		t.Errorf("GET through the new tunnel = %q, %v", got, err)
	}
	if !h.hub.Status("edge").Connected {
		t.Error("the new tunnel is not the cluster's")
	}
}

func TestTunnelRefusals(t *testing.T) {
	h := newHub(t, func(cluster string) bool { return cluster != "elsewhere" })
	for _, tc := range []struct {
		name, cluster, token string
		code                 int
		authenticated        bool
	}{
		{name: "no token", cluster: "edge", token: "", code: http.StatusUnauthorized},
		{name: "unknown token", cluster: "edge", token: "stolen", code: http.StatusUnauthorized, authenticated: true},
		{name: "another cluster's token", cluster: "other", token: "edge-token", code: http.StatusForbidden, authenticated: true},
		// Refused before the token costs anything.
		{name: "not this replica's", cluster: "elsewhere", token: "elsewhere-token", code: http.StatusServiceUnavailable},
		{name: "not a cluster name", cluster: "Not_A_Name", token: "Not_A_Name-token", code: http.StatusNotFound},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h.auth.mu.Lock()
			before := h.auth.calls
			h.auth.mu.Unlock()
			l, err := tunnel.Connect(context.Background(), tunnel.URL(h.server.URL, tc.cluster), tc.token, h.roots)
			var refused *tunnel.RefusedError
			if !errors.As(err, &refused) || refused.Code != tc.code {
				if l != nil {
					l.Close()
				}
				t.Fatalf("Connect = %v, want refused with %d", err, tc.code)
			}
			if refused.Message == "" {
				t.Error("the refusal says nothing")
			}
			h.auth.mu.Lock()
			authenticated := h.auth.calls > before
			h.auth.mu.Unlock()
			if authenticated != tc.authenticated {
				t.Errorf("authenticator called: %v, want %v", authenticated, tc.authenticated)
			}
			if h.hub.Status(tc.cluster).Connected {
				t.Error("a refused agent's tunnel is open")
			}
		})
	}
}

// TestRefusalsToRetrySayWhen: an agent sent to a replica that does not
// sync its Cluster is told when to connect again, and the connection ends.
func TestRefusalsToRetrySayWhen(t *testing.T) {
	h := newHub(t, func(cluster string) bool { return cluster != "elsewhere" })
	req, err := http.NewRequest(http.MethodGet, tunnel.URL(h.server.URL, "elsewhere"), nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer elsewhere-token")
	resp, err := h.server.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var st metav1.Status
	if err := json.NewDecoder(resp.Body).Decode(&st); err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != http.StatusServiceUnavailable || resp.Header.Get("Retry-After") != "1" || !resp.Close ||
		st.Kind != "Status" || st.Reason != metav1.StatusReasonServiceUnavailable {
		t.Errorf("answer %d, Retry-After %q, closed %v, %+v", resp.StatusCode, resp.Header.Get("Retry-After"), resp.Close, st)
	}
}

// TestAgentOpeningAStreamIsCut: only the hub opens streams; an agent that
// opens one loses its tunnel rather than holding the hub's memory.
func TestAgentOpeningAStreamIsCut(t *testing.T) {
	h := newHub(t, nil)
	l := h.agent(t, "edge")
	if _, err := l.(*yamux.Session).Open(); err != nil {
		t.Fatal(err)
	}
	h.waitFor(t, "edge", false)
}

// TestConnectRefusesRedirects: a redirect, which could send the token to
// a plain-HTTP endpoint, is not followed.
func TestConnectRefusesRedirects(t *testing.T) {
	var followed atomic.Bool
	target := httptest.NewServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) { followed.Store(true) }))
	t.Cleanup(target.Close)
	redirect := httptest.NewTLSServer(http.RedirectHandler(target.URL, http.StatusTemporaryRedirect))
	t.Cleanup(redirect.Close)
	roots := x509.NewCertPool()
	roots.AddCert(redirect.Certificate())
	var refused *tunnel.RefusedError
	if _, err := tunnel.Connect(context.Background(), tunnel.URL(redirect.URL, "edge"), "edge-token", roots); !errors.As(err, &refused) || refused.Code != http.StatusTemporaryRedirect {
		t.Errorf("Connect to a redirect: %v, want refused with its 307", err)
	}
	if followed.Load() {
		t.Error("the redirect was followed")
	}
}

func TestConnectVerifiesTheHub(t *testing.T) {
	h := newHub(t, nil)
	l, err := tunnel.Connect(context.Background(), tunnel.URL(h.server.URL, "edge"), "edge-token", x509.NewCertPool())
	if err == nil {
		l.Close()
		t.Fatal("Connect trusted a hub whose certificate no given root signs")
	}
	if h.hub.Status("edge").Connected {
		t.Error("a tunnel opened to an unverified hub")
	}
}
