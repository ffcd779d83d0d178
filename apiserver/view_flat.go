package apiserver

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/tidwall/gjson"
	"github.com/tidwall/sjson"
	authorizationv1 "k8s.io/api/authorization/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/selection"
	apirequest "k8s.io/apiserver/pkg/endpoints/request"

	searchv1alpha1 "github.com/panorama-io/panorama/apis/search/v1alpha1"
	"github.com/panorama-io/panorama/apiserver/watchcache"
	"github.com/panorama-io/panorama/storage"
)

// The flat view (ViewPath(FlatClusters) of search/v1alpha1) is the view across clusters in
// which no two objects share a namespace and name, for clients that key
// objects by them: informers, k9s, anything with a map of namespace/name.
// On the all-clusters view, pod db-0 of namespace shop in clusters east
// and west is one key, and such a client keeps one of the two.
//
// Here every member namespace is <cluster>.<namespace> (metadata.namespace
// of namespaced objects, and the name of Namespace objects), and every
// other cluster-scoped object is named <cluster>.<name>. Member namespaces
// are DNS labels, without dots, so a flat namespace splits at its last dot
// whatever the cluster's name. A member that says otherwise is not
// believed: namespace "b.c" of cluster "a" would read as namespace "c" of
// cluster "a.b", so its objects in it are left out of this view (see
// flattens). Other cluster-scoped names may hold dots, as
// cluster names may: a flat name is split at each dot whose left part is a
// known cluster, and every such split is asked for. Only clusters named as
// dotted prefixes of each other ("prod" and "prod.eu") can show two objects
// under one flat name (a node eu.n1 of prod and a node n1 of prod.eu).
//
// Requests are translated into those of the all-clusters view: the path's
// namespace, the cluster-scoped name of a get, the namespaces and names
// search parameters, and field selectors on metadata.namespace,
// metadata.name and involvedObject.namespace become clusters and member
// values. What one query cannot select, since it selects the product of
// its clusters and namespaces (namespaces=east.shop,west.web, a != on a
// flat value, a name with several splits), is selected by the query's
// product and filtered by key before anything is sent; pages may then come
// short, with their continue token, as the list API allows. Answers are
// translated back: objects of get, list and watch, the objects in Table
// rows, the namespaces counts group by, and the cluster and namespace that
// self reviews and subresource refusals speak of. Authorization is that of
// the all-clusters view on the translated query.

// flatNamespace is how the flat view shows a namespace of cluster: ""
// (cluster-scoped objects have none) stays "".
func flatNamespace(cluster, namespace string) string {
	if namespace == "" {
		return ""
	}
	return cluster + "." + namespace
}

// splitFlatNamespace is the cluster and member namespace of a flat
// namespace: split at the last dot, since member namespaces have none.
func splitFlatNamespace(flat string) (cluster, namespace string, ok bool) {
	i := strings.LastIndexByte(flat, '.')
	if i <= 0 || i == len(flat)-1 {
		return "", "", false
	}
	return flat[:i], flat[i+1:], true
}

// memberKey is a cluster and a member value (a namespace, a name).
type memberKey struct{ cluster, value string }

// splitFlatName is every cluster and member name that the flat name of a
// cluster-scoped object can stand for: one per known cluster that, with a
// dot, begins it.
func splitFlatName(flat string, clusters []string) []memberKey {
	var out []memberKey
	for _, c := range clusters {
		if name, ok := strings.CutPrefix(flat, c+"."); ok && name != "" {
			out = append(out, memberKey{c, name})
		}
	}
	return out
}

// flatView is the translation of one request of the flat view.
type flatView struct {
	clusters []string // the registry's, when the request came
	// keep filters what the query selects beyond what it asked (see
	// above); nil keeps everything.
	keep func(o *storage.Object) bool
	// namespaceObjects is set when the request is of Namespaces, whose
	// names are member namespaces.
	namespaceObjects bool
	// list reads a page of a query, for a count to find what it must
	// leave out (dottedNamespaces).
	list func(ctx context.Context, q *storage.ListQuery) (*storage.ListResult, error)
}

// newFlatView is the flat view of a request that came when the registry
// knew clusters, reading pages with list.
func newFlatView(clusters []string, list func(context.Context, *storage.ListQuery) (*storage.ListResult, error)) *flatView {
	return &flatView{clusters: clusters, list: list}
}

// cluster is "": the flat view reads every cluster.
func (v *flatView) cluster() string { return "" }

// query translates q, as parsed from a request of the flat view, into
// member terms.
func (v *flatView) query(q *storage.ListQuery, namespaced bool) error {
	v.namespaceObjects = q.GVR.GroupResource() == namespacesResource
	if len(q.Namespaces) > 0 {
		q.Namespaces = v.narrow(q, "metadata.namespace", namespaceKeys(q.Namespaces))
	}
	if len(q.Names) > 0 && !namespaced {
		q.Names = v.narrow(q, "metadata.name", v.nameKeys(q.Names))
	}
	var kept fields.Requirements
	for _, req := range q.Fields {
		var keys []memberKey
		switch {
		case req.Value == "" || (req.Field == "metadata.name" && namespaced):
			kept = append(kept, req) // no namespace, or a name that is not flat
			continue
		case req.Field == "metadata.namespace":
			keys = namespaceKeys([]string{req.Value})
		case req.Field == "involvedObject.namespace":
			if req.Operator == selection.NotEquals {
				// Only keys are at hand to filter by; one flat namespace
				// is one member namespace, so == needs no filter.
				return badf("the flat view cannot select involvedObject.namespace!=%s; select metadata.namespace or in the member's view", req.Value)
			}
			keys = namespaceKeys([]string{req.Value})
		case req.Field == "metadata.name":
			keys = v.nameKeys([]string{req.Value})
		default:
			kept = append(kept, req)
			continue
		}
		if req.Operator == selection.NotEquals {
			v.and(func(o *storage.Object) bool {
				return !hasKey(o, req.Field, keys)
			})
			continue
		}
		if values := v.narrow(q, req.Field, keys); len(values) == 1 {
			req.Value = values[0]
			kept = append(kept, req)
		} // else several, which narrow filters by, or none, which selects nothing
	}
	q.Fields = kept
	return nil
}

// narrow narrows q's clusters to those of keys and filters by field what
// the product of those clusters and the values of keys adds to keys. It
// returns the values, for the caller to select; with no key left, q
// selects nothing.
func (v *flatView) narrow(q *storage.ListQuery, field string, keys []memberKey) []string {
	if len(q.Clusters) > 0 {
		keys = slices.DeleteFunc(keys, func(k memberKey) bool { return !slices.Contains(q.Clusters, k.cluster) })
	}
	if len(keys) == 0 {
		q.Clusters = []string{matchNothing}
		return nil
	}
	var clusters, values []string
	for _, k := range keys {
		clusters, values = append(clusters, k.cluster), append(values, k.value)
	}
	slices.Sort(clusters)
	slices.Sort(values)
	q.Clusters, values = slices.Compact(clusters), slices.Compact(values)
	distinct := map[memberKey]bool{}
	for _, k := range keys {
		distinct[k] = true
	}
	if len(distinct) < len(q.Clusters)*len(values) {
		v.and(func(o *storage.Object) bool { return hasKey(o, field, keys) })
	}
	return values
}

// hasKey reports whether o is of a cluster of keys with that key's value
// of field.
func hasKey(o *storage.Object, field string, keys []memberKey) bool {
	return slices.ContainsFunc(keys, func(k memberKey) bool { return k.cluster == o.Cluster && o.HasFieldValue(field, k.value) })
}

func (v *flatView) and(keep func(o *storage.Object) bool) {
	if prev := v.keep; prev != nil {
		v.keep = func(o *storage.Object) bool { return prev(o) && keep(o) }
		return
	}
	v.keep = keep
}

// namespaceKeys are the clusters and member namespaces of flat namespaces;
// a value that is none is left out.
func namespaceKeys(flat []string) []memberKey {
	var out []memberKey
	for _, f := range flat {
		if c, ns, ok := splitFlatNamespace(f); ok {
			out = append(out, memberKey{c, ns})
		}
	}
	return out
}

func (v *flatView) nameKeys(flat []string) []memberKey {
	var out []memberKey
	for _, f := range flat {
		out = append(out, splitFlatName(f, v.clusters)...)
	}
	return out
}

// page filters and translates a page read for the flat view. A page that
// was filtered, or that left objects out, has no remaining count, which
// counted what it dropped.
func (v *flatView) page(page *storage.ListResult) error {
	n := len(page.Objects)
	page.Objects = slices.DeleteFunc(page.Objects, func(o storage.Object) bool {
		return !v.flattens(&o) || (v.keep != nil && !v.keep(&o))
	})
	if v.keep != nil || len(page.Objects) < n {
		page.RemainingCount = nil
	}
	for i := range page.Objects {
		if err := flatten(&page.Objects[i]); err != nil {
			return err
		}
	}
	return nil
}

// event filters and translates a watch event of the flat view: false for
// one to leave out. Bookmarks pass as they are.
func (v *flatView) event(e *watchcache.Event) (bool, error) {
	if e.Object == nil {
		return true, nil
	}
	if !v.flattens(e.Object) || (v.keep != nil && !v.keep(e.Object)) {
		return false, nil
	}
	o := *e.Object // the cache's own is shared with every watch
	e.Object = &o
	return true, flatten(e.Object)
}

// namespacesResource is the resource of Namespace objects.
var namespacesResource = schema.GroupResource{Resource: "namespaces"}

// flattens reports whether o has a place in the flat view: whether its
// member namespace (a Namespace's own name) has no dot, as every namespace
// kube-apiserver accepts (a DNS label). One with a dot would split back
// into another cluster's namespace ("b.c" of "a" into "c" of "a.b").
func (v *flatView) flattens(o *storage.Object) bool {
	ns := o.Namespace
	if v.namespaceObjects {
		ns = o.Name
	}
	return !strings.Contains(ns, ".")
}

// count translates q, the count of a list of the flat view (whose query
// it translated), and returns what translates its answer. A count counts
// what its list returns: in flat namespaces, and never the objects of a
// namespace that does not flatten. So a count of a namespaced resource
// groups by cluster and namespace too, terms added when not asked; the
// groups in a namespace that does not flatten are left out, and the
// added terms taken off the answer, merging the groups they told apart.
// A count of Namespace objects leaves out, by name, those that do not
// flatten. A query that the view must filter (see above) cannot be
// counted by the store: 400.
func (v *flatView) count(ctx context.Context, q *storage.CountQuery, namespaced bool) (func(*storage.CountResult), error) {
	if v.keep != nil {
		return nil, badRequest("the flat view cannot count this selection in one query: it selects other namespaces (or names) " +
			"in each cluster, or leaves one out with !=; count each cluster apart (namespaces=east.a,east.b) or in its view (" +
			searchv1alpha1.ViewPath("<cluster>") + "/...)")
	}
	if v.namespaceObjects {
		if err := v.leaveOutDottedNamespaces(ctx, &q.Query); err != nil {
			return nil, err
		}
	}
	if !namespaced {
		return func(*storage.CountResult) {}, nil // cluster-scoped objects have no namespace to translate
	}
	terms, err := flatTerms(q.GroupBy)
	if err != nil {
		return nil, err
	}
	limit := cmp.Or(q.Limit, storage.DefaultCountLimit)
	if terms.merges() {
		q.Limit = storage.MaxLimit // groups are merged, then limited
	}
	q.GroupBy = terms.all
	return func(res *storage.CountResult) { terms.translate(res, limit) }, nil
}

// leaveOutDottedNamespaces narrows q, of Namespace objects, to those that
// flatten: a store counts by what a query selects, and no query selects
// names without a dot, so the dotted names q selects are read and left
// out one by one. Members whose kube-apiserver validates namespaces have
// none; the query's limits bound how many a member may claim (400).
func (v *flatView) leaveOutDottedNamespaces(ctx context.Context, q *storage.ListQuery) error {
	dotted, err := v.dottedNamespaces(ctx, *q)
	if err != nil {
		return err
	}
	reqs := slices.Clip(q.Fields) // q's own are the parsed request's
	for _, name := range dotted {
		reqs = append(reqs, fields.Requirement{Field: "metadata.name", Operator: selection.NotEquals, Value: name})
	}
	q.Fields = reqs
	return q.Validate()
}

// dottedNamespaces are the names with a dot of the Namespace objects q
// selects, sorted, read page by page.
func (v *flatView) dottedNamespaces(ctx context.Context, q storage.ListQuery) ([]string, error) {
	q.Limit, q.OrderBy = storage.MaxLimit, nil
	if q.FuzzyName == "" {
		q.FuzzyName = "." // only the names to leave out, when nothing else selects by name
	}
	var names []string
	for {
		page, err := v.list(ctx, &q)
		if err != nil {
			return nil, err
		}
		for _, o := range page.Objects {
			if !v.flattens(&o) {
				names = append(names, o.Name)
			}
		}
		if q.Continue = page.Continue; q.Continue == "" {
			slices.Sort(names)
			return slices.Compact(names), nil
		}
	}
}

// flatCount are the terms a flat count of a namespaced resource groups
// by: those asked, then namespace and, just before it, cluster, when not
// asked.
type flatCount struct {
	all                []storage.GroupBy
	cluster, namespace int   // their positions in all
	asked              []int // the positions of the terms asked
}

func flatTerms(asked []storage.GroupBy) (*flatCount, error) {
	c := &flatCount{all: slices.Clone(asked)}
	if c.namespace = slices.Index(c.all, storage.GroupBy{Kind: storage.GroupNamespace}); c.namespace < 0 {
		c.all, c.namespace = append(c.all, storage.GroupBy{Kind: storage.GroupNamespace}), len(c.all)
	}
	if c.cluster = slices.Index(c.all, storage.GroupBy{Kind: storage.GroupCluster}); c.cluster < 0 {
		c.all = slices.Insert(c.all, c.namespace, storage.GroupBy{Kind: storage.GroupCluster})
		c.cluster, c.namespace = c.namespace, c.namespace+1
	}
	if len(c.all) > storage.MaxGroupBy {
		return nil, badf("the flat view counts namespaces by cluster too: at most %d terms besides cluster and namespace", storage.MaxGroupBy-2)
	}
	for i, t := range c.all {
		if slices.Contains(asked, t) {
			c.asked = append(c.asked, i)
		}
	}
	return c, nil
}

// merges reports whether taking the added terms off can merge groups:
// unless namespace was asked, which with cluster tells one group.
func (c *flatCount) merges() bool { return !slices.Contains(c.asked, c.namespace) }

// translate makes res the answer in flat terms, at most limit groups.
func (c *flatCount) translate(res *storage.CountResult, limit int) {
	merged := map[string]int{} // a group's values, spelled, to its index
	groups := res.Groups[:0]
	for _, g := range res.Groups {
		if cl, ns := g.Values[c.cluster], g.Values[c.namespace]; cl != nil && ns != nil {
			if strings.Contains(*ns, ".") {
				continue // see flattens
			}
			flat := flatNamespace(*cl, *ns)
			g.Values[c.namespace] = &flat
		}
		g.Values = c.keep(g.Values)
		key := groupKey(g.Values)
		if i, ok := merged[key]; ok {
			groups[i].Count += g.Count
			groups[i].HeldSince = groups[i].HeldSince.Earlier(g.HeldSince)
			continue
		}
		merged[key] = len(groups)
		groups = append(groups, g)
	}
	// By the flat values and the merged counts, which the store's order
	// is not ("a-b.x" sorts before "a.x").
	slices.SortFunc(groups, func(a, b storage.CountGroup) int { return storage.CompareGroups(&a, &b) })
	if len(groups) > limit {
		res.RemainingGroups += int64(len(groups) - limit)
		groups = groups[:limit]
	}
	res.Groups = groups
}

// keep is values without those of the terms added.
func (c *flatCount) keep(values []*string) []*string {
	out := make([]*string, len(c.asked))
	for i, at := range c.asked {
		out[i] = values[at]
	}
	return out
}

// groupKey spells a group's values, a missing one apart from any value.
func groupKey(values []*string) string {
	var b strings.Builder
	for _, v := range values {
		if v == nil {
			b.WriteString("\x00")
			continue
		}
		b.WriteString(strconv.Quote(*v))
	}
	return b.String()
}

// flatten gives o's JSON its flat namespace, or its flat name when it is
// cluster-scoped, and no selfLink, which would name the member's path.
// The JSON is edited where those fields stand (sjson): the rest is copied
// as it is, never decoded (numbers stay exact) nor scanned more than once
// to find the fields, which made flattening a list's objects cost a
// multiple of the list before (BenchmarkList's flat view). o.Data is the store's or the watch cache's,
// valid JSON that other requests share: the edit makes a new copy.
func flatten(o *storage.Object) error {
	path, value := "metadata.name", flatName(o.Cluster, o.Name)
	if o.Namespace != "" {
		path, value = "metadata.namespace", flatNamespace(o.Cluster, o.Namespace)
	}
	data, err := sjson.SetBytes(o.Data, path, value)
	if err != nil {
		return fmt.Errorf("flattening %s/%s: %w", o.Namespace, o.Name, err)
	}
	if gjson.GetBytes(data, "metadata.selfLink").Exists() {
		if data, err = sjson.DeleteBytes(data, "metadata.selfLink"); err != nil {
			return fmt.Errorf("flattening %s/%s: %w", o.Namespace, o.Name, err)
		}
	}
	o.Data = data
	return nil
}

// flatName is how the flat view names a cluster-scoped object of cluster.
func flatName(cluster, name string) string { return cluster + "." + name }

// object is the cluster and member request that a request of the flat
// view naming one object stands for, so that a refused subresource names
// the member's cluster, namespace and object; anything else is left as it
// is.
func (v *flatView) object(info *apirequest.RequestInfo) (string, *apirequest.RequestInfo) {
	if !info.IsResourceRequest || info.Name == "" {
		return "", info
	}
	member := *info
	if info.Namespace != "" {
		c, ns, ok := splitFlatNamespace(info.Namespace)
		if !ok {
			return "", info
		}
		if isNamespaceObject(info) {
			member.Name = ns
		}
		member.Namespace = ns
		member.Path = strings.Replace(info.Path, "/namespaces/"+info.Namespace, "/namespaces/"+ns, 1)
		return c, &member
	}
	keys := splitFlatName(info.Name, v.clusters)
	if len(keys) != 1 {
		return "", info
	}
	member.Name = keys[0].value
	member.Path = strings.Replace(info.Path, "/"+info.Resource+"/"+info.Name, "/"+info.Resource+"/"+member.Name, 1)
	return keys[0].cluster, &member
}

// reviewed is the cluster and the attributes, in member terms, that a self
// access review of the flat view asks about; false when its namespace is
// no flat namespace, where nothing can be read.
func (v *flatView) reviewed(a *authorizationv1.ResourceAttributes) (string, *authorizationv1.ResourceAttributes, bool) {
	if a.Namespace == "" {
		return "", a, true
	}
	c, ns, ok := splitFlatNamespace(a.Namespace)
	if !ok {
		return "", a, false
	}
	member := *a // the review's spec is sent back as asked
	member.Namespace = ns
	return c, &member, true
}

// rulesScope is the cluster and member namespace that a self rules review
// of the flat view asks about. A namespace that is no flat namespace is in
// no cluster, whose view serves nothing but the reviews and discovery.
func (v *flatView) rulesScope(namespace string) (string, string) {
	if namespace == "" {
		return "", namespace
	}
	if c, ns, ok := splitFlatNamespace(namespace); ok {
		return c, ns
	}
	return searchv1alpha1.FlatClusters, namespace
}
