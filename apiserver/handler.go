package apiserver

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/apiserver/pkg/authorization/authorizer"
	apirequest "k8s.io/apiserver/pkg/endpoints/request"
	utilflowcontrol "k8s.io/apiserver/pkg/util/flowcontrol"

	searchv1alpha1 "github.com/panorama-io/panorama/apis/search/v1alpha1"
	"github.com/panorama-io/panorama/apiserver/watchcache"
	"github.com/panorama-io/panorama/storage"
)

// ResourcesPrefix is the deprecated prefix of the views (see ViewsPrefix):
// across all clusters, and ResourcesPrefix + "/clusters/{name}" for one.
var ResourcesPrefix = "/apis/" + searchv1alpha1.SchemeGroupVersion.String() + "/resources"

// Default and longest watch durations, as kube-apiserver's.
const (
	defaultWatchTimeout = 30 * time.Minute
	bookmarkInterval    = 10 * time.Second
	tableContentType    = "application/json;as=Table;v=v1;g=meta.k8s.io"
)

// memberInfoFactory parses the member-style path under the prefix.
var memberInfoFactory = &apirequest.RequestInfoFactory{
	APIPrefixes:          sets.NewString("api", "apis"),
	GrouplessAPIPrefixes: sets.NewString("api"),
}

// Handler serves the resources path.
type Handler struct {
	registry *Registry
	store    storage.Interface
	cache    *watchcache.Cache
	crds     crdColumns
	// authz is the host's delegated authorizer, asked for every member read.
	authz   authorizer.Authorizer
	openAPI openAPICache // openapi.go
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
	return memberInfoFactory.NewRequestInfo(inner)
}

func notFound() error {
	return &apierrors.StatusError{ErrStatus: metav1.Status{
		Status: metav1.StatusFailure, Code: http.StatusNotFound, Reason: metav1.StatusReasonNotFound,
		Message: "the server could not find the requested resource",
	}}
}

func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	r = withCheckBudget(r) // authz.go
	cluster, rest, ok := splitPath(r.URL.Path)
	if !ok {
		writeError(w, notFound(), schema.GroupResource{})
		return
	}
	warnDeprecatedPath(w, r.URL.Path, cluster, rest)
	if cluster == FlatClusters { // flatview.go: across clusters, names translated
		r, cluster = withFlatView(r, h.registry.Names()), ""
	}
	if h.serveVersion(w, r, cluster, rest) || h.serveOpenAPI(w, r, cluster, rest) || h.serveReview(w, r, cluster, rest) {
		return // under every view: /version (version.go), /openapi/v3 (openapi.go) and self reviews (selfreview.go)
	}
	if h.serveHistory(w, r, cluster, rest) || h.refuseSubresource(w, r, cluster, rest) { // history.go, subresources.go
		return
	}
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		info, _ := memberRequestInfo(r, rest)
		gr := schema.GroupResource{}
		verb := strings.ToLower(r.Method)
		if info != nil {
			gr, verb = schema.GroupResource{Group: info.APIGroup, Resource: info.Resource}, info.Verb
		}
		writeError(w, apierrors.NewMethodNotSupported(gr, verb), gr)
		return
	}
	if cluster != "" && isDiscovery(rest) {
		// Only users who may see a cluster learn it exists.
		if !h.seesCluster(r, cluster) {
			writeError(w, clusterNotFound(cluster), schema.GroupResource{})
			return
		}
		if _, ready, message := h.registry.Cluster(cluster); !ready {
			warn(w, fmt.Sprintf("cluster %q is not ready, its objects may be stale: %s", cluster, message))
		}
	}
	if h.serveDiscovery(w, r, cluster, rest) {
		return
	}
	info, err := memberRequestInfo(r, rest)
	if err != nil || !info.IsResourceRequest || info.Subresource != "" {
		writeError(w, notFound(), schema.GroupResource{})
		return
	}
	gvr := schema.GroupVersionResource{Group: info.APIGroup, Version: info.APIVersion, Resource: info.Resource}
	res, ok := h.registry.Lookup(cluster, gvr)
	namespace := info.Namespace
	if ok && !res.Namespaced && isNamespaceObject(info) {
		namespace = ""
	}
	if !ok || (!res.Namespaced && namespace != "") {
		// Forbidden first, as restrict would answer, so that 404 tells
		// only who may read there that a cluster or a type does not exist.
		if cluster != "" {
			if err := h.authorizeIn(r.Context(), info.Verb, gvr.GroupResource(), cluster, namespace); err != nil {
				writeError(w, err, gvr.GroupResource())
				return
			}
		}
		writeError(w, notFound(), gvr.GroupResource())
		return
	}
	switch info.Verb {
	case "get":
		timed(w, info.Verb, res.GVR.GroupResource(), func(w http.ResponseWriter) { h.get(w, r, res, cluster, namespace, info.Name) })
	case "list":
		timed(w, info.Verb, res.GVR.GroupResource(), func(w http.ResponseWriter) { h.list(w, r, res, cluster, namespace) })
	case "watch":
		defer watchOpened(res.GVR.GroupResource())()
		h.watch(w, r, res, cluster, namespace)
	default:
		writeError(w, apierrors.NewMethodNotSupported(gvr.GroupResource(), info.Verb), gvr.GroupResource())
	}
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
			warn(w, fmt.Sprintf("cluster %q is not ready, its objects may be stale: %s", c, msg))
		}
	}
}

func wantsTable(r *http.Request) bool {
	return strings.Contains(r.Header.Get("Accept"), "as=Table")
}

func (h *Handler) get(w http.ResponseWriter, r *http.Request, res storage.Resource, cluster, namespace, name string) {
	gr := res.GVR.GroupResource()
	q := storage.ListQuery{GVR: res.GVR, Names: []string{name}}
	if cluster != "" {
		q.Clusters = []string{cluster}
	}
	if namespace != "" {
		q.Namespaces = []string{namespace}
	}
	if err := flatOf(r).query(&q, res.Namespaced); err != nil {
		writeError(w, err, gr)
		return
	}
	if err := h.restrict(w, r, "get", gr, &q); err != nil {
		writeError(w, err, gr)
		return
	}
	if !h.onlySyncedCRDs(&q) { // crds.go
		writeError(w, apierrors.NewNotFound(gr, name), gr)
		return
	}
	h.warnNotReady(w, q.Clusters)
	var objs []storage.Object
	if cluster != "" {
		o, err := h.store.Get(r.Context(), storage.Key{Cluster: cluster, GVR: res.GVR, Namespace: namespace, Name: name})
		if err != nil {
			if err == storage.ErrNotFound {
				err = apierrors.NewNotFound(gr, name)
			}
			writeError(w, err, gr)
			return
		}
		objs = []storage.Object{*o}
	} else {
		page, err := h.store.List(r.Context(), &q)
		if err == nil {
			err = flatOf(r).page(page)
		}
		if err != nil {
			writeError(w, err, gr)
			return
		}
		if len(page.Objects) == 0 {
			writeError(w, apierrors.NewNotFound(gr, name), gr)
			return
		}
		objs = page.Objects
	}
	if wantsTable(r) {
		h.writeTable(w, r, res.GVR, cluster, objs, metav1.ListMeta{})
		return
	}
	if len(objs) > 1 {
		var clusters []string
		for _, o := range objs {
			clusters = append(clusters, o.Cluster)
		}
		warn(w, fmt.Sprintf("%s %q exists in %d clusters (%s); this is the one of %s, ask %s/... for another",
			gr, name, len(objs), strings.Join(clusters, ", "), objs[0].Cluster, ViewPath("<name>")))
	}
	f := formatOf(r, res, false)
	data, err := f.item(objs[0].Data)
	if err != nil {
		writeError(w, err, gr)
		return
	}
	w.Header().Set("Content-Type", f.objectType)
	_, _ = w.Write(data)
}

// parse parses a list or watch, restricts it to what the user may read,
// answering the error itself when either fails, and warns about the
// clusters it reads that are not ready.
func (h *Handler) parse(w http.ResponseWriter, r *http.Request, res storage.Resource, cluster, namespace string, watch bool) (*request, bool) {
	req, err := parseRequest(r.URL.Query(), res.GVR, cluster, namespace, watch)
	if err == nil {
		err = flatOf(r).query(&req.query, res.Namespaced)
	}
	if err == nil {
		err = h.validateFields(r.Context(), &req.query)
	}
	if err == nil {
		verb := "list"
		if watch {
			verb = "watch"
		}
		err = h.restrict(w, r, verb, res.GVR.GroupResource(), &req.query)
	}
	if err == nil {
		h.onlySyncedCRDs(&req.query) // crds.go; nothing left lists nothing
	}
	if err != nil {
		writeError(w, err, res.GVR.GroupResource())
		return nil, false
	}
	h.warnNotReady(w, req.query.Clusters)
	return req, true
}

// validateFields refuses field selectors on fields the store does not
// index, before the watch cache, which cannot tell, serves them.
func (h *Handler) validateFields(ctx context.Context, q *storage.ListQuery) error {
	fs, err := h.store.Fields(ctx)
	if err != nil {
		return err
	}
	return q.ValidateFields(fs)
}

func (h *Handler) list(w http.ResponseWriter, r *http.Request, res storage.Resource, cluster, namespace string) {
	gr := res.GVR.GroupResource()
	req, ok := h.parse(w, r, res, cluster, namespace, false)
	if !ok {
		return
	}
	if len(req.groupBy) > 0 {
		h.count(w, r, res, req) // counts.go
		return
	}
	var err error
	var page *storage.ListResult
	switch {
	case req.version.fromCache(&req.query):
		// limit is ignored here, as kube-apiserver 1.37 ignores it for
		// resourceVersion=0 lists its watch cache serves (cacher's
		// computeListLimit): the whole selection, without continue.
		objs, rev, err := h.cache.List(r.Context(), &req.query)
		if err != nil {
			writeError(w, err, gr)
			return
		}
		page = &storage.ListResult{Objects: objs, Revision: rev}
	default:
		if err := h.resolveAsOf(r.Context(), req); err != nil {
			writeError(w, err, gr)
			return
		}
		if err := req.version.checkStore(r.Context(), h.store); err != nil {
			writeError(w, err, gr)
			return
		}
		if page, err = h.listPage(r.Context(), &req.query, req.asOf != nil); err != nil {
			if storage.IsTooOld(err) && req.query.Continue != "" {
				err = apierrors.NewResourceExpired("The provided continue parameter is too old to display a consistent list result. You can start a new list without the continue parameter.")
			}
			writeError(w, err, gr)
			return
		}
	}
	if err := flatOf(r).page(page); err != nil {
		writeError(w, err, gr)
		return
	}
	listMeta := metav1.ListMeta{ResourceVersion: strconv.FormatInt(page.Revision, 10), Continue: page.Continue, RemainingItemCount: page.RemainingCount}
	if wantsTable(r) {
		h.writeTable(w, r, res.GVR, cluster, page.Objects, listMeta)
		return
	}
	f := formatOf(r, res, req.onlyMetadata)
	streamList(w, f.listType, &listEnvelope{Kind: f.listKind, APIVersion: f.apiVersion, Metadata: listMeta, Items: []json.RawMessage{}},
		len(page.Objects), func(i int) ([]byte, error) { return f.item(page.Objects[i].Data) })
}

// listPage reads a page of q from the watch cache when it can answer it
// (Cache.Page), else from the store; the pages of one list may come from
// either, their continue tokens being the same. The cache answers as
// kube-apiserver 1.37 answers consistent lists from its own: it waits
// until it has applied the store's latest revision, read with one
// primary-key read, and answers at its revision then. A page that
// continues a list at a revision the cache has applied needs no such read
// (Cache.ReadPage). Lists as of a past time (asOf) are the store's.
func (h *Handler) listPage(ctx context.Context, q *storage.ListQuery, asOf bool) (*storage.ListResult, error) {
	if !asOf && watchcache.Pageable(q) {
		page, ok, err := h.cache.ReadPage(ctx, q, func(ctx context.Context) (int64, int64, bool, error) {
			cur, compacted, err := latestRevision(ctx, h.store)
			if err != nil {
				return 0, 0, false, err
			}
			return cur, compacted, cacheMayServe(ctx, h.store, h.cache, cur), nil
		})
		if ok || err != nil {
			return page, err
		}
	}
	return h.store.List(ctx, q)
}

// format is how objects are written: as they are, as metadata only
// (onlyMetadata), or as meta.k8s.io PartialObjectMetadata, which metadata
// informers ask for with "Accept: ...;as=PartialObjectMetadataList".
type format struct {
	kind, listKind, apiVersion string
	objectType, listType       string
	keep                       func(obj map[string]json.RawMessage) map[string]json.RawMessage
}

const partialMetadataType = "application/json;as=PartialObjectMetadata;v=v1;g=meta.k8s.io"

func formatOf(r *http.Request, res storage.Resource, onlyMetadata bool) format {
	if strings.Contains(r.Header.Get("Accept"), "as=PartialObjectMetadata") {
		return format{
			kind: "PartialObjectMetadata", listKind: "PartialObjectMetadataList", apiVersion: "meta.k8s.io/v1",
			objectType: partialMetadataType, listType: partialMetadataType + "List",
			keep: func(obj map[string]json.RawMessage) map[string]json.RawMessage {
				return map[string]json.RawMessage{"apiVersion": json.RawMessage(`"meta.k8s.io/v1"`),
					"kind": json.RawMessage(`"PartialObjectMetadata"`), "metadata": obj["metadata"]}
			},
		}
	}
	f := format{kind: res.Kind, listKind: res.Kind + "List", apiVersion: res.GVR.GroupVersion().String(),
		objectType: "application/json", listType: "application/json"}
	if onlyMetadata {
		f.keep = func(obj map[string]json.RawMessage) map[string]json.RawMessage {
			return map[string]json.RawMessage{"apiVersion": obj["apiVersion"], "kind": obj["kind"], "metadata": obj["metadata"]}
		}
	}
	return f
}

// item is an object's JSON in this format.
func (f format) item(data []byte) ([]byte, error) {
	if f.keep == nil {
		return data, nil
	}
	var obj map[string]json.RawMessage
	if err := json.Unmarshal(data, &obj); err != nil {
		return nil, err
	}
	return json.Marshal(f.keep(obj))
}

func (h *Handler) writeTable(w http.ResponseWriter, r *http.Request, gvr schema.GroupVersionResource, cluster string, objs []storage.Object, listMeta metav1.ListMeta) {
	cols := h.columnsFor(r.Context(), gvr, cluster)
	includeObject := r.URL.Query().Get("includeObject")
	t := tableHead(cols, true)
	t.ListMeta = listMeta
	streamList(w, tableContentType, t, len(objs), func(i int) ([]byte, error) {
		row, err := tableRow(cols, objs[i].Data, includeObject)
		if err != nil {
			return nil, err
		}
		return json.Marshal(row)
	})
}

func (h *Handler) watch(w http.ResponseWriter, r *http.Request, res storage.Resource, cluster, namespace string) {
	gr := res.GVR.GroupResource()
	req, ok := h.parse(w, r, res, cluster, namespace, true)
	if !ok {
		return
	}
	timeout := req.timeout
	if timeout <= 0 || timeout > defaultWatchTimeout {
		timeout = defaultWatchTimeout
	}
	ctx, cancel := context.WithTimeout(r.Context(), timeout)
	defer cancel()
	var userName string
	if u, ok := apirequest.UserFrom(ctx); ok {
		userName = u.GetName()
	}
	watcher, err := h.cache.Watch(ctx, &req.query, watchcache.WatchOptions{
		ResourceVersion: req.version.rev, SendInitialEvents: req.version.sendInitialEvents,
		Bookmarks: req.allowBookmarks, BookmarkInterval: bookmarkInterval, User: userName,
	})
	// The watch is set up: API Priority and Fairness takes back its seat,
	// which it would otherwise hold for as long as the watch runs.
	utilflowcontrol.WatchInitialized(ctx)
	var tooMany *watchcache.TooManyWatchesError
	if errors.As(err, &tooMany) {
		// Refused before the stream starts, as kube-apiserver's in-flight
		// limits refuse a request: 429 with Retry-After.
		writeError(w, err, gr)
		return
	}
	asTable := wantsTable(r)
	f := formatOf(r, res, req.onlyMetadata)
	contentType := f.objectType
	if asTable {
		contentType = tableContentType
	}
	w.Header().Set("Content-Type", contentType)
	flusher, _ := w.(http.Flusher)
	enc := json.NewEncoder(w)
	send := func(typ watch.EventType, object any) bool {
		if err := enc.Encode(struct {
			Type   watch.EventType `json:"type"`
			Object any             `json:"object"`
		}{typ, object}); err != nil {
			return false
		}
		if flusher != nil {
			flusher.Flush()
		}
		return true
	}

	if err != nil {
		// As kube-apiserver's watch cache: the error is an event of the
		// stream, a 504 "Too large resource version" for a resourceVersion
		// the cache did not reach in time.
		w.WriteHeader(http.StatusOK)
		st := toStatus(err, gr).Status()
		st.Kind, st.APIVersion = "Status", "v1"
		send(watch.Error, st)
		return
	}
	defer watcher.Stop()
	w.WriteHeader(http.StatusOK)
	if flusher != nil {
		flusher.Flush()
	}
	var cols []column
	if asTable {
		cols = h.columnsFor(ctx, res.GVR, cluster)
	}
	first := true
	flat := flatOf(r)
	for e := range watcher.ResultChan() {
		keep, err := flat.event(&e)
		if err != nil {
			return
		}
		if !keep {
			continue
		}
		var object any
		switch {
		case e.Object == nil:
			object = bookmark(f, e)
		case asTable:
			t, err := table(cols, [][]byte{e.Object.Data}, r.URL.Query().Get("includeObject"), first)
			if err != nil {
				return
			}
			first = false
			object = t
		default:
			data, err := f.item(e.Object.Data)
			if err != nil {
				return
			}
			object = json.RawMessage(data)
		}
		if !send(e.Type, object) {
			return
		}
	}
}

func bookmark(f format, e watchcache.Event) *unstructured.Unstructured {
	u := &unstructured.Unstructured{}
	u.SetAPIVersion(f.apiVersion)
	u.SetKind(f.kind)
	u.SetResourceVersion(strconv.FormatInt(e.Revision, 10))
	if e.InitialEventsEnd {
		u.SetAnnotations(map[string]string{metav1.InitialEventsAnnotationKey: "true"})
	}
	return u
}
