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
// version (mergeOpenAPI), so that no member's claims, its version among
// them, decide what the others' objects are said to be. Documents are
// schemas, not data: whoever may read a view's discovery may read them.

// protobufOpenAPIType is what kube-apiserver answers a client asking for
// protobuf documents (client-go asks for the deprecated spelling too).
const protobufOpenAPIType = "application/com.github.proto-openapi.spec.v3.v1.0+protobuf"

// openAPISource is one cluster's stored document of a group version.
type openAPISource struct {
	cluster, hash string
}

// isOpenAPI reports whether rest is /openapi/v3 or a path under it.
func isOpenAPI(rest string) bool {
	sub, ok := strings.CutPrefix(rest, "/openapi/v3")
	return ok && (sub == "" || sub[0] == '/')
}

// serveOpenAPI answers GET <view>/openapi/v3 and the documents under it.
func (h *Handler) serveOpenAPI(w http.ResponseWriter, req *request) {
	r, cluster, rest := req.r, req.cluster, req.rest
	sub := strings.TrimPrefix(rest, "/openapi/v3")
	if cluster != "" && !h.seesCluster(r, cluster) {
		writeError(w, req.r, clusterNotFound(cluster), schema.GroupResource{})
		return
	}
	sources, err := h.openAPISources(r.Context(), cluster)
	if err != nil {
		writeError(w, req.r, err, schema.GroupResource{})
		return
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
			writeError(w, req.r, err, schema.GroupResource{})
			return
		}
		serveOpenAPIContent(w, r, "application/json", data, storage.Digest(data))
		return
	}
	srcs, ok := sources[path]
	if !ok {
		writeError(w, req.r, notFound(), schema.GroupResource{})
		return
	}
	contentType, protobuf, ok := openAPIContentType(r.Header.Get("Accept"))
	w.Header().Add("Vary", "Accept")
	if !ok {
		writeError(w, req.r, notAcceptable("only application/json and "+protobufOpenAPIType+" are served"), schema.GroupResource{})
		return
	}
	data, hash, err := h.openAPI.document(r.Context(), h.store, path, srcs, protobuf)
	if err != nil {
		writeError(w, req.r, err, schema.GroupResource{})
		return
	}
	// As kube-apiserver: a URL with the hash of what it answers names that
	// content for good. Another hash (the document changed since the index
	// was read) gets the current content, not to be kept.
	if q := r.URL.Query().Get("hash"); q != "" && q == hash {
		w.Header().Set("Cache-Control", "public, immutable")
		w.Header().Set("Expires", time.Now().AddDate(1, 0, 0).UTC().Format(http.TimeFormat))
	}
	serveOpenAPIContent(w, r, contentType, data, hash)
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
	seniority := h.registry.seniorityRanks()
	for _, o := range page.Objects {
		var index storage.OpenAPIIndex
		if err := storage.DecodeOpenAPI(o.Data, &index); err != nil {
			klog.FromContext(ctx).Error(err, "Leaving a cluster's OpenAPI out", "cluster", o.Cluster)
			continue
		}
		served := map[string]bool{}
		for _, res := range h.registry.Resources(o.Cluster) {
			served[storage.OpenAPIPath(res.GVR.GroupVersion())] = true
		}
		for p, e := range index.GroupVersions {
			if served[p] {
				out[p] = append(out[p], openAPISource{cluster: o.Cluster, hash: e.Hash})
			}
		}
	}
	for _, srcs := range out {
		// mergeOpenAPI breaks ties by this order, oldest first.
		slices.SortFunc(srcs, func(a, b openAPISource) int { return seniority[a.cluster] - seniority[b.cluster] })
	}
	return out, nil
}

// openAPIHash names the document served from srcs (sorted): one cluster's
// hash, or a digest of every input of the merge, their order included.
func openAPIHash(srcs []openAPISource) string {
	if len(srcs) == 1 {
		return srcs[0].hash
	}
	var b strings.Builder
	for _, s := range srcs {
		fmt.Fprintf(&b, "%s %s\n", s.cluster, s.hash)
	}
	return storage.Digest([]byte(b.String()))
}

// mergeOpenAPI merges documents of one group version, given oldest
// member first: the union of their paths, of each kind of component
// (schemas, ...) and of their other fields, each defined as most of the
// documents that define it do, the oldest member's definition among those
// tied (see ballot.go). A member's claims, the version it says it runs
// among them, never outweigh what the others agree on, so that no member
// can rewrite how the others' kinds are explained. The price: a fleet
// explains what most of its members serve, a field only newer ones have
// in their own views. A document that does not decode is left out.
func mergeOpenAPI(ctx context.Context, docs [][]byte) ([]byte, error) {
	fields, paths := openAPIBallots{}, openAPIBallots{}
	components := map[string]openAPIBallots{}
	decoded := false
	for _, data := range docs {
		var parts storage.OpenAPIParts
		var all map[string]json.RawMessage
		if err := json.Unmarshal(data, &parts); err != nil {
			klog.FromContext(ctx).Error(err, "Leaving a stored OpenAPI document out of a merge")
			continue
		}
		if err := json.Unmarshal(data, &all); err != nil {
			continue
		}
		decoded = true
		delete(all, "paths")
		delete(all, "components")
		fields.cast(all)
		paths.cast(parts.Paths)
		for kind, byName := range parts.Components {
			if components[kind] == nil {
				components[kind] = openAPIBallots{}
			}
			components[kind].cast(byName)
		}
	}
	if !decoded {
		return nil, errors.New("no OpenAPI document to merge decodes")
	}
	out := fields.winners()
	var err error
	if out["paths"], err = json.Marshal(paths.winners()); err != nil {
		return nil, err
	}
	merged := make(map[string]map[string]json.RawMessage, len(components))
	for kind, b := range components {
		merged[kind] = b.winners()
	}
	if out["components"], err = json.Marshal(merged); err != nil {
		return nil, err
	}
	return json.Marshal(out)
}

// openAPIBallots tally each name's definitions (a path's, a schema's).
type openAPIBallots map[string]*ballot[json.RawMessage]

// cast votes for one document's definitions.
func (b openAPIBallots) cast(defs map[string]json.RawMessage) {
	for name, def := range defs {
		if b[name] == nil {
			b[name] = newBallot(sameJSON)
		}
		b[name].cast(def)
	}
}

func (b openAPIBallots) winners() map[string]json.RawMessage {
	out := make(map[string]json.RawMessage, len(b))
	for name, votes := range b {
		out[name] = votes.winner()
	}
	return out
}

// sameJSON compares definitions by their bytes: members of one release
// serve the same bytes (kube-apiserver writes its documents compact, in
// one order).
func sameJSON(a, b json.RawMessage) bool { return bytes.Equal(a, b) }

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
func (c *openAPICache) document(ctx context.Context, store storage.Reader, path string, srcs []openAPISource, protobuf bool) ([]byte, string, error) {
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
		if data, err = mergeOpenAPI(ctx, docs); err != nil {
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
