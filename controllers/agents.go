package controllers

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"path/filepath"
	"time"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/certwatcher"
	"sigs.k8s.io/controller-runtime/pkg/log"

	clusterv1alpha1 "github.com/panorama-io/panorama/apis/cluster/v1alpha1"
	"github.com/panorama-io/panorama/tunnel"
)

// agentAwayError is a Cluster reached through an agent none of which is
// connected: its synchronizers stay, and resume where they were once one
// connects.
type agentAwayError struct{ message string }

func (e *agentAwayError) Error() string { return e.message }

// connection builds the client config of c's member, and its identity
// (memberConfig): directly, or through its agent's tunnel.
func (r *ClusterReconciler) connection(ctx context.Context, c *clusterv1alpha1.Cluster) (*rest.Config, string, error) {
	if c.Spec.Agent == nil {
		return memberConfig(ctx, r.APIReader, r.Secrets, c)
	}
	if r.Tunnels == nil {
		return nil, "", &refusedError{ReasonNoTunnelEndpoint, "this controller manager serves no tunnel endpoint (--tunnel-bind-address), so no agent can connect"}
	}
	st := r.Tunnels.Status(c.Name)
	switch {
	case st.Since.IsZero():
		return nil, "", &agentAwayError{fmt.Sprintf("no agent has connected: install chart panorama-agent in the member with cluster=%s and a token of a ServiceAccount of namespace %q annotated %s=%s", c.Name, r.Secrets.Namespace, clusterv1alpha1.AnnotationAgentCluster, c.Name)}
	case !st.Connected:
		return nil, "", &agentAwayError{fmt.Sprintf("the agent (%s) disconnected at %s; objects synced before stay served", st.Agent, st.Since.UTC().Format(time.RFC3339))}
	}
	// Inside the tunnel, which TLS protects, the member is spoken to in
	// plain HTTP: the agent verifies the member's certificate and
	// authenticates to it, with credentials the hub never holds. Nor does
	// the hub's own proxy, if its environment names one, see the
	// requests: they would go to the agent as proxy requests, with the
	// proxy's credentials.
	cfg := &rest.Config{Host: "http://" + c.Name + ".agent.panorama.io", Dial: r.Tunnels.Dialer(c.Name, st.Agent), Proxy: noProxy}
	cfg.QPS, cfg.Burst = memberQPS, memberBurst
	cfg.UserAgent = "panorama-controller-manager/" + c.Name
	// The tunnel that a reconnecting agent opens replaces the last: the
	// dialer finds it, so the identity, and the synchronizers, stay, as
	// long as the same agent connects. Another (a ServiceAccount bound to
	// the Cluster since) may serve another member: its synchronizers
	// start over, rather than resume watches of one member on another.
	return cfg, "agent/" + c.Name + "/" + st.Agent, nil
}

func noProxy(*http.Request) (*url.URL, error) { return nil, nil }

// agentChanged has a Cluster checked anew when its agent connects or
// leaves, rather than at its next health check.
func (r *ClusterReconciler) agentChanged(cluster string) {
	r.checks.forget(cluster)
	r.syncStateChanged(cluster)
}

// TunnelOptions configure the endpoint agents connect to.
type TunnelOptions struct {
	// BindAddress is where it listens; "" or "0" serves none.
	BindAddress string
	// CertDir holds its serving certificate and key (tls.crt, tls.key),
	// reloaded when they change.
	CertDir string
}

func (o TunnelOptions) enabled() bool { return o.BindAddress != "" && o.BindAddress != "0" }

// setupTunnels serves the tunnel endpoint on every replica; each accepts
// the tunnels of the Clusters it syncs (owners.owns).
func (r *ClusterReconciler) setupTunnels(mgr ctrl.Manager, opts TunnelOptions) error {
	if !opts.enabled() {
		return nil
	}
	if opts.CertDir == "" {
		return errors.New("tunnel-cert-path is required with tunnel-bind-address: agents verify the endpoint's certificate")
	}
	kc, err := kubernetes.NewForConfig(mgr.GetConfig())
	if err != nil {
		return err
	}
	r.Tunnels = tunnel.NewHub(tunnel.NewServiceAccounts(kc, r.Secrets.Namespace),
		tunnel.HubOptions{Owns: r.owners.owns, Changed: r.agentChanged})
	watcher, err := certwatcher.New(filepath.Join(opts.CertDir, "tls.crt"), filepath.Join(opts.CertDir, "tls.key"))
	if err != nil {
		return fmt.Errorf("tunnel endpoint certificate: %w", err)
	}
	if err := mgr.Add(watcher); err != nil {
		return err
	}
	return mgr.Add(runnable{everyReplica: true, run: func(ctx context.Context) error {
		l, err := net.Listen("tcp", opts.BindAddress)
		if err != nil {
			return fmt.Errorf("tunnel endpoint: %w", err)
		}
		server := &http.Server{
			Handler: r.Tunnels,
			// Tunnels are WebSockets: HTTP/1.1 only.
			TLSConfig: &tls.Config{GetCertificate: watcher.GetCertificate, MinVersion: tls.VersionTLS12, NextProtos: []string{"http/1.1"}},
			// Whoever reaches the endpoint may connect: bounded until
			// authenticated, and then its tunnel is no longer the server's.
			ReadHeaderTimeout: 10 * time.Second,
			IdleTimeout:       30 * time.Second,
			MaxHeaderBytes:    16 << 10,
		}
		go func() {
			<-ctx.Done()
			_ = server.Close()
			r.Tunnels.CloseAll() // hijacked, the server no longer tracks them
		}()
		log.FromContext(ctx).Info("serving the tunnel endpoint", "address", l.Addr().String())
		if err := server.ServeTLS(l, "", ""); !errors.Is(err, http.ErrServerClosed) {
			return err
		}
		return nil
	}})
}
