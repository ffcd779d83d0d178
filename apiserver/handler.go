package apiserver

import (
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apiserver/pkg/authorization/authorizer"
	apirequest "k8s.io/apiserver/pkg/endpoints/request"

	searchv1alpha1 "github.com/panorama-io/panorama/apis/search/v1alpha1"
	"github.com/panorama-io/panorama/apiserver/watchcache"
	"github.com/panorama-io/panorama/storage"
)

// ResourcesPrefix is the deprecated prefix of the views (see ViewsPrefix of search/v1alpha1):
// across all clusters, and ResourcesPrefix + "/clusters/{name}" for one.
var ResourcesPrefix = "/apis/" + searchv1alpha1.SchemeGroupVersion.String() + "/resources"

// Default and longest watch durations, as kube-apiserver's.
const (
	defaultWatchTimeout = 30 * time.Minute
	bookmarkInterval    = 10 * time.Second
	tableContentType    = "application/json;as=Table;v=v1;g=meta.k8s.io"
)

// Handler serves the views' paths.
type Handler struct {
	registry *Registry
	store    storage.Reader
	cache    *watchcache.Cache
	crds     crdColumns
	// authz decides every member read as --authorization-mode composes it
	// (hostauthz): the host's RBAC in process, the host asked, or both.
	authz   authorizer.Authorizer
	openAPI openAPICache // openapi.go
}

// reads reads objects from the watch cache or the store, whichever may
// answer (watchcache.Reads).
func (h *Handler) reads() *watchcache.Reads { return watchcache.NewReads(h.store, h.cache) }

func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	req, ok := h.resolve(withCheckBudget(r)) // authz.go: the bound on checks
	if !ok {
		writeError(w, r, notFound(), schema.GroupResource{})
		return
	}
	warnDeprecatedPath(w, r.URL.Path, req.cluster, req.rest)
	h.route(req)(w, req)
}

// route is the handler of req. Under every view: /version (version.go),
// /openapi/v3 (openapi.go), the search page /ui (ui.go), self reviews
// (selfreview.go), the history and other subresources of an object
// (history.go, subresources.go),
// discovery (discovery.go), then get, list (and its counts) and watch of
// the resources the view serves.
func (h *Handler) route(req *request) func(http.ResponseWriter, *request) {
	switch {
	case req.reads() && isVersion(req.rest):
		return h.serveVersion
	case req.reads() && isOpenAPI(req.rest):
		return h.serveOpenAPI
	case req.reads() && isUI(req.rest):
		return serveUI // ui.go
	case isReview(req):
		return h.serveReview
	case req.isResource() && req.info.Subresource != "":
		return h.serveSubresource
	case !req.reads():
		return refuseMethod
	case isDiscovery(req.rest):
		return h.serveDiscovery
	case !req.isResource():
		return serveNotFound
	case !req.found || (!req.res.Namespaced && req.namespace != ""):
		return h.refuseUnserved
	}
	switch req.info.Verb {
	case "get":
		return timedRead(h.get)
	case "list":
		return timedRead(h.list)
	case "watch":
		return h.watch
	}
	return refuseMethod
}

// timedRead measures the reads of serve (metrics.go).
func timedRead(serve func(http.ResponseWriter, *request)) func(http.ResponseWriter, *request) {
	return func(w http.ResponseWriter, req *request) {
		timed(w, req.info.Verb, req.res.GVR.GroupResource(), func(w http.ResponseWriter) { serve(w, req) })
	}
}

// serveSubresource answers the history of an object or refuses its other
// subresources, in member terms.
func (h *Handler) serveSubresource(w http.ResponseWriter, req *request) {
	cluster, info := req.view.object(req.info)
	if info.Subresource == historySubresource && info.Name != "" && req.reads() {
		h.serveHistory(w, req, cluster, info)
		return
	}
	h.refuseSubresource(w, req, cluster, info)
}

// refuseMethod answers what a view does not serve, a write: 405.
func refuseMethod(w http.ResponseWriter, req *request) {
	gr, verb := schema.GroupResource{}, strings.ToLower(req.r.Method)
	if req.info != nil {
		gr, verb = schema.GroupResource{Group: req.info.APIGroup, Resource: req.info.Resource}, req.info.Verb
	}
	writeError(w, req.r, apierrors.NewMethodNotSupported(gr, verb), gr)
}

// serveNotFound answers a path the view does not serve.
func serveNotFound(w http.ResponseWriter, req *request) {
	writeError(w, req.r, notFound(), schema.GroupResource{})
}

// refuseUnserved answers a resource the view does not serve: 404, but
// Forbidden first, as restrict would answer, so that 404 tells only who
// may read there that a cluster or a type does not exist.
func (h *Handler) refuseUnserved(w http.ResponseWriter, req *request) {
	gr := req.gvr().GroupResource()
	if req.cluster != "" {
		if err := h.authorizeIn(req.r.Context(), req.info.Verb, gr, req.cluster, req.namespace); err != nil {
			writeError(w, req.r, err, gr)
			return
		}
	}
	writeError(w, req.r, notFound(), gr)
}

func notFound() error {
	return &apierrors.StatusError{ErrStatus: metav1.Status{
		Status: metav1.StatusFailure, Code: http.StatusNotFound, Reason: metav1.StatusReasonNotFound,
		Message: "the server could not find the requested resource",
	}}
}

// isNamespaceObject reports whether info is of a Namespace itself
// (.../namespaces/{name}): RequestInfo takes that name as the request's
// namespace too, as kube's RBAC wants it (a RoleBinding may grant reading
// its own Namespace), but the object lives in no namespace.
func isNamespaceObject(info *apirequest.RequestInfo) bool {
	return info.Resource == "namespaces" && info.Name == info.Namespace
}

func warn(w http.ResponseWriter, msg string) {
	w.Header().Add("Warning", "299 - "+strconv.Quote(msg))
}

// warnNotReady warns about the clusters a request names that are not ready.
func (h *Handler) warnNotReady(w http.ResponseWriter, clusters []string) {
	notReady := h.registry.NotReady()
	for _, c := range clusters {
		if msg, ok := notReady[c]; ok {
			warn(w, notReadyMessage(c, msg))
		}
	}
}

func notReadyMessage(cluster, msg string) string {
	return fmt.Sprintf("cluster %q is not ready, its objects may be stale: %s", cluster, msg)
}
