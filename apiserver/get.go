package apiserver

import (
	"fmt"
	"net/http"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	searchv1alpha1 "github.com/panorama-io/panorama/apis/search/v1alpha1"
	"github.com/panorama-io/panorama/apiserver/watchcache"
	"github.com/panorama-io/panorama/storage"
)

// get answers the get of one object: in a cluster's view the cluster's,
// across clusters the first one a list of its name finds, with a warning
// naming the other clusters that have one. Get ignores its search and
// list parameters (resourceVersion included): it reads the latest state.
func (h *Handler) get(w http.ResponseWriter, req *request) {
	gr, name := req.res.GVR.GroupResource(), req.info.Name
	q := storage.ListQuery{GVR: req.res.GVR, Names: []string{name}}
	if req.cluster != "" {
		q.Clusters = []string{req.cluster}
	}
	if req.namespace != "" {
		q.Namespaces = []string{req.namespace}
	}
	if err := h.prepare(w, req, "get", req.res, &q); err != nil {
		writeError(w, req.r, err, gr)
		return
	}
	if selectsNothing(&q) { // CRDs its clusters do not sync (crds.go)
		writeError(w, req.r, apierrors.NewNotFound(gr, name), gr)
		return
	}
	objs, err := h.getObjects(req, &q)
	if err != nil {
		writeError(w, req.r, err, gr)
		return
	}
	if wantsTable(req.r) {
		h.writeTable(w, req, objs, metav1.ListMeta{})
		return
	}
	if len(objs) > 1 {
		warn(w, elsewhereMessage(gr.String(), name, objs))
	}
	f := formatOf(req.r, req.res, false)
	data, err := f.item(objs[0].Data)
	if err != nil {
		writeError(w, req.r, err, gr)
		return
	}
	w.Header().Set("Content-Type", f.objectType)
	_, _ = w.Write(data)
}

// getObjects reads the objects of a get: the one of the cluster's view, or
// every cluster's across clusters, in the view's terms; never none.
func (h *Handler) getObjects(req *request, q *storage.ListQuery) ([]storage.Object, error) {
	gr, name := req.res.GVR.GroupResource(), req.info.Name
	if req.cluster != "" {
		o, err := h.reads().Get(req.r.Context(), storage.Key{Cluster: req.cluster, GVR: req.res.GVR, Namespace: req.namespace, Name: name})
		if err == storage.ErrNotFound {
			err = apierrors.NewNotFound(gr, name)
		}
		if err != nil {
			return nil, err
		}
		return []storage.Object{*o}, nil
	}
	page, err := h.reads().List(req.r.Context(), q, watchcache.Freshness{})
	if err == nil {
		err = req.view.page(page)
	}
	if err == nil && len(page.Objects) == 0 {
		err = apierrors.NewNotFound(gr, name)
	}
	if err != nil {
		return nil, err
	}
	return page.Objects, nil
}

// elsewhereMessage tells a get across clusters which clusters have an
// object of the name besides the one it answers.
func elsewhereMessage(gr, name string, objs []storage.Object) string {
	clusters := make([]string, len(objs))
	for i, o := range objs {
		clusters[i] = o.Cluster
	}
	return fmt.Sprintf("%s %q exists in %d clusters (%s); this is the one of %s, ask %s/... for another",
		gr, name, len(objs), strings.Join(clusters, ", "), objs[0].Cluster, searchv1alpha1.ViewPath("<name>"))
}
