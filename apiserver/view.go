package apiserver

import (
	"context"

	authorizationv1 "k8s.io/api/authorization/v1"
	apirequest "k8s.io/apiserver/pkg/endpoints/request"

	searchv1alpha1 "github.com/panorama-io/panorama/apis/search/v1alpha1"
	"github.com/panorama-io/panorama/apiserver/watchcache"
	"github.com/panorama-io/panorama/storage"
)

// A view is how the members' objects look under one prefix of ViewPath:
// one cluster's as they are, every cluster's as they are, or every
// cluster's with flat namespaces (view_flat.go). A request is read in
// member terms: the view translates what the request asks into them, and
// what is read back into its own. Each view is one file; views names the
// views that no Cluster is named after.
type view interface {
	// cluster is the one cluster the view reads, "" for every cluster.
	cluster() string
	// query translates q, as parsed from a request of the view, into
	// member terms.
	query(q *storage.ListQuery, namespaced bool) error
	// page translates a page read for the view's query back, leaving out
	// what the view does not show.
	page(p *storage.ListResult) error
	// event translates a watch event back: false for one to leave out.
	event(e *watchcache.Event) (bool, error)
	// count translates the count of a query the view translated, and
	// returns what translates its answer back.
	count(ctx context.Context, q *storage.CountQuery, namespaced bool) (func(*storage.CountResult), error)
	// object is the cluster and member request of a request naming one
	// object (its subresources: history, refusals).
	object(info *apirequest.RequestInfo) (cluster string, member *apirequest.RequestInfo)
	// reviewed is the cluster and attributes, in member terms, of a self
	// access review; false when they name nothing the view can read.
	reviewed(a *authorizationv1.ResourceAttributes) (cluster string, member *authorizationv1.ResourceAttributes, ok bool)
	// rulesScope is the cluster and member namespace of a self rules
	// review of namespace.
	rulesScope(namespace string) (cluster, member string)
}

// views are the views named other than after a cluster (AllClusters is
// the member view of every cluster, "").
var views = map[string]func(h *Handler) view{
	searchv1alpha1.FlatClusters: func(h *Handler) view { return newFlatView(h.registry.Names(), h.listConsistent) },
}

// viewOf is the view of the cluster a path names.
func (h *Handler) viewOf(cluster string) view {
	if newView, ok := views[cluster]; ok {
		return newView(h)
	}
	return memberView(cluster)
}
