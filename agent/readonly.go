package agent

import (
	"errors"
	"fmt"
	"net/http"
	"path"
	"strings"

	"golang.org/x/net/http/httpguts"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/sets"
	apirequest "k8s.io/apiserver/pkg/endpoints/request"
	"k8s.io/klog/v2"

	"github.com/panorama-io/panorama/internal/responsewriters"
)

// The hub is trusted to read a member, nothing more: were it compromised,
// all it could do through the agent is read. So the agent forwards GETs of
// what a sync reads (discovery, the OpenAPI documents, health, the version,
// and list and watch of resources) and refuses everything else: writes,
// reads by name, subresources (exec, attach, portforward, proxy, log,
// status and the rest), upgrades to a stream, and the member's /metrics,
// /logs and /debug. The agent's RBAC grants list and watch of every
// resource and no get, which is how subresources are read: RBAC keeps
// them from the agent's token too, and this filter from the hub.

// requestInfo parses requests as kube-apiserver does, so that the verb and
// subresource the filter decides on are the ones the member will see.
var requestInfo = &apirequest.RequestInfoFactory{
	APIPrefixes:          sets.NewString("api", "apis"),
	GrouplessAPIPrefixes: sets.NewString("api"),
}

// coreSecrets are forwarded only when the agent is told to.
var coreSecrets = schema.GroupResource{Resource: "secrets"}

// readVerbs are the resource verbs forwarded: a sync lists and watches,
// and never reads one object by name, which is how subresources are read.
var readVerbs = sets.New("list", "watch")

// forwardedHeaders are the only request headers forwarded: the formats the
// hub accepts and who it is. Any other could choose the identity the
// member serves the request as (Authorization, Impersonate-*, the
// X-Remote-* of an authenticating proxy) or change how it is served; the
// agent's own transport adds its credentials, and client-go's would keep
// an Authorization already set rather than replace it.
var forwardedHeaders = []string{"Accept", "Accept-Encoding", "User-Agent"}

// ReadOnly passes next only the reads of a member a sync needs, stripped
// of every request header but forwardedHeaders and of any body; it answers
// anything else with a Status, 405 for a method other than GET and 403 for
// a path or verb, and logs the refusal. Core Secrets are among the reads
// only when secrets is true: the member's owner, not the hub, decides
// whether their data ever leaves the member.
func ReadOnly(next http.Handler, secrets bool) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if st := refusal(r, secrets); st != nil {
			requestsTotal.WithLabelValues(verdictRefused).Inc()
			klog.FromContext(r.Context()).Info("Refused a request from the hub", "method", r.Method, "path", r.URL.Path,
				"code", st.Code, "reason", st.Message)
			responsewriters.WriteStatus(w, st)
			return
		}
		requestsTotal.WithLabelValues(verdictForwarded).Inc()
		next.ServeHTTP(w, readOf(r))
	})
}

// refusal returns the Status refusing r, or nil when r may be forwarded.
func refusal(r *http.Request, secrets bool) *metav1.Status {
	if r.Method != http.MethodGet {
		return &metav1.Status{
			Status: metav1.StatusFailure, Code: http.StatusMethodNotAllowed, Reason: metav1.StatusReasonMethodNotAllowed,
			Message: fmt.Sprintf("the agent forwards only GET to the member: %s is not allowed", r.Method),
		}
	}
	if r.Header.Get("Upgrade") != "" || httpguts.HeaderValuesContainsToken(r.Header["Connection"], "upgrade") {
		return forbidden(errors.New("the agent does not upgrade connections (exec, attach, port-forward and other streams are refused)"))
	}
	// Only canonical paths: what the filter parses is then what the member
	// serves, with no "..", "." or empty segment, and no escaped "/" that
	// the two could split differently.
	if p := r.URL.Path; path.Clean(p) != p || r.URL.RawPath != "" {
		return forbidden(fmt.Errorf("the agent forwards only canonical paths, not %q", r.URL.EscapedPath()))
	}
	info, err := requestInfo.NewRequestInfo(r)
	if err != nil {
		return forbidden(fmt.Errorf("the agent does not forward %s: %v", r.URL.Path, err))
	}
	if !info.IsResourceRequest {
		if !readablePath(info.Path) {
			return forbidden(fmt.Errorf("the agent does not forward %s: only discovery, /version, /readyz, /livez, /healthz and /openapi", info.Path))
		}
		return nil
	}
	gr := schema.GroupResource{Group: info.APIGroup, Resource: info.Resource}
	switch {
	case info.Subresource != "":
		gr.Resource += "/" + info.Subresource
		return resourceForbidden(gr, info.Name, fmt.Errorf("the agent forwards no subresource (%s)", info.Subresource))
	case !readVerbs.Has(info.Verb):
		return resourceForbidden(gr, info.Name, fmt.Errorf("the agent forwards only list and watch, not %s", info.Verb))
	case gr == coreSecrets && !secrets:
		return resourceForbidden(gr, info.Name, errors.New("the agent forwards no Secrets unless started with --forward-secrets (chart value forwardSecrets)"))
	}
	return nil
}

// readablePath reports whether a non-resource path is one a sync reads:
// discovery (/api, /api/v1, /apis, /apis/<group>, /apis/<group>/<version>),
// the version, health and the OpenAPI documents.
func readablePath(p string) bool {
	switch p {
	case "/api", "/api/v1", "/apis", "/version", "/readyz", "/livez", "/healthz", "/openapi/v2", "/openapi/v3":
		return true
	}
	if strings.HasPrefix(p, "/openapi/v3/") {
		return true
	}
	parts := strings.Split(strings.TrimPrefix(p, "/"), "/")
	return parts[0] == "apis" && (len(parts) == 2 || len(parts) == 3)
}

func forbidden(err error) *metav1.Status {
	return resourceForbidden(schema.GroupResource{}, "", err)
}

func resourceForbidden(gr schema.GroupResource, name string, err error) *metav1.Status {
	st := apierrors.NewForbidden(gr, name, err).Status()
	return &st
}

// readOf returns r as forwarded: forwardedHeaders only, and no body (a
// GET's body means nothing to the member).
func readOf(r *http.Request) *http.Request {
	out := r.Clone(r.Context())
	kept := make(http.Header, len(forwardedHeaders))
	for _, h := range forwardedHeaders {
		if v := out.Header.Values(h); len(v) > 0 {
			kept[h] = v
		}
	}
	out.Header = kept
	out.Body, out.ContentLength, out.TransferEncoding, out.Trailer = http.NoBody, 0, nil, nil
	return out
}
