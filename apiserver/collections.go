package apiserver

import (
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"

	searchv1alpha1 "github.com/panorama-io/panorama/apis/search/v1alpha1"
	"github.com/panorama-io/panorama/apiserver/watchcache"
	"github.com/panorama-io/panorama/storage"
)

// CollectionsPath serves collectionresources: several kinds in one answer.
var CollectionsPath = "/apis/" + searchv1alpha1.SchemeGroupVersion.String() + "/collectionresources"

var collectionsGR = searchv1alpha1.SchemeGroupVersion.WithResource("collectionresources").GroupResource()

// collections are the resource sets served; each lists the synced ones.
var collections = map[string][]schema.GroupResource{
	"workloads": {
		{Group: "apps", Resource: "deployments"}, {Group: "apps", Resource: "statefulsets"}, {Group: "apps", Resource: "daemonsets"},
		{Group: "batch", Resource: "jobs"}, {Group: "batch", Resource: "cronjobs"},
	},
	"networking": {{Resource: "services"}, {Group: "networking.k8s.io", Resource: "ingresses"}},
}

// collection resolves a collection to the synced resources it gathers, at
// their preferred versions.
func (h *Handler) collection(name string) []storage.Resource {
	var out []storage.Resource
	served := h.registry.Resources("")
	for _, gr := range collections[name] {
		// Resources are sorted preferred version first within a group.
		if i := slices.IndexFunc(served, func(r storage.Resource) bool { return r.GVR.GroupResource() == gr }); i >= 0 {
			out = append(out, served[i])
		}
	}
	return out
}

func collectionTypes(resources []storage.Resource) []searchv1alpha1.CollectionResourceType {
	out := make([]searchv1alpha1.CollectionResourceType, len(resources))
	for i, r := range resources {
		out[i] = searchv1alpha1.CollectionResourceType{Group: r.GVR.Group, Version: r.GVR.Version, Resource: r.GVR.Resource, Kind: r.Kind}
	}
	return out
}

// ServeCollections answers the list of collections and the get of one, with
// the objects of every resource it gathers that the query selects, all at
// one revision.
func (h *Handler) ServeCollections(w http.ResponseWriter, r *http.Request) {
	r = withCheckBudget(r) // authz.go: one bound for all the types gathered
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		writeError(w, r, apierrors.NewMethodNotSupported(collectionsGR, strings.ToLower(r.Method)), collectionsGR)
		return
	}
	typeMeta := metav1.TypeMeta{APIVersion: searchv1alpha1.SchemeGroupVersion.String()}
	name := strings.Trim(strings.TrimPrefix(r.URL.Path, CollectionsPath), "/")
	if name == "" {
		list := &searchv1alpha1.CollectionResourceList{TypeMeta: typeMeta, Items: []searchv1alpha1.CollectionResource{}}
		list.Kind = "CollectionResourceList"
		names := make([]string, 0, len(collections))
		for n := range collections {
			names = append(names, n)
		}
		slices.Sort(names)
		for _, n := range names {
			list.Items = append(list.Items, searchv1alpha1.CollectionResource{
				TypeMeta: typeMeta, ObjectMeta: metav1.ObjectMeta{Name: n}, ResourceTypes: collectionTypes(h.collection(n)),
			})
		}
		writeJSON(w, http.StatusOK, list)
		return
	}
	if _, ok := collections[name]; !ok || strings.Contains(name, "/") {
		writeError(w, r, apierrors.NewNotFound(collectionsGR, name), collectionsGR)
		return
	}
	resources := h.collection(name)
	out := &searchv1alpha1.CollectionResource{TypeMeta: typeMeta, ObjectMeta: metav1.ObjectMeta{Name: name},
		ResourceTypes: collectionTypes(resources), Items: []runtime.RawExtension{}}
	out.Kind = "CollectionResource"
	var rev, limit int64
	var readable int
	all := &request{r: r, view: memberView("")} // collections are of every cluster
	for _, res := range resources {
		opts, err := parseListOptions(r.URL.Query(), res.GVR, "", "", false)
		if err == nil && len(opts.groupBy) > 0 {
			err = badRequest("groupBy is not supported for collections: count each type")
		}
		if err != nil {
			writeError(w, r, err, collectionsGR)
			return
		}
		// A type the user may read nowhere is left out; 403 only when
		// every type is.
		var denied *apierrors.StatusError
		if err := h.prepare(w, all, "list", res, &opts.query); errors.As(err, &denied) && apierrors.IsForbidden(denied) {
			warn(w, fmt.Sprintf("%s left out: %s", memberResource(res.GVR.GroupResource()), denied.ErrStatus.Message))
			continue
		} else if err != nil {
			writeError(w, r, err, collectionsGR)
			return
		}
		readable++
		if opts.query.Continue != "" {
			writeError(w, r, badRequest("continue is not supported for collections"), collectionsGR)
			return
		}
		if limit == 0 {
			limit = opts.query.Limit
		}
		if rev == 0 && opts.asOf != nil { // history.go
			if err := h.resolveAsOf(r.Context(), opts); err != nil {
				writeError(w, r, err, collectionsGR)
				return
			}
			rev = opts.query.Revision
		}
		// Every resource at the first one's revision: one consistent answer.
		opts.query.Revision, opts.query.Limit = rev, 0
		if limit > 0 {
			if opts.query.Limit = limit - int64(len(out.Items)); opts.query.Limit <= 0 {
				break
			}
		}
		page, err := h.reads().List(r.Context(), &opts.query, watchcache.Freshness{})
		if err != nil {
			writeError(w, r, err, collectionsGR)
			return
		}
		rev = page.Revision
		for _, o := range page.Objects {
			out.Items = append(out.Items, runtime.RawExtension{Raw: o.Data})
		}
	}
	if readable == 0 && len(resources) > 0 {
		writeError(w, r, apierrors.NewForbidden(collectionsGR, name, errors.New("you may read none of its resources in any cluster")), collectionsGR)
		return
	}
	if rev > 0 {
		out.ResourceVersion = strconv.FormatInt(rev, 10)
	}
	writeJSON(w, http.StatusOK, out)
}
