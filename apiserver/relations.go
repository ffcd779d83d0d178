package apiserver

import (
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/panorama-io/panorama/apiserver/watchcache"
	"github.com/panorama-io/panorama/storage"
)

// The relation parameters. refersTo=T selects the objects that refer to
// T, by the references the store indexes (storage.ReferencesOf): a filter
// every reader evaluates, watches too. referredBy=X selects the objects X
// refers to: X is read first, as far as the user may read it, and the
// objects its references name become what the list selects. A Service
// refers to the pods its selector selects, which neither names: either
// direction reads the other end's objects to relate them. Past one hop,
// relating walks the references hop by hop.

// relationEnd is the object a refersTo or referredBy value names: a type
// as kubectl takes one ("secret", "deploy", "deployments.apps"), a name
// and, optionally, a namespace.
type relationEnd struct {
	param, typ, namespace, name string
}

// parseRelationEnd reads "type/name" or "type/namespace/name", or, in a
// label value, which has no '/', the same with '_', which no type,
// namespace or object name has.
func parseRelationEnd(param, s string) (relationEnd, error) {
	sep := "/"
	if !strings.Contains(s, sep) {
		sep = "_"
	}
	parts := strings.Split(s, sep)
	if slices.Contains(parts, "") || len(parts) < 2 || len(parts) > 3 {
		return relationEnd{}, badf("%s %q: want type/name or type/namespace/name (in a label, type_name or type_namespace_name)", param, s)
	}
	end := relationEnd{param: param, typ: parts[0], name: parts[len(parts)-1]}
	if len(parts) == 3 {
		end.namespace = parts[1]
	}
	return end, nil
}

func (e relationEnd) String() string {
	if e.namespace != "" {
		return e.typ + "/" + e.namespace + "/" + e.name
	}
	return e.typ + "/" + e.name
}

// endKind is the kind a relation end's type names, and the resource that
// serves its objects when a cluster syncs them.
type endKind struct {
	storage.ReferenceKind
	served *storage.Resource
}

func (k endKind) groupKind() schema.GroupKind { return schema.GroupKind{Group: k.Group, Kind: k.Kind} }

// resolveType finds the kind a type names, as kubectl would: by plural,
// singular or short name, each optionally with its group. The built-in
// kinds come first, so that no member's resource takes their names.
func (h *Handler) resolveType(end relationEnd) (endKind, error) {
	typ := strings.ToLower(end.typ)
	served := h.registry.Resources("")
	for _, k := range storage.ReferenceKinds {
		if namedBy(typ, k.Group, k.Resource, k.Kind, k.ShortNames) {
			out := endKind{ReferenceKind: k}
			if i := slices.IndexFunc(served, func(r storage.Resource) bool {
				return r.GVR.GroupResource() == schema.GroupResource{Group: k.Group, Resource: k.Resource}
			}); i >= 0 {
				out.served = &served[i]
			}
			return out, nil
		}
	}
	for i, r := range served {
		if namedBy(typ, r.GVR.Group, r.GVR.Resource, r.Kind, shortNames[r.GVR.GroupResource()]) {
			return endKind{ReferenceKind: storage.ReferenceKind{Group: r.GVR.Group, Kind: r.Kind, Resource: r.GVR.Resource, Namespaced: r.Namespaced}, served: &served[i]}, nil
		}
	}
	return endKind{}, badf("%s %q: no kind is named %q", end.param, end, end.typ)
}

// namedBy reports whether typ, lower case, names the kind of group
// whose resource, kind and short names are given.
func namedBy(typ, group, resource, kind string, short []string) bool {
	name, suffix, grouped := strings.Cut(typ, ".")
	if grouped && suffix != group || !grouped && typ != name {
		return false
	}
	return name == resource || name == strings.ToLower(kind) || slices.Contains(short, name)
}

// maxRelated bounds the objects a relation reads or selects, and
// maxHops how far it follows references: each object selected is a
// parameter of the statements that list them (storage.MaxQueryValues),
// and a hop past the first reads every resource that could refer.
const (
	maxRelated = storage.MaxQueryValues / 4
	maxHops    = 3
)

// relate resolves the relation parameters of opts, a list or watch of
// res, into its query, after prepare has narrowed it to what the user
// may read. One hop of refersTo that names no pod for services is a
// filter of the query (RefersTo); anything else is walked here, hop by
// hop, into the objects the query selects (Objects).
func (h *Handler) relate(w http.ResponseWriter, req *request, res storage.Resource, opts *listOptions, watch bool) error {
	q := &opts.query
	if len(opts.refersTo) == 0 && opts.referredBy == nil || selectsNothing(q) {
		return nil
	}
	if _, flat := req.view.(*flatView); flat {
		return badRequest("refersTo and referredBy are not served in the flat view: use the view of all clusters")
	}
	if err := h.resolveAsOf(req.r.Context(), opts); err != nil { // history.go
		return err
	}
	rev := q.Revision
	if q.Continue != "" {
		var err error
		if rev, _, err = storage.DecodeContinue(q.Continue, q.Order()); err != nil {
			return err
		}
	}
	r := &relating{h: h, w: w, req: req, q: q, rev: rev, hops: max(opts.hops, 1), listed: res}
	if len(opts.refersTo) > 0 {
		targets, walk, err := r.targets(opts.refersTo)
		switch {
		case err != nil:
			return err
		case !walk:
			q.RefersTo = append(q.RefersTo, targets...)
		case watch:
			return badRequest("refersTo: a watch follows one hop of references, and no pod's services")
		default:
			if err := r.referrers(opts.refersTo); err != nil {
				return err
			}
		}
	}
	if opts.referredBy != nil {
		if err := r.referredBy(*opts.referredBy); err != nil {
			return err
		}
	}
	// As parseListOptions does, for the watch cache, which validates
	// nothing.
	return q.Validate()
}

// serviceKind and podKind are the ends of a selector's relation.
var (
	serviceKind = schema.GroupKind{Kind: "Service"}
	podKind     = schema.GroupKind{Kind: "Pod"}
)

// relating is the resolution of one list's relations, of the listed
// resource: every object is read at the list's revision (its continue
// token's), 0 the latest, as the user may read it.
type relating struct {
	h      *Handler
	w      http.ResponseWriter
	req    *request
	q      *storage.ListQuery
	rev    int64
	hops   int
	listed storage.Resource
}

// node is an object a walk reached, with the resource it was read as.
type node struct {
	storage.Object
	res storage.Resource
}

func groupKindOf(res storage.Resource) schema.GroupKind {
	return schema.GroupKind{Group: res.GVR.Group, Kind: res.Kind}
}

// target is an object a reference names, in a cluster ("" in any the
// list reads).
type target struct {
	cluster string
	ref     storage.Reference
}

func (t target) groupKind() schema.GroupKind {
	return schema.GroupKind{Group: t.ref.Group, Kind: t.ref.Kind}
}

// targets resolves the ends of refersTo, and reports whether they must
// be walked: past one hop, or to the services that select a pod.
func (r *relating) targets(ends []relationEnd) ([]storage.Reference, bool, error) {
	walk := r.hops > 1
	var out []storage.Reference
	for _, end := range ends {
		kind, err := r.h.resolveType(end)
		if err != nil {
			return nil, false, err
		}
		walk = walk || groupKindOf(r.listed) == serviceKind && kind.groupKind() == podKind
		out = append(out, storage.Reference{Group: kind.Group, Kind: kind.Kind, Namespace: end.namespace, Name: end.name})
	}
	return out, walk, nil
}

// ends reads the objects end names that the user may read: in the
// clusters the list reads and, unless end names a namespace, its
// namespaces.
func (r *relating) ends(end relationEnd) ([]node, error) {
	kind, err := r.h.resolveType(end)
	if err != nil {
		return nil, err
	}
	if kind.served == nil {
		return nil, badf("%s %q: no cluster syncs %s", end.param, end, kind.Resource)
	}
	q := storage.ListQuery{GVR: kind.served.GVR, Clusters: r.q.Clusters, Names: []string{end.name}}
	switch {
	case !kind.served.Namespaced:
	case end.namespace != "":
		q.Namespaces = []string{end.namespace}
	default:
		q.Namespaces = r.q.Namespaces
	}
	if err := r.h.restrict(r.w, r.req.r, "list", kind.served.GVR.GroupResource(), &q); err != nil {
		return nil, err
	}
	return r.readAll(*kind.served, &q)
}

// readAll reads every object of res q selects, at most maxRelated.
func (r *relating) readAll(res storage.Resource, q *storage.ListQuery) ([]node, error) {
	q.Revision, q.History, q.Limit = r.rev, r.q.History, unpagedPage
	var out []node
	for {
		page, err := r.h.reads().List(r.req.r.Context(), q, watchcache.Freshness{})
		if err != nil {
			return nil, err
		}
		for _, o := range page.Objects {
			out = append(out, node{o, res})
		}
		if len(out) > maxRelated {
			return nil, tooManyRelated()
		}
		if q.Continue = page.Continue; q.Continue == "" {
			return out, nil
		}
	}
}

func tooManyRelated() error {
	return badf("the relation reaches more than %d objects: name fewer, or fewer hops", maxRelated)
}

// readable narrows q, of res, to what the user may list, and reports
// whether anything is left: a walk leaves out what the user may not read.
func (r *relating) readable(res storage.Resource, q *storage.ListQuery) (bool, error) {
	err := r.h.restrict(r.w, r.req.r, "list", res.GVR.GroupResource(), q)
	if apierrors.IsForbidden(err) {
		return false, nil
	}
	return err == nil, err
}

// referredBy selects, of the listed resource, the objects end's objects
// refer to, within the hops.
func (r *relating) referredBy(end relationEnd) error {
	frontier, err := r.ends(end)
	if err != nil {
		return err
	}
	listed := groupKindOf(r.listed)
	objects := []storage.ObjectName{}
	seen := map[target]bool{}
	for hop := 1; len(frontier) > 0; hop++ {
		var next []target
		for _, n := range frontier {
			out, err := r.referencesOf(n)
			if err != nil {
				return err
			}
			for _, t := range out {
				if seen[t] {
					continue
				}
				seen[t] = true
				next = append(next, t)
				if t.groupKind() == listed {
					objects = append(objects, storage.ObjectName{Cluster: t.cluster, Namespace: t.ref.Namespace, Name: t.ref.Name})
				}
			}
		}
		if len(seen) > maxRelated {
			return tooManyRelated()
		}
		if hop == r.hops {
			break
		}
		if frontier, err = r.read(next); err != nil {
			return err
		}
	}
	r.q.Objects = intersectObjects(r.q.Objects, objects)
	return nil
}

// referencesOf is what n refers to: its references and, for a Service,
// the pods it selects.
func (r *relating) referencesOf(n node) ([]target, error) {
	obj, err := decodeObject(n.Data)
	if err != nil {
		return nil, err
	}
	var out []target
	for _, ref := range storage.ReferencesOf(n.res.GVR.GroupResource(), obj) {
		out = append(out, target{n.Cluster, ref})
	}
	sel := serviceSelector(obj)
	pods, ok := r.served(podKind)
	if groupKindOf(n.res) != serviceKind || sel == nil || !ok {
		return out, nil
	}
	reqs, _ := sel.Requirements()
	q := storage.ListQuery{GVR: pods.GVR, Clusters: []string{n.Cluster}, Namespaces: []string{n.Namespace}, Labels: reqs}
	selected, err := r.readAll(pods, &q)
	for _, p := range selected {
		out = append(out, target{p.Cluster, storage.Reference{Kind: podKind.Kind, Namespace: p.Namespace, Name: p.Name}})
	}
	return out, err
}

// served is the resource that serves the objects of gk, at its
// preferred version, when a cluster syncs them.
func (r *relating) served(gk schema.GroupKind) (storage.Resource, bool) {
	for _, res := range r.h.registry.Resources("") {
		if groupKindOf(res) == gk {
			return res, true // sorted preferred version first
		}
	}
	return storage.Resource{}, false
}

// read reads the objects of targets that are synced and that the user may
// read.
func (r *relating) read(targets []target) ([]node, error) {
	byKind := map[schema.GroupKind][]storage.ObjectName{}
	for _, t := range targets {
		byKind[t.groupKind()] = append(byKind[t.groupKind()], storage.ObjectName{Cluster: t.cluster, Namespace: t.ref.Namespace, Name: t.ref.Name})
	}
	var out []node
	for gk, objects := range byKind {
		res, ok := r.served(gk)
		if !ok {
			continue
		}
		q := storage.ListQuery{GVR: res.GVR, Clusters: r.q.Clusters, Objects: objects}
		if ok, err := r.readable(res, &q); !ok {
			if err != nil {
				return nil, err
			}
			continue
		}
		nodes, err := r.readAll(res, &q)
		if err != nil {
			return nil, err
		}
		if out = append(out, nodes...); len(out) > maxRelated {
			return nil, tooManyRelated()
		}
	}
	return out, nil
}

// referrers selects, of the listed resource, the objects that refer to
// ends within the hops: each hop finds, in every synced resource (the
// listed one alone at the last), the objects that refer to one the hop
// before found, in its cluster, and the services that select its pods.
func (r *relating) referrers(ends []relationEnd) error {
	targets, _, err := r.targets(ends)
	if err != nil {
		return err
	}
	var level []target
	for _, ref := range targets {
		level = append(level, target{ref: ref})
	}
	var pods []node // of the level: the services that select them refer to them
	for i, end := range ends {
		if targets[i].Kind == podKind.Kind && targets[i].Group == podKind.Group {
			if _, ok := r.served(podKind); ok {
				found, err := r.ends(end)
				if err != nil {
					return err
				}
				pods = append(pods, found...)
			}
		}
	}
	listed := groupKindOf(r.listed)
	objects := []storage.ObjectName{}
	seen := map[target]bool{}
	for hop := 1; len(level) > 0 || len(pods) > 0; hop++ {
		resources := []storage.Resource{r.listed}
		if hop < r.hops {
			resources = r.synced()
		}
		var found []node
		for _, res := range resources {
			nodes, err := r.referring(res, level, pods)
			if err != nil {
				return err
			}
			found = append(found, nodes...)
		}
		level, pods = nil, nil
		for _, n := range found {
			t := target{n.Cluster, storage.Reference{Group: n.res.GVR.Group, Kind: n.res.Kind, Namespace: n.Namespace, Name: n.Name}}
			if seen[t] {
				continue
			}
			seen[t] = true
			level = append(level, t)
			if t.groupKind() == podKind {
				pods = append(pods, n)
			}
			if t.groupKind() == listed {
				objects = append(objects, storage.ObjectName{Cluster: n.Cluster, Namespace: n.Namespace, Name: n.Name})
			}
		}
		if len(seen) > maxRelated {
			return tooManyRelated()
		}
		if hop == r.hops {
			break
		}
	}
	r.q.Objects = intersectObjects(r.q.Objects, objects)
	return nil
}

// synced are the resources synced, each at its preferred version.
func (r *relating) synced() []storage.Resource {
	var out []storage.Resource
	for _, res := range r.h.registry.Resources("") { // preferred version first
		if !slices.ContainsFunc(out, func(o storage.Resource) bool { return o.GVR.GroupResource() == res.GVR.GroupResource() }) {
			out = append(out, res)
		}
	}
	return out
}

// referring reads the objects of res that the user may read and that
// refer to one of level in its cluster, or, for services, select one of
// pods.
func (r *relating) referring(res storage.Resource, level []target, pods []node) ([]node, error) {
	var out []node
	if len(level) > 0 {
		q := storage.ListQuery{GVR: res.GVR, Clusters: r.q.Clusters}
		for _, t := range level {
			if !slices.Contains(q.RefersTo, t.ref) {
				q.RefersTo = append(q.RefersTo, t.ref)
			}
		}
		if len(q.RefersTo) > storage.MaxListValues {
			return nil, tooManyRelated()
		}
		ok, err := r.readable(res, &q)
		if err != nil || !ok {
			return nil, err
		}
		candidates, err := r.readAll(res, &q)
		if err != nil {
			return nil, err
		}
		for _, n := range candidates {
			if refers, err := n.refersToAny(level); err != nil || refers {
				out = append(out, n)
			}
		}
	}
	if groupKindOf(res) != serviceKind {
		return out, nil
	}
	for _, p := range pods {
		q := storage.ListQuery{GVR: res.GVR, Clusters: []string{p.Cluster}, Namespaces: []string{p.Namespace}}
		ok, err := r.readable(res, &q)
		if err != nil || !ok {
			return out, err
		}
		services, err := r.readAll(res, &q)
		if err != nil {
			return nil, err
		}
		for _, s := range services {
			obj, err := decodeObject(s.Data)
			if err != nil {
				return nil, err
			}
			if sel := serviceSelector(obj); sel != nil && sel.Matches(labels.Set(p.Labels)) {
				out = append(out, s)
			}
		}
	}
	return out, nil
}

// refersToAny reports whether n refers to one of level in its cluster.
func (n node) refersToAny(level []target) (bool, error) {
	obj, err := decodeObject(n.Data)
	if err != nil {
		return false, err
	}
	for _, ref := range storage.ReferencesOf(n.res.GVR.GroupResource(), obj) {
		if slices.ContainsFunc(level, func(t target) bool {
			return (t.cluster == "" || t.cluster == n.Cluster) && t.ref.MatchesValue(ref.Value())
		}) {
			return true, nil
		}
	}
	return false, nil
}

// serviceSelector is the selector of a Service's spec, nil when it has
// none, as kube's endpoints controllers read it: a Service without one
// selects no pod (its endpoints are managed otherwise).
func serviceSelector(obj map[string]any) labels.Selector {
	set, found, err := unstructured.NestedStringMap(obj, "spec", "selector")
	if err != nil || !found || len(set) == 0 {
		return nil
	}
	sel, err := labels.ValidatedSelectorFromSet(set)
	if err != nil {
		return nil // a member's object kube-apiserver would not have taken
	}
	return sel
}

// decodeObject parses a stored object's JSON.
func decodeObject(data []byte) (map[string]any, error) {
	var obj map[string]any
	if err := json.Unmarshal(data, &obj); err != nil {
		return nil, fmt.Errorf("decoding a stored object: %w", err)
	}
	return obj, nil
}

// intersectObjects is the objects of both lists, a nil list standing for
// every object.
func intersectObjects(a, b []storage.ObjectName) []storage.ObjectName {
	if a == nil {
		return b
	}
	return slices.DeleteFunc(a, func(o storage.ObjectName) bool { return !slices.Contains(b, o) })
}
