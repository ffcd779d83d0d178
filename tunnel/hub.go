package tunnel

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/coder/websocket"
	"github.com/hashicorp/yamux"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/klog/v2"

	clusterv1alpha1 "github.com/panorama-io/panorama/apis/cluster/v1alpha1"
	"github.com/panorama-io/panorama/internal/responsewriters"
)

// ClustersResource is the resource a refused tunnel's Status names.
var ClustersResource = clusterv1alpha1.GroupVersion.WithResource("clusters").GroupResource()

// Authenticator decides whether a token opens a Cluster's tunnel.
type Authenticator interface {
	// Authenticate returns who token is, if it opens cluster's tunnel;
	// else an error whose Status says why (401: no such token, 403: not
	// for this Cluster).
	Authenticate(ctx context.Context, token, cluster string) (string, error)
}

// HubOptions are a Hub's.
type HubOptions struct {
	// Owns reports whether this replica syncs cluster; a tunnel to one it
	// does not is refused with 503, so that the agent tries again, and
	// reaches the one that does. Nil: every cluster.
	Owns func(cluster string) bool
	// Changed is called after a Cluster's tunnel opens or closes.
	Changed func(cluster string)
}

// Hub is the tunnel endpoint: it accepts agents' tunnels, one per Cluster,
// and dials their members through them.
type Hub struct {
	auth Authenticator
	opts HubOptions

	mu      sync.Mutex
	tunnels map[string]*tunnel
	// closed records when and why each Cluster's last tunnel closed.
	closed map[string]Status
}

// tunnel is an agent's open tunnel.
type tunnel struct {
	session *yamux.Session
	since   time.Time
	agent   string
}

// Status is what the hub knows of a Cluster's agent.
type Status struct {
	// Connected is whether a tunnel is open.
	Connected bool
	// Since is when the tunnel opened, or else when the last one closed;
	// zero when none ever opened.
	Since time.Time
	// Agent is who opened the tunnel: its ServiceAccount's user name.
	Agent string
}

// NewHub returns a Hub that accepts the tunnels auth accepts.
func NewHub(auth Authenticator, opts HubOptions) *Hub {
	return &Hub{auth: auth, opts: opts, tunnels: map[string]*tunnel{}, closed: map[string]Status{}}
}

// authTimeout bounds the authentication of a tunnel: the host answers a
// TokenReview and a read.
const authTimeout = 10 * time.Second

// ServeHTTP accepts a tunnel at URL's path. Nothing is done for a request
// without a token the Authenticator accepts for the Cluster it names.
func (h *Hub) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	cluster, ok := strings.CutPrefix(r.URL.Path, pathPrefix)
	if !ok || len(validation.IsDNS1123Subdomain(cluster)) > 0 {
		writeStatus(w, apierrors.NewNotFound(ClustersResource, cluster))
		return
	}
	token, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	if !ok || token == "" {
		writeStatus(w, apierrors.NewUnauthorized("a tunnel needs a bearer token"))
		return
	}
	// Before the token, which may cost the host a TokenReview: a replica
	// that does not sync the Cluster spends nothing on it.
	if !h.owns(cluster) {
		unavailable := apierrors.NewServiceUnavailable(fmt.Sprintf("another replica syncs Cluster %q: connect again", cluster))
		unavailable.ErrStatus.Details = &metav1.StatusDetails{RetryAfterSeconds: 1}
		writeStatus(w, unavailable)
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), authTimeout)
	agent, err := h.auth.Authenticate(ctx, token, cluster)
	cancel()
	logger := klog.FromContext(r.Context()).WithValues("cluster", cluster, "remote", r.RemoteAddr)
	if err != nil {
		// A token of the host's bound to another Cluster is a mistake
		// worth an operator's eye; the rest, which anyone may send, would
		// flood the log.
		if apierrors.IsForbidden(err) {
			logger.Info("refused a tunnel", "err", err)
		} else {
			logger.V(2).Info("refused a tunnel", "err", err)
		}
		writeStatus(w, err)
		return
	}
	conn, err := websocket.Accept(w, r, &websocket.AcceptOptions{Subprotocols: []string{subprotocol}})
	if err != nil {
		logger.Info("tunnel handshake failed", "err", err)
		return // Accept answered
	}
	if conn.Subprotocol() != subprotocol {
		conn.Close(websocket.StatusPolicyViolation, "the tunnel subprotocol "+subprotocol+" is required")
		return
	}
	// The tunnel lives as long as its session, past this request, which
	// waits for it below.
	session, err := newSession(context.WithoutCancel(r.Context()), conn, true)
	if err != nil {
		conn.Close(websocket.StatusInternalError, "")
		return
	}
	t := &tunnel{session: session, since: time.Now(), agent: agent}
	h.open(cluster, t)
	logger.Info("tunnel opened", "agent", agent)
	// The replica may have stopped syncing the Cluster, and closed its
	// tunnels, since it was asked above.
	if !h.owns(cluster) {
		session.Close()
	}
	// Only the hub opens streams: one the agent opens would wait to be
	// accepted, holding its window, until the session ends.
	go func() {
		if stream, err := session.Accept(); err == nil {
			stream.Close()
			logger.Info("closed a tunnel whose agent opened a stream", "agent", agent)
			session.Close()
		}
	}()
	<-session.CloseChan()
	h.close(cluster, t)
	logger.Info("tunnel closed", "agent", agent)
}

// open makes t cluster's tunnel, closing the one it replaces: an agent
// that reconnects before the hub saw its last tunnel drop.
func (h *Hub) open(cluster string, t *tunnel) {
	h.mu.Lock()
	old := h.tunnels[cluster]
	h.tunnels[cluster] = t
	h.mu.Unlock()
	if old != nil {
		old.session.Close()
	}
	h.changed(cluster)
}

// close forgets t, unless another tunnel of cluster replaced it.
func (h *Hub) close(cluster string, t *tunnel) {
	h.mu.Lock()
	current := h.tunnels[cluster] == t
	if current {
		delete(h.tunnels, cluster)
		h.closed[cluster] = Status{Since: time.Now(), Agent: t.agent}
	}
	h.mu.Unlock()
	if current {
		h.changed(cluster)
	}
}

func (h *Hub) owns(cluster string) bool { return h.opts.Owns == nil || h.opts.Owns(cluster) }

func (h *Hub) changed(cluster string) {
	if h.opts.Changed != nil {
		h.opts.Changed(cluster)
	}
}

// Close closes cluster's tunnel, if one is open: when this replica stops
// syncing it, the agent reconnects to the one that does.
func (h *Hub) Close(cluster string) {
	h.mu.Lock()
	t := h.tunnels[cluster]
	h.mu.Unlock()
	if t != nil {
		t.session.Close()
	}
}

// CloseAll closes every tunnel: the endpoint stops.
func (h *Hub) CloseAll() {
	h.mu.Lock()
	open := make([]*tunnel, 0, len(h.tunnels))
	for _, t := range h.tunnels {
		open = append(open, t)
	}
	h.mu.Unlock()
	for _, t := range open {
		t.session.Close()
	}
}

// Status returns what the hub knows of cluster's agent.
func (h *Hub) Status(cluster string) Status {
	h.mu.Lock()
	defer h.mu.Unlock()
	if t, ok := h.tunnels[cluster]; ok {
		return Status{Connected: true, Since: t.since, Agent: t.agent}
	}
	return h.closed[cluster]
}

// Dialer returns a dial function that opens a connection to cluster's
// member through the tunnel agent opened, whatever address it is asked
// for. With no such tunnel open it fails as a refused connection does, so
// that client-go's reflectors retry their watches, where they were, until
// the agent is back, rather than list the member afresh; and so that
// they do not resume them through another agent, which may serve another
// member, before their Cluster is checked anew.
func (h *Hub) Dialer(cluster, agent string) func(ctx context.Context, network, address string) (net.Conn, error) {
	return func(ctx context.Context, network, address string) (net.Conn, error) {
		h.mu.Lock()
		t := h.tunnels[cluster]
		h.mu.Unlock()
		if t == nil || t.agent != agent {
			return nil, &net.OpError{Op: "dial", Net: "tunnel", Err: fmt.Errorf("no tunnel of Cluster %q from %s is open: %w", cluster, agent, syscall.ECONNREFUSED)}
		}
		conn, err := t.session.Open()
		if err != nil {
			return nil, &net.OpError{Op: "dial", Net: "tunnel", Err: fmt.Errorf("the tunnel of Cluster %q: %v: %w", cluster, err, syscall.ECONNREFUSED)}
		}
		return conn, nil
	}
}

// writeStatus answers with err's own Status, never one it wraps (the
// host's answer to a TokenReview is not the peer's to read); any other
// error is a 503, since what failed was asking the host. A refused peer
// gets no more of the connection.
func writeStatus(w http.ResponseWriter, err error) {
	st := apierrors.NewServiceUnavailable("the tunnel cannot be authenticated now").ErrStatus
	if s, ok := err.(apierrors.APIStatus); ok {
		st = s.Status()
	}
	w.Header().Set("Connection", "close")
	responsewriters.WriteStatus(w, &st)
}
