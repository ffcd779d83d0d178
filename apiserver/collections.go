package apiserver

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	searchv1alpha1 "github.com/panorama-io/panorama/apis/search/v1alpha1"
	"github.com/panorama-io/panorama/apiserver/watchcache"
	"github.com/panorama-io/panorama/internal/responsewriters"
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
		responsewriters.WriteJSON(w, http.StatusOK, list)
		return
	}
	if _, ok := collections[name]; !ok || strings.Contains(name, "/") {
		writeError(w, r, apierrors.NewNotFound(collectionsGR, name), collectionsGR)
		return
	}
	resources := h.collection(name)
	var reads []*listOptions
	var limit int64
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
		err = h.prepare(w, all, "list", res, &opts.query)
		if errors.As(err, &denied) && apierrors.IsForbidden(denied) {
			warn(w, fmt.Sprintf("%s left out: %s", memberResource(res.GVR.GroupResource()), denied.ErrStatus.Message))
			continue
		}
		if err == nil {
			err = h.relate(all, res, opts, false) // relations.go
		}
		if err != nil {
			writeError(w, r, err, collectionsGR)
			return
		}
		if opts.query.Continue != "" {
			writeError(w, r, badRequest("continue is not supported for collections"), collectionsGR)
			return
		}
		if limit == 0 {
			limit = opts.query.Limit
		}
		reads = append(reads, opts)
	}
	if len(reads) == 0 && len(resources) > 0 {
		writeError(w, r, apierrors.NewForbidden(collectionsGR, name, errors.New("you may read none of its resources in any cluster")), collectionsGR)
		return
	}
	pages := &collectionPages{h: h, ctx: r.Context(), reads: reads, limit: limit, left: limit}
	if len(reads) > 0 && reads[0].asOf != nil { // history.go
		if err := h.resolveAsOf(r.Context(), reads[0]); err != nil {
			writeError(w, r, err, collectionsGR)
			return
		}
		pages.rev = reads[0].query.Revision
	}
	page, err := pages.next()
	if err != nil {
		writeError(w, r, err, collectionsGR)
		return
	}
	out := &collectionEnvelope{TypeMeta: typeMeta, Metadata: metav1.ObjectMeta{Name: name}, ResourceTypes: collectionTypes(resources), Items: []json.RawMessage{}}
	out.Kind = "CollectionResource"
	if pages.rev > 0 {
		out.Metadata.ResourceVersion = strconv.FormatInt(pages.rev, 10)
	}
	streamItems(w, r, "application/json", out, func(yield func([]byte, error) bool) {
		for page != nil {
			for i := range page.Objects {
				if !yield(page.Objects[i].Data, nil) {
					return
				}
			}
			if page, err = pages.next(); err != nil {
				yield(nil, err)
				return
			}
		}
	})
}

// collectionEnvelope is a CollectionResource with its items last and
// always present, as streamItems wants them.
type collectionEnvelope struct {
	metav1.TypeMeta `json:",inline"`
	Metadata        metav1.ObjectMeta                       `json:"metadata"`
	ResourceTypes   []searchv1alpha1.CollectionResourceType `json:"resourceTypes"`
	Items           []json.RawMessage                       `json:"items"`
}

// collectionPages reads the objects of a collection's resources a page
// at a time, every resource at the first one's revision, until limit
// objects (0: all) are read.
type collectionPages struct {
	h     *Handler
	ctx   context.Context
	reads []*listOptions
	// rev is the revision read at, once the first page sets it.
	rev         int64
	limit, left int64
}

// next returns the next page, nil after the last.
func (c *collectionPages) next() (*storage.ListResult, error) {
	if len(c.reads) == 0 || (c.limit > 0 && c.left <= 0) {
		return nil, nil
	}
	q := &c.reads[0].query
	q.Revision, q.Limit = c.rev, unpagedPage
	if c.limit > 0 {
		q.Limit = min(unpagedPage, c.left)
	}
	page, err := c.h.reads().List(c.ctx, q, watchcache.Freshness{})
	if err != nil {
		return nil, err
	}
	c.rev, c.left = page.Revision, c.left-int64(len(page.Objects))
	if q.Continue = page.Continue; q.Continue == "" {
		c.reads = c.reads[1:]
	}
	return page, nil
}
