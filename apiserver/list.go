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

// unpagedPage is how many objects a list without a limit reads at a time:
// its answer is streamed page by page, every page at the first one's
// revision (its continue token's), rather than read whole first.
const unpagedPage = 500

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
	// A Table's rows are written from the whole list: it is read whole.
	unpaged := opts.query.Limit == 0 && !wantsTable(req.r)
	if unpaged {
		opts.query.Limit = unpagedPage
	}
	page, err := h.readViewed(req, opts)
	if err != nil {
		writeError(w, req.r, err, gr)
		return
	}
	listMeta := metav1.ListMeta{ResourceVersion: strconv.FormatInt(page.Revision, 10), Continue: page.Continue, RemainingItemCount: page.RemainingCount}
	if unpaged {
		listMeta.Continue, listMeta.RemainingItemCount = "", nil
	}
	if wantsTable(req.r) {
		h.writeTable(w, req, page.Objects, listMeta)
		return
	}
	f := formatOf(req.r, req.res, opts.onlyMetadata)
	streamItems(w, req.r, f.listType, &listEnvelope{Kind: f.listKind, APIVersion: f.apiVersion, Metadata: listMeta, Items: []json.RawMessage{}},
		func(yield func([]byte, error) bool) {
			for {
				for i := range page.Objects {
					if !yield(f.item(page.Objects[i].Data)) {
						return
					}
				}
				if !unpaged || page.Continue == "" {
					return
				}
				opts.query.Continue = page.Continue
				if page, err = h.readViewed(req, opts); err != nil {
					yield(nil, err)
					return
				}
			}
		})
}

// readViewed reads the page a list asks for, as req's view shows it.
func (h *Handler) readViewed(req *request, opts *listOptions) (*storage.ListResult, error) {
	page, err := h.readList(req.r.Context(), opts)
	if err != nil {
		return nil, err
	}
	return page, req.view.page(page)
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
