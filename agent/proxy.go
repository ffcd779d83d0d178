package agent

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httputil"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/client-go/rest"
	"k8s.io/klog/v2"

	"github.com/panorama-io/panorama/internal/responsewriters"
)

// NewProxy returns a reverse proxy to the member's API server that sends
// each request with the agent's own credentials and TLS settings (in a
// pod, its ServiceAccount's token, re-read as it rotates, and the
// cluster's CA), so that the member's certificate is verified and the
// agent's RBAC bounds what it serves. Put it behind ReadOnly, which drops
// the hub's credentials and anything but reads.
func NewProxy(member *rest.Config) (http.Handler, error) {
	target, _, err := rest.DefaultServerUrlFor(member)
	if err != nil {
		return nil, fmt.Errorf("the member's address: %w", err)
	}
	transport, err := rest.TransportFor(member)
	if err != nil {
		return nil, fmt.Errorf("the member's transport: %w", err)
	}
	return &httputil.ReverseProxy{
		// Rewrite, unlike Director, adds no X-Forwarded-* header.
		Rewrite:   func(r *httputil.ProxyRequest) { r.SetURL(target) },
		Transport: transport,
		// A watch's events reach the hub as the member sends them.
		FlushInterval: -1,
		ErrorHandler:  proxyError,
	}, nil
}

// proxyError answers a request the member could not be asked or did not
// answer with a Status: 503, as kube-apiserver's own proxy answers when it
// cannot reach where it forwards to.
func proxyError(w http.ResponseWriter, r *http.Request, err error) {
	if errors.Is(err, context.Canceled) {
		return // the hub went away: no one reads the answer
	}
	klog.FromContext(r.Context()).Error(err, "Forwarding a request to the member failed", "path", r.URL.Path)
	st := apierrors.NewServiceUnavailable("the agent could not reach the member's API server: " + err.Error()).Status()
	responsewriters.WriteStatus(w, &st)
}
