package apiserver

import (
	"context"
	"encoding/json"
	"net/http"
	"strconv"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/panorama-io/panorama/apiserver/watchcache"
	"github.com/panorama-io/panorama/storage"
)

// list answers a list, or its counts when it groups them (counts.go).
func (h *Handler) list(w http.ResponseWriter, req *request) {
	gr := req.res.GVR.GroupResource()
	opts, err := h.prepareList(w, req, false)
	if err != nil {
		writeError(w, err, gr)
		return
	}
	if len(opts.groupBy) > 0 {
		h.count(w, req, opts)
		return
	}
	page, err := h.readList(req.r.Context(), opts)
	if err == nil {
		err = req.view.page(page)
	}
	if err != nil {
		writeError(w, err, gr)
		return
	}
	listMeta := metav1.ListMeta{ResourceVersion: strconv.FormatInt(page.Revision, 10), Continue: page.Continue, RemainingItemCount: page.RemainingCount}
	if wantsTable(req.r) {
		h.writeTable(w, req, page.Objects, listMeta)
		return
	}
	f := formatOf(req.r, req.res, opts.onlyMetadata)
	streamList(w, f.listType, &listEnvelope{Kind: f.listKind, APIVersion: f.apiVersion, Metadata: listMeta, Items: []json.RawMessage{}},
		len(page.Objects), func(i int) ([]byte, error) { return f.item(page.Objects[i].Data) })
}

// readList reads the page a list asks for.
func (h *Handler) readList(ctx context.Context, opts *listOptions) (*storage.ListResult, error) {
	if opts.version.fromCache(&opts.query) {
		// limit is ignored here, as kube-apiserver 1.37 ignores it for
		// resourceVersion=0 lists its watch cache serves (cacher's
		// computeListLimit): the whole selection, without continue.
		objs, rev, err := h.cache.List(ctx, &opts.query)
		if err != nil {
			return nil, err
		}
		return &storage.ListResult{Objects: objs, Revision: rev}, nil
	}
	if err := h.resolveAsOf(ctx, opts); err != nil {
		return nil, err
	}
	if err := opts.version.checkStore(ctx, h.store); err != nil {
		return nil, err
	}
	page, err := h.listPage(ctx, &opts.query, opts.asOf != nil)
	if storage.IsTooOld(err) && opts.query.Continue != "" {
		err = apierrors.NewResourceExpired("The provided continue parameter is too old to display a consistent list result. You can start a new list without the continue parameter.")
	}
	return page, err
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
