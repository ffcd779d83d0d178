package apiserver

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/munnerz/goautoneg"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	utilversion "k8s.io/apimachinery/pkg/util/version"
	"k8s.io/klog/v2"
	"k8s.io/kube-openapi/pkg/handler3"

	"github.com/panorama-io/panorama/storage"
)

// Every view serves the OpenAPI v3 of the group versions it serves, as
// kube-apiserver does, so that kubectl explain and clients that read
// schemas work: <view>/openapi/v3 lists the group versions, each with a
// serverRelativeURL carrying the document's hash, and
// <view>/openapi/v3/{api/v1|apis/{group}/{version}} is the document. The
// documents are the members' own, which the controller stores
// (storage.OpenAPIResource). A cluster's view serves its member's; the
// all-clusters view merges those of the clusters that serve the group
// version (mergeOpenAPI). Documents are schemas, not data: whoever may read
// a view's discovery may read them.

// protobufOpenAPIType is what kube-apiserver answers a client asking for
// protobuf documents (client-go asks for the deprecated spelling too).
const protobufOpenAPIType = "application/com.github.proto-openapi.spec.v3.v1.0+protobuf"

// openAPISource is one cluster's stored document of a group version.
type openAPISource struct {
	cluster, memberVersion, hash string
}

// serveOpenAPI answers GET <view>/openapi/v3 and the documents under it.
// It reports false for other requests.
func (h *Handler) serveOpenAPI(w http.ResponseWriter, r *http.Request, cluster, rest string) bool {
	sub, ok := strings.CutPrefix(rest, "/openapi/v3")
	if !ok || (sub != "" && sub[0] != '/') || (r.Method != http.MethodGet && r.Method != http.MethodHead) {
		return false
	}
	if cluster != "" && !h.seesCluster(r, cluster) {
		writeError(w, clusterNotFound(cluster), schema.GroupResource{})
		return true
	}
	sources, err := h.openAPISources(r.Context(), cluster)
	if err != nil {
		writeError(w, err, schema.GroupResource{})
		return true
	}
	path := strings.Trim(sub, "/")
	if path == "" {
		// URLs under the prefix the request came by (a view's, or a
		// deprecated one): client-go takes off its own prefix and puts it
		// back, other clients take them as they are.
		prefix := strings.TrimSuffix(r.URL.Path, rest)
		index := handler3.OpenAPIV3Discovery{Paths: map[string]handler3.OpenAPIV3DiscoveryGroupVersion{}}
		for p, srcs := range sources {
			u := url.URL{Path: prefix + "/openapi/v3/" + p, RawQuery: url.Values{"hash": {openAPIHash(srcs)}}.Encode()}
			index.Paths[p] = handler3.OpenAPIV3DiscoveryGroupVersion{ServerRelativeURL: u.String()}
		}
		data, err := json.Marshal(index)
		if err != nil {
			writeError(w, err, schema.GroupResource{})
			return true
		}
		serveOpenAPIContent(w, r, "application/json", data, storage.Digest(data))
		return true
	}
	srcs, ok := sources[path]
	if !ok {
		writeError(w, notFound(), schema.GroupResource{})
		return true
	}
	contentType, protobuf, ok := openAPIContentType(r.Header.Get("Accept"))
	w.Header().Add("Vary", "Accept")
	if !ok {
		writeError(w, notAcceptable("only application/json and "+protobufOpenAPIType+" are served"), schema.GroupResource{})
		return true
	}
	data, hash, err := h.openAPI.document(r.Context(), h.store, path, srcs, protobuf)
	if err != nil {
		writeError(w, err, schema.GroupResource{})
		return true
	}
	// As kube-apiserver: a URL with the hash of what it answers names that
	// content for good. Another hash (the document changed since the index
	// was read) gets the current content, not to be kept.
	if q := r.URL.Query().Get("hash"); q != "" && q == hash {
		w.Header().Set("Cache-Control", "public, immutable")
		w.Header().Set("Expires", time.Now().AddDate(1, 0, 0).UTC().Format(http.TimeFormat))
	}
	serveOpenAPIContent(w, r, contentType, data, hash)
	return true
}

func notAcceptable(message string) error {
	return &apierrors.StatusError{ErrStatus: metav1.Status{
		Status: metav1.StatusFailure, Code: http.StatusNotAcceptable, Reason: metav1.StatusReasonNotAcceptable, Message: message,
	}}
}

// serveOpenAPIContent answers with data, tagged hash, or 304 to a client
// that has it (If-None-Match).
func serveOpenAPIContent(w http.ResponseWriter, r *http.Request, contentType string, data []byte, hash string) {
	w.Header().Set("Content-Type", contentType)
	w.Header().Set("Etag", strconv.Quote(hash))
	http.ServeContent(w, r, "", time.Time{}, bytes.NewReader(data))
}

// openAPIContentType picks the answer's type from Accept, in the client's
// order of preference: JSON or protobuf.
func openAPIContentType(accept string) (contentType string, protobuf, ok bool) {
	if accept == "" {
		accept = "*/*"
	}
	for _, c := range goautoneg.ParseAccept(accept) {
		switch {
		case (c.Type == "application" || c.Type == "*") && (c.SubType == "json" || c.SubType == "*"):
			return "application/json", false, true
		case c.Type == "application" && (c.SubType == "com.github.proto-openapi.spec.v3.v1.0+protobuf" ||
			c.SubType == "com.github.proto-openapi.spec.v3@v1.0+protobuf"):
			return protobufOpenAPIType, true, true
		}
	}
	return "", false, false
}

// openAPISources maps each group version's path that the view of cluster
// serves to the clusters of the view that serve it and have its document.
func (h *Handler) openAPISources(ctx context.Context, cluster string) (map[string][]openAPISource, error) {
	q := storage.ListQuery{GVR: storage.OpenAPIResource, Names: []string{storage.OpenAPIIndexName}}
	if cluster != "" {
		q.Clusters = []string{cluster}
	}
	page, err := h.store.List(ctx, &q)
	if err != nil {
		return nil, err
	}
	out := map[string][]openAPISource{}
	for _, o := range page.Objects {
		var index storage.OpenAPIIndex
		if err := storage.DecodeOpenAPI(o.Data, &index); err != nil {
			klog.ErrorS(err, "leaving a cluster's OpenAPI out", "cluster", o.Cluster)
			continue
		}
		served := map[string]bool{}
		for _, res := range h.registry.Resources(o.Cluster) {
			served[storage.OpenAPIPath(res.GVR.GroupVersion())] = true
		}
		for p, e := range index.GroupVersions {
			if served[p] {
				out[p] = append(out[p], openAPISource{cluster: o.Cluster, memberVersion: index.MemberVersion, hash: e.Hash})
			}
		}
	}
	for _, srcs := range out {
		sortOpenAPISources(srcs)
	}
	return out, nil
}

// sortOpenAPISources puts the newest member first (by major, minor and
// patch: a release candidate serves its release's API), then by cluster
// name: mergeOpenAPI keeps the first definition of each name. A version
// that does not parse counts as the oldest.
func sortOpenAPISources(srcs []openAPISource) {
	slices.SortFunc(srcs, func(a, b openAPISource) int {
		va, erra := utilversion.ParseGeneric(a.memberVersion)
		vb, errb := utilversion.ParseGeneric(b.memberVersion)
		switch {
		case erra == nil && errb == nil:
			switch {
			case va.LessThan(vb):
				return 1
			case vb.LessThan(va):
				return -1
			}
		case erra == nil:
			return -1
		case errb == nil:
			return 1
		}
		return strings.Compare(a.cluster, b.cluster)
	})
}

// openAPIHash names the document served from srcs (sorted): one cluster's
// hash, or a digest of every input of the merge.
func openAPIHash(srcs []openAPISource) string {
	if len(srcs) == 1 {
		return srcs[0].hash
	}
	var b strings.Builder
	for _, s := range srcs {
		fmt.Fprintf(&b, "%s %s %s\n", s.cluster, s.memberVersion, s.hash)
	}
	return storage.Digest([]byte(b.String()))
}

// mergeOpenAPI merges documents of one group version, newest member first:
// the union of their paths and of each kind of component (schemas, ...).
// A path or a component that several define is the first's, so a field a
// newer member added is explained; so are the other fields of the
// document. A document that does not decode is left out.
func mergeOpenAPI(docs [][]byte) ([]byte, error) {
	var out map[string]json.RawMessage
	paths := map[string]json.RawMessage{}
	components := map[string]map[string]json.RawMessage{}
	for _, data := range docs {
		var parts storage.OpenAPIParts
		var all map[string]json.RawMessage
		if err := json.Unmarshal(data, &parts); err != nil {
			klog.ErrorS(err, "leaving a stored OpenAPI document out of a merge")
			continue
		}
		if err := json.Unmarshal(data, &all); err != nil {
			continue
		}
		if out == nil {
			out = all
		}
		for k, v := range parts.Paths {
			if _, ok := paths[k]; !ok {
				paths[k] = v
			}
		}
		for kind, byName := range parts.Components {
			if components[kind] == nil {
				components[kind] = map[string]json.RawMessage{}
			}
			for name, v := range byName {
				if _, ok := components[kind][name]; !ok {
					components[kind][name] = v
				}
			}
		}
	}
	if out == nil {
		return nil, errors.New("no OpenAPI document to merge decodes")
	}
	var err error
	if out["paths"], err = json.Marshal(paths); err != nil {
		return nil, err
	}
	if out["components"], err = json.Marshal(components); err != nil {
		return nil, err
	}
	return json.Marshal(out)
}

// openAPICacheBytes bounds the documents an API server keeps in memory;
// past it the cache starts over. kube-apiserver's documents weigh a few
// MiB in all, so this holds those of a fleet of several versions.
const openAPICacheBytes = 64 << 20

// openAPICache keeps served documents by hash (and format): reading and
// merging them again at every request would read MiBs from the database.
// A hash names content, so an entry is never stale.
type openAPICache struct {
	mu    sync.Mutex
	size  int
	bytes map[string][]byte
}

func (c *openAPICache) get(key string) ([]byte, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	data, ok := c.bytes[key]
	return data, ok
}

func (c *openAPICache) put(key string, data []byte) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.bytes == nil || c.size+len(data) > openAPICacheBytes {
		c.bytes, c.size = map[string][]byte{}, 0
	}
	if _, ok := c.bytes[key]; !ok {
		c.bytes[key] = data
		c.size += len(data)
	}
}

// document is the document of path served from srcs, and its hash. The
// stored documents are read when the cache has not got it; one that
// changed since the index was read is served as it now is, under its own
// hash.
func (c *openAPICache) document(ctx context.Context, store storage.Interface, path string, srcs []openAPISource, protobuf bool) ([]byte, string, error) {
	key := func(hash string) string {
		if protobuf {
			return "pb:" + hash
		}
		return hash
	}
	hash := openAPIHash(srcs)
	if data, ok := c.get(key(hash)); ok {
		return data, hash, nil
	}
	var found []openAPISource
	var docs [][]byte
	for _, s := range srcs {
		o, err := store.Get(ctx, storage.Key{Cluster: s.cluster, GVR: storage.OpenAPIResource, Name: path})
		if errors.Is(err, storage.ErrNotFound) {
			continue // removed since the index was read
		}
		if err != nil {
			return nil, "", err
		}
		var doc storage.OpenAPIDocument
		if err := storage.DecodeOpenAPI(o.Data, &doc); err != nil {
			return nil, "", err
		}
		s.hash = doc.Hash
		found = append(found, s)
		docs = append(docs, []byte(doc.Document))
	}
	if len(docs) == 0 {
		return nil, "", notFound()
	}
	hash = openAPIHash(found)
	data := docs[0]
	if len(docs) > 1 {
		var err error
		if data, err = mergeOpenAPI(docs); err != nil {
			return nil, "", err
		}
	}
	c.put(hash, data)
	if protobuf {
		pb, err := handler3.ToV3ProtoBinary(data)
		if err != nil {
			// A member's document that JSON clients can still read.
			return nil, "", notAcceptable("the document cannot be served as protobuf, ask for application/json: " + err.Error())
		}
		c.put(key(hash), pb)
		data = pb
	}
	return data, hash, nil
}
