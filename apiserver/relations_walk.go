package apiserver

import (
	"encoding/json"
	"fmt"
	"net/http"
	"slices"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/panorama-io/panorama/apiserver/watchcache"
	"github.com/panorama-io/panorama/storage"
)

// serviceKind and podKind are the ends of a selector's relation.
var (
	serviceKind = schema.GroupKind{Kind: "Service"}
	podKind     = schema.GroupKind{Kind: "Pod"}
)

// relating is the resolution of one list's relations, of the listed
// resource: every object is read at the list's revision (its continue
// token's), 0 the latest, as the user may list it.
type relating struct {
	h      *Handler
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
func (r *relating) targets(ends []relationEnd) ([]resolvedEnd, bool, error) {
	walk := r.hops > 1
	var out []resolvedEnd
	for _, end := range ends {
		e, err := r.h.resolveEnd(end)
		if err != nil {
			return nil, false, err
		}
		if end.namespace != "" && !e.kind.Namespaced {
			return nil, false, badf("%s %q: %s are not namespaced", end.param, end, e.kind.Resource)
		}
		walk = walk || groupKindOf(r.listed) == serviceKind && e.groupKind() == podKind
		out = append(out, e)
	}
	return out, walk, nil
}

// served are the resources that serve the objects of gk: every version a
// cluster syncs (storage keeps each cluster's at its own). A built-in
// kind is served by its own resource alone, whatever a member claims of
// another's kind.
func (r *relating) served(gk schema.GroupKind) []storage.Resource {
	known, builtin := storage.ReferenceKindOf(gk)
	var out []storage.Resource
	for _, res := range r.h.registry.Resources("") {
		if builtin && res.GVR.GroupResource() == (schema.GroupResource{Group: known.Group, Resource: known.Resource}) ||
			!builtin && groupKindOf(res) == gk {
			out = append(out, res)
		}
	}
	return out
}

// scoped narrows q, of res, to what the user may list, and reports
// whether anything is left. Its warnings are dropped: they would count
// clusters the request did not name.
func (r *relating) scoped(res storage.Resource, q *storage.ListQuery) (bool, error) {
	err := r.h.restrict(unwarned{}, r.req.r, "list", res.GVR.GroupResource(), q)
	if apierrors.IsForbidden(err) {
		return false, nil
	}
	return err == nil, err
}

// unwarned is a ResponseWriter that only takes headers, and drops them.
type unwarned struct{ http.ResponseWriter }

func (unwarned) Header() http.Header { return http.Header{} }

// ends reads the objects end names, in the clusters the list reads and,
// unless end names a namespace, its namespaces: 403 when the user may
// list them nowhere there.
func (r *relating) ends(end resolvedEnd) ([]node, error) {
	served := r.served(end.groupKind())
	if len(served) == 0 {
		return nil, badf("%s %q: no cluster syncs %s", end.param, end, end.kind.Resource)
	}
	var out []node
	for _, res := range served {
		q := storage.ListQuery{GVR: res.GVR, Clusters: r.q.Clusters, Names: []string{end.name}}
		switch {
		case !res.Namespaced:
		case end.namespace != "":
			q.Namespaces = []string{end.namespace}
		default:
			q.Namespaces = r.q.Namespaces
		}
		namespaces := q.Namespaces
		ok, err := r.scoped(res, &q)
		switch {
		case err != nil:
			return nil, err
		case !ok:
			return nil, forbidden(r.req.r.Context(), "list", res.GVR.GroupResource(), namespaces, nil)
		}
		nodes, err := r.readAll(res, &q)
		if err != nil {
			return nil, err
		}
		out = append(out, nodes...)
	}
	return out, nil
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

// readPermitted is readAll of q where the user may list res (scoped), and
// nothing where they may not: a walk leaves out what the user may not
// list.
func (r *relating) readPermitted(res storage.Resource, q *storage.ListQuery) ([]node, error) {
	ok, err := r.scoped(res, q)
	if err != nil || !ok {
		return nil, err
	}
	return r.readAll(res, q)
}

func tooManyRelated() error {
	return badf("the relation reaches more than %d objects: name fewer, or fewer hops", maxRelated)
}

// referredBy selects, of the listed resource, the objects end's objects
// refer to, within the hops.
func (r *relating) referredBy(end relationEnd) error {
	resolved, err := r.h.resolveEnd(end)
	if err != nil {
		return err
	}
	frontier, err := r.ends(resolved)
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
// the pods it selects that the user may list.
func (r *relating) referencesOf(n node) ([]target, error) {
	obj, err := decodeObject(n.Data)
	if err != nil {
		return nil, err
	}
	var out []target
	for _, ref := range storage.ReferencesOf(n.res.GVR.GroupResource(), obj) {
		out = append(out, target{n.Cluster, ref})
	}
	if groupKindOf(n.res) != serviceKind {
		return out, nil
	}
	sel := serviceSelector(obj)
	if sel == nil {
		return out, nil
	}
	reqs, _ := sel.Requirements()
	for _, pods := range r.served(podKind) {
		q := storage.ListQuery{GVR: pods.GVR, Clusters: []string{n.Cluster}, Namespaces: []string{n.Namespace}, Labels: reqs}
		selected, err := r.readPermitted(pods, &q)
		if err != nil {
			return nil, err
		}
		for _, p := range selected {
			out = append(out, target{p.Cluster, storage.Reference{Kind: podKind.Kind, Namespace: p.Namespace, Name: p.Name}})
		}
	}
	return out, nil
}

// read reads the objects of targets that are synced and that the user may
// list.
func (r *relating) read(targets []target) ([]node, error) {
	byKind := map[schema.GroupKind][]target{}
	for _, t := range targets {
		byKind[t.groupKind()] = append(byKind[t.groupKind()], t)
	}
	var out []node
	for gk, ts := range byKind {
		for _, res := range r.served(gk) {
			q := storage.ListQuery{GVR: res.GVR, Objects: []storage.ObjectName{}}
			for _, t := range ts {
				q.Objects = append(q.Objects, storage.ObjectName{Cluster: t.cluster, Namespace: t.ref.Namespace, Name: t.ref.Name})
				q.Clusters = appendOnce(q.Clusters, t.cluster)
				if res.Namespaced {
					q.Namespaces = appendOnce(q.Namespaces, t.ref.Namespace)
				}
			}
			nodes, err := r.readPermitted(res, &q)
			if err != nil {
				return nil, err
			}
			if out = append(out, nodes...); len(out) > maxRelated {
				return nil, tooManyRelated()
			}
		}
	}
	return out, nil
}

// appendOnce appends v to vs unless vs has it.
func appendOnce(vs []string, v string) []string {
	if slices.Contains(vs, v) {
		return vs
	}
	return append(vs, v)
}

// referrers selects, of the listed resource, the objects that refer to
// ends within the hops: each hop finds, in every synced resource (the
// listed one alone at the last), the objects that refer to one the hop
// before found, in its cluster, and the services that select its pods.
func (r *relating) referrers(ends []resolvedEnd) error {
	var level []target
	var pods []node // of the level: the services that select them refer to them
	for _, end := range ends {
		level = append(level, target{ref: end.reference()})
		if end.groupKind() == podKind {
			found, err := r.ends(end)
			if err != nil {
				return err
			}
			pods = append(pods, found...)
		}
	}
	listed := groupKindOf(r.listed)
	objects := []storage.ObjectName{}
	seen := map[target]bool{}
	for hop := 1; len(level) > 0; hop++ {
		resources := []storage.Resource{r.listed}
		if hop < r.hops {
			resources = r.h.registry.Resources("") // every version: each cluster's objects are at its own
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

// referring reads the objects of res that the user may list and that
// refer to one of level in its cluster, or, for services, that select
// one of pods.
func (r *relating) referring(res storage.Resource, level []target, pods []node) ([]node, error) {
	out, err := r.referringTo(res, level)
	if err != nil || groupKindOf(res) != serviceKind || len(pods) == 0 {
		return out, err
	}
	q := storage.ListQuery{GVR: res.GVR}
	podLabels := make([]labels.Set, len(pods))
	for i, p := range pods {
		q.Clusters = appendOnce(q.Clusters, p.Cluster)
		q.Namespaces = appendOnce(q.Namespaces, p.Namespace)
		// From the object: what a store reads back need not carry them.
		obj, err := decodeObject(p.Data)
		if err != nil {
			return nil, err
		}
		podLabels[i], _, _ = unstructured.NestedStringMap(obj, "metadata", "labels")
	}
	services, err := r.readPermitted(res, &q)
	if err != nil {
		return nil, err
	}
	for _, s := range services {
		obj, err := decodeObject(s.Data)
		if err != nil {
			return nil, err
		}
		sel := serviceSelector(obj)
		for i, p := range pods {
			if sel != nil && p.Cluster == s.Cluster && p.Namespace == s.Namespace && sel.Matches(podLabels[i]) {
				out = append(out, s)
				break
			}
		}
	}
	return out, nil
}

// referringTo reads the objects of res that the user may list and that
// refer to one of level in its cluster: those of the clusters level names
// (all the list reads for a target in any), in the list's namespaces.
func (r *relating) referringTo(res storage.Resource, level []target) ([]node, error) {
	if len(level) == 0 {
		return nil, nil
	}
	q := storage.ListQuery{GVR: res.GVR}
	anyCluster := false
	for _, t := range level {
		if !slices.Contains(q.RefersTo, t.ref) {
			q.RefersTo = append(q.RefersTo, t.ref)
		}
		anyCluster = anyCluster || t.cluster == ""
		q.Clusters = appendOnce(q.Clusters, t.cluster)
	}
	if anyCluster {
		q.Clusters = r.q.Clusters
	}
	if res.Namespaced {
		q.Namespaces = r.q.Namespaces
	}
	if len(q.RefersTo) > storage.MaxListValues {
		return nil, tooManyRelated()
	}
	candidates, err := r.readPermitted(res, &q)
	if err != nil {
		return nil, err
	}
	var out []node
	for _, n := range candidates {
		refers, err := n.refersToAny(level)
		if err != nil {
			return nil, err
		}
		if refers {
			out = append(out, n)
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
// none, as kube's endpoints controllers read it: a Service without one,
// or of type ExternalName, selects no pod (its endpoints are managed
// otherwise, or it has none).
func serviceSelector(obj map[string]any) labels.Selector {
	set, found, err := unstructured.NestedStringMap(obj, "spec", "selector")
	if err != nil || !found || len(set) == 0 {
		return nil
	}
	if typ, _, _ := unstructured.NestedString(obj, "spec", "type"); typ == "ExternalName" {
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
