package tunnel

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"

	"github.com/coder/websocket"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Audience is the audience of the tokens that open tunnels: a token minted
// for it is no use against the host's API server, and the host's other
// tokens are no use here.
const Audience = "panorama.io/tunnel"

// pathPrefix is followed by the Cluster's name in a tunnel's URL.
const pathPrefix = "/tunnel/v1/clusters/"

// subprotocol is the WebSocket subprotocol of a tunnel: yamux in binary
// messages.
const subprotocol = "yamux.tunnel.panorama.io"

// URL is the address of cluster's tunnel on the hub whose tunnel endpoint
// is hub (https://host:port).
func URL(hub, cluster string) string {
	return strings.TrimRight(hub, "/") + pathPrefix + url.PathEscape(cluster)
}

// RefusedError is the hub's refusal of a tunnel: Code 401 for a token it
// does not accept, 403 for one not bound to the Cluster, 503 when another
// replica syncs the Cluster.
type RefusedError struct {
	Code    int
	Message string
}

func (e *RefusedError) Error() string {
	return fmt.Sprintf("hub refused the tunnel (%d): %s", e.Code, e.Message)
}

// Connect opens a tunnel at url (URL) presenting token, and verifies the
// hub's certificate against rootCAs (nil: the system's roots). The
// listener accepts the hub's connections until the tunnel drops, when
// Accept fails; closing it closes the tunnel.
func Connect(ctx context.Context, url, token string, rootCAs *x509.CertPool) (net.Listener, error) {
	transport := http.DefaultTransport.(*http.Transport).Clone()
	transport.TLSClientConfig = &tls.Config{RootCAs: rootCAs, MinVersion: tls.VersionTLS12}
	conn, resp, err := websocket.Dial(ctx, url, &websocket.DialOptions{
		// A redirect, even to the same host, could carry the token to a
		// plain-HTTP endpoint: the hub never redirects.
		HTTPClient: &http.Client{Transport: transport, CheckRedirect: func(*http.Request, []*http.Request) error {
			return http.ErrUseLastResponse
		}},
		HTTPHeader:   http.Header{"Authorization": {"Bearer " + token}},
		Subprotocols: []string{subprotocol},
	})
	if err != nil {
		if resp != nil && resp.StatusCode != http.StatusSwitchingProtocols {
			return nil, refusal(resp)
		}
		return nil, err
	}
	if conn.Subprotocol() != subprotocol {
		conn.Close(websocket.StatusProtocolError, "unknown subprotocol")
		return nil, fmt.Errorf("hub at %s speaks no tunnel subprotocol", url)
	}
	return newSession(ctx, conn, false)
}

// refusal reads the Status of a hub's refusal.
func refusal(resp *http.Response) error {
	e := &RefusedError{Code: resp.StatusCode, Message: http.StatusText(resp.StatusCode)}
	if resp.Body == nil {
		return e
	}
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 1024))
	var status metav1.Status
	if json.Unmarshal(body, &status) == nil && status.Message != "" {
		e.Message = status.Message
	}
	return e
}
