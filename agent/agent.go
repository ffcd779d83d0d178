// Package agent is the member side of a tunnel (package tunnel): run in a
// member the hub cannot dial, it dials out to the hub and serves the
// hub's connections through it with a proxy to the member's API server,
// under the agent's own read-only identity, forwarding only reads
// (ReadOnly).
package agent

import (
	"context"
	"crypto/x509"
	"errors"
	"fmt"
	"math"
	"net"
	"net/http"
	"net/url"
	"os"
	"strings"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus/promhttp"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/rest"
	"k8s.io/klog/v2"

	"github.com/panorama-io/panorama/tunnel"
)

// Options configure an agent.
type Options struct {
	// HubURL is the hub's tunnel endpoint, https://host:port.
	HubURL string
	// Cluster is the name of the member's Cluster in the hub.
	Cluster string
	// TokenFile holds the host ServiceAccount token the agent presents to
	// the hub (audience tunnel.Audience). It is read at each connection,
	// so that a rotated token is used from the next one on.
	TokenFile string
	// CAFile holds the CAs (PEM) the hub's certificate is verified
	// against, read at each connection as TokenFile; empty: the system's.
	CAFile string
	// Member is how the agent reaches its own API server, with its own
	// credentials.
	Member *rest.Config
	// ForwardSecrets lets the hub read core Secrets (ReadOnly).
	ForwardSecrets bool
	// HealthAddr is the address of /healthz, /readyz (ready while the
	// tunnel is open) and /metrics; empty: none.
	HealthAddr string
}

// Validate says what is missing or wrong in o.
func (o *Options) Validate() error {
	var errs []error
	if u, err := url.Parse(o.HubURL); err != nil || u.Scheme != "https" || u.Host == "" {
		errs = append(errs, fmt.Errorf("the hub's URL %q is not https://host[:port]", o.HubURL))
	}
	if o.Cluster == "" {
		errs = append(errs, errors.New("the Cluster's name is missing"))
	}
	if o.TokenFile == "" {
		errs = append(errs, errors.New("the token file is missing"))
	}
	if o.Member == nil {
		errs = append(errs, errors.New("the member's configuration is missing"))
	}
	return errors.Join(errs...)
}

// connectFunc opens a tunnel: tunnel.Connect, or a test's.
type connectFunc func(ctx context.Context, url, token string, rootCAs *x509.CertPool) (net.Listener, error)

// Reconnection waits reconnectBackoff, doubling from 1s to 30s with up to
// half as much again at random, so that the agents of a fleet do not all
// come back at once after the hub restarts. A tunnel that stayed up
// healthyAfter starts the backoff over.
var reconnectBackoff = wait.Backoff{Duration: time.Second, Factor: 2, Jitter: 0.5, Steps: math.MaxInt32, Cap: 30 * time.Second}

const healthyAfter = time.Minute

// readHeaderTimeout bounds how long the hub may take to send a request's
// headers on a connection, which otherwise holds a goroutine for ever.
const readHeaderTimeout = 30 * time.Second

type agent struct {
	opts    Options
	url     string
	handler http.Handler
	connect connectFunc
	backoff wait.Backoff
	// up is true while a tunnel is open: the agent is ready.
	up atomic.Bool
}

// Run connects to the hub and serves the hub's reads of the member through
// the tunnel, reconnecting whenever it drops, until ctx ends.
func Run(ctx context.Context, opts Options) error {
	a, err := newAgent(opts, tunnel.Connect)
	if err != nil {
		return err
	}
	return a.run(ctx)
}

func newAgent(opts Options, connect connectFunc) (*agent, error) {
	if err := opts.Validate(); err != nil {
		return nil, err
	}
	proxy, err := NewProxy(opts.Member)
	if err != nil {
		return nil, err
	}
	return &agent{
		opts: opts, url: tunnel.URL(opts.HubURL, opts.Cluster), handler: ReadOnly(proxy, opts.ForwardSecrets),
		connect: connect, backoff: reconnectBackoff,
	}, nil
}

func (a *agent) run(ctx context.Context) error {
	ctx = klog.NewContext(ctx, klog.FromContext(ctx).WithValues("cluster", a.opts.Cluster))
	logger := klog.FromContext(ctx)
	if a.opts.HealthAddr != "" {
		l, err := net.Listen("tcp", a.opts.HealthAddr)
		if err != nil {
			return fmt.Errorf("listening for probes: %w", err)
		}
		srv := &http.Server{Handler: a.healthHandler(), ReadHeaderTimeout: readHeaderTimeout}
		defer srv.Close()
		go func() { _ = srv.Serve(l) }()
	}
	backoff := a.backoff
	for {
		up, err := a.session(ctx)
		if ctx.Err() != nil {
			return nil
		}
		delay := a.retryDelay(&backoff, up, err)
		if up > 0 {
			logger.Info("Disconnected from the hub", "reason", err, "connectedFor", up.Round(time.Second), "retryIn", delay.Round(time.Millisecond))
		} else {
			logger.Info("Could not connect to the hub", "url", a.url, "reason", err, "retryIn", delay.Round(time.Millisecond))
		}
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(delay):
		}
	}
}

// retryDelay is how long to wait before connecting again, after a tunnel
// that was up for up (zero: it did not open) ended with err; backoff is
// the reconnection's state.
func (a *agent) retryDelay(backoff *wait.Backoff, up time.Duration, err error) time.Duration {
	if up >= healthyAfter {
		*backoff = a.backoff
	}
	if refused := (*tunnel.RefusedError)(nil); errors.As(err, &refused) {
		switch refused.Code {
		case http.StatusUnauthorized, http.StatusForbidden:
			// The token will not do until someone changes it: ask again
			// seldom, not to flood the hub's log and authenticator.
			return wait.Jitter(a.backoff.Cap, a.backoff.Jitter)
		case http.StatusServiceUnavailable:
			// Another replica of the hub syncs the Cluster: the next
			// connection may reach the one that does.
			return wait.Jitter(a.backoff.Duration, a.backoff.Jitter)
		}
	}
	return backoff.Step()
}

// session opens one tunnel and serves it until it drops. It returns how
// long the tunnel was up (zero when it did not open) and why it ended.
func (a *agent) session(ctx context.Context) (time.Duration, error) {
	token, rootCAs, err := a.credentials()
	if err != nil {
		return 0, err
	}
	l, err := a.connect(ctx, a.url, token, rootCAs)
	if err != nil {
		return 0, err
	}
	start := time.Now()
	klog.FromContext(ctx).Info("Connected to the hub", "url", a.url)
	a.up.Store(true)
	connected.Set(1)
	defer func() {
		a.up.Store(false)
		connected.Set(0)
	}()
	srv := &http.Server{
		Handler:           a.handler,
		BaseContext:       func(net.Listener) context.Context { return ctx },
		ReadHeaderTimeout: readHeaderTimeout,
	}
	stop := context.AfterFunc(ctx, func() { _ = srv.Close() })
	defer stop()
	err = srv.Serve(l) // closes l, and with it the tunnel
	// The hub's requests in flight end with the tunnel.
	_ = srv.Close()
	return time.Since(start), err
}

// credentials reads the token and the hub's CAs afresh.
func (a *agent) credentials() (string, *x509.CertPool, error) {
	b, err := os.ReadFile(a.opts.TokenFile)
	if err != nil {
		return "", nil, fmt.Errorf("reading the token: %w", err)
	}
	token := strings.TrimSpace(string(b))
	if token == "" {
		return "", nil, fmt.Errorf("the token file %s is empty", a.opts.TokenFile)
	}
	if a.opts.CAFile == "" {
		return token, nil, nil
	}
	pem, err := os.ReadFile(a.opts.CAFile)
	if err != nil {
		return "", nil, fmt.Errorf("reading the hub's CA: %w", err)
	}
	rootCAs := x509.NewCertPool()
	if !rootCAs.AppendCertsFromPEM(pem) {
		return "", nil, fmt.Errorf("no PEM certificate in the hub's CA file %s", a.opts.CAFile)
	}
	return token, rootCAs, nil
}

// healthHandler serves /healthz (the process runs), /readyz (the tunnel
// is open) and /metrics.
func (a *agent) healthHandler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte("ok")) })
	mux.HandleFunc("GET /readyz", func(w http.ResponseWriter, _ *http.Request) {
		if !a.up.Load() {
			http.Error(w, "not connected to the hub", http.StatusServiceUnavailable)
			return
		}
		_, _ = w.Write([]byte("ok"))
	})
	mux.Handle("GET /metrics", promhttp.HandlerFor(registry, promhttp.HandlerOpts{}))
	return mux
}
