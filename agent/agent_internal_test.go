package agent

import (
	"context"
	"crypto/x509"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/rest"

	"github.com/panorama-io/panorama/tunnel"
)

// dial is one connection attempt of the agent under test, which waits for
// the test to answer it with a listener (the tunnel) or an error.
type dial struct {
	url, token string
	reply      chan dialResult
}

type dialResult struct {
	l   net.Listener
	err error
}

// TestRun drives the agent's loop through a refused connection, a tunnel
// that serves the hub's requests and drops, and a reconnection with the
// token rotated meanwhile, checking readiness, the connected gauge and
// what the member is sent at each step.
func TestRun(t *testing.T) {
	memberSaw := make(chan *http.Request, 10)
	member := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		memberSaw <- r
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, `{"kind":"ConfigMapList","apiVersion":"v1","items":[]}`)
	}))
	defer member.Close()

	dir := t.TempDir()
	tokenFile := filepath.Join(dir, "token")
	writeFile(t, tokenFile, "t1\n")
	dials := make(chan dial)
	connect := func(ctx context.Context, url, token string, rootCAs *x509.CertPool) (net.Listener, error) {
		d := dial{url: url, token: token, reply: make(chan dialResult)}
		select {
		case dials <- d:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
		r := <-d.reply
		return r.l, r.err
	}
	a, err := newAgent(Options{
		HubURL: "https://hub.example.com:8444", Cluster: "east", TokenFile: tokenFile,
		Member: &rest.Config{Host: member.URL, BearerToken: "agent-token"},
	}, connect)
	if err != nil {
		t.Fatal(err)
	}
	a.backoff = wait.Backoff{Duration: time.Millisecond, Factor: 2, Steps: 10, Cap: 10 * time.Millisecond}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error)
	go func() { done <- a.run(ctx) }()
	health := httptest.NewServer(a.healthHandler())
	defer health.Close()

	d := <-dials
	if d.url != "https://hub.example.com:8444/tunnel/v1/clusters/east" || d.token != "t1" {
		t.Fatalf("dialed %s with token %q", d.url, d.token)
	}
	checkReady(t, health.URL, http.StatusServiceUnavailable)
	d.reply <- dialResult{err: &tunnel.RefusedError{Code: http.StatusServiceUnavailable, Message: "another replica"}}

	d = <-dials
	tunnelEnd := listen(t)
	d.reply <- dialResult{l: tunnelEnd}
	hub := hubClient(tunnelEnd.Addr().String())
	// The hub's credentials stay in the hub: the member sees the agent's.
	req, _ := http.NewRequest(http.MethodGet, "http://member/api/v1/namespaces/shop/configmaps?limit=10", nil)
	req.Header.Set("Authorization", "Bearer hub-token")
	req.Header.Set("Impersonate-User", "system:admin")
	resp := do(t, hub, req, http.StatusOK)
	if !strings.Contains(resp, "ConfigMapList") {
		t.Errorf("the hub got %s", resp)
	}
	saw := <-memberSaw
	if saw.URL.RequestURI() != "/api/v1/namespaces/shop/configmaps?limit=10" || saw.Header.Get("Authorization") != "Bearer agent-token" ||
		saw.Header.Get("Impersonate-User") != "" {
		t.Errorf("the member was sent %s with Authorization %q, Impersonate-User %q", saw.URL, saw.Header.Get("Authorization"), saw.Header.Get("Impersonate-User"))
	}
	checkReady(t, health.URL, http.StatusOK)
	if v := testutil.ToFloat64(connected); v != 1 {
		t.Errorf("panorama_agent_connected %v while connected", v)
	}
	refusedBefore := testutil.ToFloat64(requestsTotal.WithLabelValues(verdictRefused))
	req, _ = http.NewRequest(http.MethodDelete, "http://member/api/v1/namespaces/shop/configmaps/c", nil)
	do(t, hub, req, http.StatusMethodNotAllowed)
	if v := testutil.ToFloat64(requestsTotal.WithLabelValues(verdictRefused)); v != refusedBefore+1 {
		t.Errorf("refused requests went from %v to %v", refusedBefore, v)
	}

	// The tunnel drops; the token was rotated meanwhile.
	writeFile(t, tokenFile, "t2")
	_ = tunnelEnd.Close()
	d = <-dials
	if d.token != "t2" {
		t.Errorf("reconnected with token %q, want the rotated one", d.token)
	}
	checkReady(t, health.URL, http.StatusServiceUnavailable)
	if v := testutil.ToFloat64(connected); v != 0 {
		t.Errorf("panorama_agent_connected %v while disconnected", v)
	}
	d.reply <- dialResult{l: listen(t)}

	cancel()
	if err := <-done; err != nil {
		t.Errorf("run returned %v when its context ended", err)
	}
	select {
	case r := <-memberSaw:
		t.Errorf("the member was sent %s %s", r.Method, r.URL)
	default:
	}
}

// TestRetryDelay checks the waits between connections: growing to the
// cap while connections fail, the cap at once for a token the hub refuses,
// the first step for a hub replica that is not the Cluster's, and the
// first step again after a tunnel that stayed up a minute.
func TestRetryDelay(t *testing.T) {
	a := &agent{backoff: reconnectBackoff}
	b := a.backoff
	within := func(what string, got, base time.Duration) {
		t.Helper()
		if max := base + time.Duration(float64(base)*a.backoff.Jitter); got < base || got > max {
			t.Errorf("%s: waits %v, want %v to %v", what, got, base, max)
		}
	}
	dropped := errors.New("session shutdown")
	for _, want := range []time.Duration{time.Second, 2 * time.Second, 4 * time.Second, 8 * time.Second, 16 * time.Second, 30 * time.Second, 30 * time.Second} {
		within("failing", a.retryDelay(&b, 0, dropped), want)
	}
	within("401", a.retryDelay(&b, 0, &tunnel.RefusedError{Code: http.StatusUnauthorized}), 30*time.Second)
	within("403", a.retryDelay(&b, 0, &tunnel.RefusedError{Code: http.StatusForbidden}), 30*time.Second)
	within("503", a.retryDelay(&b, 0, &tunnel.RefusedError{Code: http.StatusServiceUnavailable}), time.Second)
	within("a short tunnel", a.retryDelay(&b, 10*time.Second, dropped), 30*time.Second)
	within("a healthy tunnel", a.retryDelay(&b, healthyAfter, dropped), time.Second)
	within("after it", a.retryDelay(&b, 0, dropped), 2*time.Second)
}

func TestOptionsValidate(t *testing.T) {
	ok := Options{HubURL: "https://hub:8444", Cluster: "east", TokenFile: "/t", Member: &rest.Config{}}
	if err := ok.Validate(); err != nil {
		t.Fatalf("valid options: %v", err)
	}
	bad := Options{HubURL: "http://hub:8444"}
	err := bad.Validate()
	for _, want := range []string{`"http://hub:8444" is not https://host[:port]`, "Cluster's name is missing", "token file is missing", "member's configuration is missing"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("error %v, want it to say %q", err, want)
		}
	}
}

func writeFile(t *testing.T, name, content string) {
	t.Helper()
	if err := os.WriteFile(name, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
}

func listen(t *testing.T) net.Listener {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	return l
}

// hubClient sends every request to addr, the tunnel's end in the agent, as
// the hub does over the tunnel's streams.
func hubClient(addr string) *http.Client {
	return &http.Client{Transport: &http.Transport{
		DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			return (&net.Dialer{}).DialContext(ctx, "tcp", addr)
		},
	}}
}

func do(t *testing.T, c *http.Client, req *http.Request, code int) string {
	t.Helper()
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != code {
		t.Fatalf("%s %s: %d %s, want %d", req.Method, req.URL, resp.StatusCode, body, code)
	}
	return string(body)
}

func checkReady(t *testing.T, healthURL string, code int) {
	t.Helper()
	resp, err := http.Get(healthURL + "/readyz")
	if err != nil {
		t.Fatal(err)
	}
	_ = resp.Body.Close()
	if resp.StatusCode != code {
		t.Errorf("/readyz answered %d, want %d", resp.StatusCode, code)
	}
}
