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
		writeError(w, req.r, err, gr)
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
		writeError(w, req.r, err, gr)
		return
	}
	listMeta := metav1.ListMeta{ResourceVersion: strconv.FormatInt(page.Revision, 10), Continue: page.Continue, RemainingItemCount: page.RemainingCount}
	if wantsTable(req.r) {
		h.writeTable(w, req, page.Objects, listMeta)
		return
	}
	f := formatOf(req.r, req.res, opts.onlyMetadata)
	streamList(w, req.r, f.listType, &listEnvelope{Kind: f.listKind, APIVersion: f.apiVersion, Metadata: listMeta, Items: []json.RawMessage{}},
		len(page.Objects), func(i int) ([]byte, error) { return f.item(page.Objects[i].Data) })
}

// listConsistent reads a page of q at the store's latest state, or at its
// continue token's.
func (h *Handler) listConsistent(ctx context.Context, q *storage.ListQuery) (*storage.ListResult, error) {
	return h.reads().List(ctx, q, watchcache.Freshness{})
}

// readList reads the page a list asks for.
func (h *Handler) readList(ctx context.Context, opts *listOptions) (*storage.ListResult, error) {
	if err := h.resolveAsOf(ctx, opts); err != nil { // history.go
		return nil, err
	}
	page, err := h.reads().List(ctx, &opts.query, opts.version.freshness(&opts.query))
	if storage.IsTooOld(err) && opts.query.Continue != "" {
		err = apierrors.NewResourceExpired("The provided continue parameter is too old to display a consistent list result. You can start a new list without the continue parameter.")
	}
	return page, err
}
