package apiserver

import (
	"net/http"
	"net/url"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/sets"
	apirequest "k8s.io/apiserver/pkg/endpoints/request"

	"github.com/panorama-io/panorama/storage"
)

// memberInfoResolver parses the member-style path under a view's prefix.
var memberInfoResolver apirequest.RequestInfoResolver = &apirequest.RequestInfoFactory{
	APIPrefixes:          sets.NewString("api", "apis"),
	GrouplessAPIPrefixes: sets.NewString("api"),
}

// request is one request of a view, its path parsed once: every handler
// of the view's paths takes it.
type request struct {
	r    *http.Request
	view view
	// cluster is the view's: the one it reads, "" for every cluster.
	cluster string
	// rest is the member-style path under the view's prefix.
	rest string
	// info is rest as a member request, nil where it parses as none.
	info *apirequest.RequestInfo
	// res is the resource info names, found when the view serves it;
	// namespace is info's, "" for a cluster-scoped object.
	res       storage.Resource
	found     bool
	namespace string
}

// resolve parses the path of r, under a view's prefix or the deprecated
// one; false when it is under neither.
func (h *Handler) resolve(r *http.Request) (*request, bool) {
	cluster, rest, ok := splitPath(r.URL.Path)
	if !ok {
		return nil, false
	}
	req := &request{r: r, view: h.viewOf(cluster), rest: rest}
	req.cluster = req.view.cluster()
	if info, err := memberRequestInfo(r, rest); err == nil {
		req.info = info
	}
	if req.isResource() {
		req.res, req.found = h.registry.Lookup(req.cluster, req.gvr())
		req.namespace = req.info.Namespace
		if req.found && !req.res.Namespaced && isNamespaceObject(req.info) {
			req.namespace = ""
		}
	}
	return req, true
}

// splitPath takes a view's prefix off path (ViewPath's, or the deprecated
// ResourcesPrefix's): the cluster ("" for all) and the member-style rest
// ("/api/v1/pods").
func splitPath(path string) (cluster, rest string, ok bool) {
	if cluster, rest, ok = splitView(path); ok {
		return cluster, rest, true
	}
	return splitDeprecatedPath(path)
}

// memberRequestInfo parses the member-style part of a request.
func memberRequestInfo(r *http.Request, rest string) (*apirequest.RequestInfo, error) {
	inner := r.Clone(r.Context())
	inner.URL = &url.URL{Path: rest, RawQuery: r.URL.RawQuery}
	return memberInfoResolver.NewRequestInfo(inner)
}

// isResource reports whether the request is of a member resource.
func (req *request) isResource() bool { return req.info != nil && req.info.IsResourceRequest }

// gvr is the member resource the request names.
func (req *request) gvr() schema.GroupVersionResource {
	return schema.GroupVersionResource{Group: req.info.APIGroup, Version: req.info.APIVersion, Resource: req.info.Resource}
}

// reads reports whether the request is a read (GET or HEAD), the only
// requests a view serves but self reviews.
func (req *request) reads() bool {
	return req.r.Method == http.MethodGet || req.r.Method == http.MethodHead
}

// user is the name of the request's user, "" when unknown.
func (req *request) user() string {
	if u, ok := apirequest.UserFrom(req.r.Context()); ok {
		return u.GetName()
	}
	return ""
}
