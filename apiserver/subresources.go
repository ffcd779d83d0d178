package apiserver

import (
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/remotecommand"
	apirequest "k8s.io/apiserver/pkg/endpoints/request"
	"k8s.io/streaming/pkg/httpstream/wsstream"

	"github.com/panorama-io/panorama/internal/responsewriters"
	"github.com/panorama-io/panorama/storage"
)

// Panorama holds synced objects, not what runs in the members: it has no
// logs, no containers to exec or attach to, no ports or endpoints to
// forward or proxy to, and it serves objects whole, without subresources.
// Asking for one answers at once 405 MethodNotAllowed with a Status saying
// where to go instead. A 404 would say the pod is gone, which clients wait
// out (k9s shows "Waiting for logs..." and asks again); client-go retries
// neither (it retries only 429 and 5xx with Retry-After), and kubectl
// prints the message: "Error from server (MethodNotAllowed): ...". 405 is
// also what Panorama answers writes with.

// memberOnly says, for each subresource only the member can serve, what
// Panorama cannot do and the kubectl command that does it there (%[1]s the
// namespace flag, %[2]s the resource, %[3]s the name, %[4]s the path of the
// object).
var memberOnly = map[string]struct{ cannot, command string }{
	"log":         {"holds no logs", "logs%[1]s %[2]s/%[3]s"},
	"exec":        {"cannot run commands in containers", "exec%[1]s %[2]s/%[3]s -- <command>"},
	"attach":      {"cannot attach to containers", "attach%[1]s %[2]s/%[3]s"},
	"portforward": {"cannot forward ports", "port-forward%[1]s %[2]s/%[3]s <port>"},
	"proxy":       {"cannot proxy to pods, services or nodes", "get --raw %[4]s/proxy/"},
}

// refuseSubresource answers a request for a subresource of a resource the
// view serves, info in member terms of cluster, to users who may read
// that resource there; other requests are refused as any path the view
// does not serve, so that users who may not read learn nothing new.
func (h *Handler) refuseSubresource(w http.ResponseWriter, req *request, cluster string, info *apirequest.RequestInfo) {
	if !h.mayRefuseSubresource(req.r, cluster, info) {
		if !req.reads() {
			refuseMethod(w, req)
			return
		}
		serveNotFound(w, req)
		return
	}
	gvr := schema.GroupVersionResource{Group: info.APIGroup, Version: info.APIVersion, Resource: info.Resource}
	r := req.r
	st := &metav1.Status{
		Status: metav1.StatusFailure, Code: http.StatusMethodNotAllowed, Reason: metav1.StatusReasonMethodNotAllowed,
		Message: subresourceMessage(cluster, info),
		Details: &metav1.StatusDetails{Group: gvr.Group, Kind: info.Resource, Name: info.Name},
	}
	if (info.Subresource == "exec" || info.Subresource == "attach") && refuseOverWebSocket(w, r, st) {
		return
	}
	responsewriters.WriteStatus(w, st)
}

// mayRefuseSubresource reports whether the view serves the resource of a
// subresource and the user may read it there.
func (h *Handler) mayRefuseSubresource(r *http.Request, cluster string, info *apirequest.RequestInfo) bool {
	gvr := schema.GroupVersionResource{Group: info.APIGroup, Version: info.APIVersion, Resource: info.Resource}
	if _, ok := h.registry.Lookup(cluster, gvr); !ok {
		return false
	}
	var clusters []string // every cluster, for the view across clusters
	if cluster != "" {
		clusters = []string{cluster}
	}
	ok, _ := h.allowedInAny(r.Context(), "get", memberResource(gvr.GroupResource()), clusters, info.Namespace)
	return ok
}

// refuseOverWebSocket answers a WebSocket exec or attach (kubectl's first
// try) as kubelet answers a command that cannot start: the upgrade
// succeeds and the Status comes on the error channel. A refused upgrade
// would make kubectl fall back to SPDY, a POST that the host authorizes as
// create, which read-only users are denied before Panorama can say why.
// It reports false for clients that do not speak v5 of the protocol.
func refuseOverWebSocket(w http.ResponseWriter, r *http.Request, st *metav1.Status) bool {
	if !wsstream.IsWebSocketRequest(r) || !slices.ContainsFunc(r.Header.Values("Sec-WebSocket-Protocol"), func(v string) bool {
		return slices.Contains(strings.Split(strings.ReplaceAll(v, " ", ""), ","), remotecommand.StreamProtocolV5Name)
	}) {
		return false
	}
	channels := make([]wsstream.ChannelType, remotecommand.StreamResize+1) // all ignored but errors
	channels[remotecommand.StreamErr] = wsstream.WriteChannel
	conn := wsstream.NewConn(map[string]wsstream.ChannelProtocolConfig{
		remotecommand.StreamProtocolV5Name: {Binary: true, Channels: channels},
	})
	_, streams, err := conn.Open(w, r)
	if err != nil {
		return true // the handshake failed and was answered
	}
	defer func() { _ = conn.Close() }()
	data, err := json.Marshal(st)
	if err != nil {
		return true
	}
	conn.SetWriteDeadline(10 * time.Second)
	_, _ = streams[remotecommand.StreamErr].Write(data)
	return true
}

// subresourceMessage says why Panorama cannot answer and what to run
// instead, against which cluster.
func subresourceMessage(cluster string, info *apirequest.RequestInfo) string {
	where, context := fmt.Sprintf("cluster %q", cluster), "<context of "+cluster+">"
	if cluster == "" {
		where = "the member cluster its " + storage.ClusterAnnotation + " annotation names"
		context = "<context of that cluster>"
	}
	m, ok := memberOnly[info.Subresource]
	if !ok {
		return fmt.Sprintf("Panorama serves %s as whole synced objects, without their %q subresource: read the object itself, or ask %s directly",
			info.Resource, info.Subresource, where)
	}
	var ns string
	if info.Namespace != "" {
		ns = " -n " + info.Namespace
	}
	path, _, _ := strings.Cut(info.Path, "/"+info.Subresource)
	return fmt.Sprintf("Panorama only syncs objects and %s; ask %s directly: kubectl --context %s %s",
		m.cannot, where, context, fmt.Sprintf(m.command, ns, info.Resource, info.Name, path))
}
