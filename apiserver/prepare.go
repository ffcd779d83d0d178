package apiserver

import (
	"context"
	"net/http"
	"slices"

	"github.com/panorama-io/panorama/storage"
)

// prepare readies q, a read of res that req asks for with verb, for the
// store: the view translates it into member terms, field selectors are
// checked against the store's indexes, it is narrowed to what the user
// may verb (restrict) and, for CRDs, to those its clusters sync, and the
// clusters it reads that are not ready are warned about. Get, list,
// watch, count and collections all read through it.
func (h *Handler) prepare(w http.ResponseWriter, req *request, verb string, res storage.Resource, q *storage.ListQuery) error {
	if err := req.view.query(q, res.Namespaced); err != nil {
		return err
	}
	if err := h.validateFields(req.r.Context(), q); err != nil {
		return err
	}
	if err := h.restrict(w, req.r, verb, res.GVR.GroupResource(), q); err != nil {
		return err
	}
	h.onlySyncedCRDs(q) // crds.go; nothing left selects nothing
	h.warnNotReady(w, q.Clusters)
	return nil
}

// prepareList parses the list or watch req asks for and prepares its
// query.
func (h *Handler) prepareList(w http.ResponseWriter, req *request, watch bool) (*listOptions, error) {
	opts, err := parseListOptions(req.r.URL.Query(), req.res.GVR, req.cluster, req.namespace, watch)
	if err != nil {
		return nil, err
	}
	if err := h.prepare(w, req, req.info.Verb, req.res, &opts.query); err != nil {
		return nil, err
	}
	return opts, h.relate(req, req.res, opts, watch) // relations.go
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

// selectsNothing reports whether q was narrowed to nothing: its path and
// parameters disagree, or nothing of what it asks is served.
func selectsNothing(q *storage.ListQuery) bool {
	return slices.Equal(q.Clusters, []string{matchNothing})
}
