package tunnel

import (
	"context"
	"time"

	"github.com/coder/websocket"
	"github.com/hashicorp/yamux"
	"k8s.io/klog/v2"
)

// Keepalive pings tell either end of a tunnel that the other is gone
// within keepAliveInterval plus connectionWriteTimeout, so the Cluster is
// reported not Ready, and the agent reconnects, that soon.
const (
	keepAliveInterval      = 10 * time.Second
	connectionWriteTimeout = 10 * time.Second
)

// streamWindow is the most a stream may have in flight unacknowledged: a
// page of a list crosses a high-latency link in a few round trips rather
// than in yamux's default of 256 KiB per trip.
const streamWindow = 1 << 20

// newSession runs yamux over conn: the hub as its client, which opens
// streams, the agent as its server, which accepts them.
func newSession(ctx context.Context, conn *websocket.Conn, hub bool) (*yamux.Session, error) {
	cfg := yamux.DefaultConfig()
	cfg.KeepAliveInterval = keepAliveInterval
	cfg.ConnectionWriteTimeout = connectionWriteTimeout
	cfg.MaxStreamWindowSize = streamWindow
	cfg.LogOutput, cfg.Logger = nil, yamuxLogger{}
	nc := websocket.NetConn(ctx, conn, websocket.MessageBinary)
	if hub {
		return yamux.Client(nc, cfg)
	}
	return yamux.Server(nc, cfg)
}

// yamuxLogger logs yamux's errors (a keepalive that failed, a stream
// reset) at a verbosity that shows them when debugging a tunnel.
type yamuxLogger struct{}

func (yamuxLogger) Print(v ...any)                 { klog.V(2).Info(v...) }
func (yamuxLogger) Printf(format string, v ...any) { klog.V(2).Infof(format, v...) }
func (yamuxLogger) Println(v ...any)               { klog.V(2).Info(v...) }
