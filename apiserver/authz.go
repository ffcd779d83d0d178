package apiserver

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync/atomic"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/apiserver/pkg/authorization/authorizer"
	"k8s.io/apiserver/pkg/authorization/path"
	"k8s.io/apiserver/pkg/authorization/union"
	apirequest "k8s.io/apiserver/pkg/endpoints/request"
	"k8s.io/klog/v2"

	searchv1alpha1 "github.com/panorama-io/panorama/apis/search/v1alpha1"
	"github.com/panorama-io/panorama/storage"
)

// Panorama authorizes every member read itself, by host RBAC (in process
// or asked of the host, as --authorization-mode says: hostauthz), with
// attributes it builds (see check): verb get, list or watch; API group
// search.panorama.io; resource the member resource as kubectl spells it
// ("pods", "deployments.apps"); namespace the member namespace ("" across
// namespaces, as kube asks for -A); name the cluster. RBAC so grants a
// resource type everywhere (a ClusterRole), in one namespace of every
// cluster (a RoleBinding), or in some clusters (resourceNames, which RBAC
// matches for list and watch too since the name is set).
//
// The empty name and namespace mean "every", as in kube: a rule with
// resourceNames never matches an empty name, nor a RoleBinding's rule an
// empty namespace. So one check with name "" answers for every cluster,
// and decide asks it first: a grant across clusters or namespaces costs
// one check however many clusters exist or the request names.

// clustersResource is the attribute resource of seeing a cluster at all
// (its discovery): get "clusters" named after it.
const clustersResource = "clusters"

// pathShapeNames are the names the host sees in every deprecated path
// (.../resources/api/v1/pods is "resources/v1" named "api"), which every
// user is granted for any resource: a cluster so named would be granted
// too, so nobody may read one.
var pathShapeNames = map[string]bool{"api": true, "apis": true, "clusters": true}

// maxAuthorizationChecks bounds the checks one request makes. A check the
// host's RBAC in process does not allow is a SubjectAccessReview in mode
// Webhook, unless the delegated authorizer's cache has the answer, and the
// host's client is shared by every request of the server, so that one
// request must not take it for long.
const maxAuthorizationChecks = 1000

// errTooManyChecks refuses a request that would need more checks. It is a
// 400, not a 429, since the same request would need as many again: a 429
// would have client-go retry it by itself.
var errTooManyChecks = apierrors.NewBadRequest(fmt.Sprintf("answering this request needs more than %d authorization checks: "+
	"name fewer clusters or namespaces, or ask for a grant across clusters or namespaces", maxAuthorizationChecks))

type checkBudgetKey struct{}

// withCheckBudget gives the checks of r their bound, maxAuthorizationChecks.
func withCheckBudget(r *http.Request) *http.Request {
	left := new(atomic.Int32)
	left.Store(maxAuthorizationChecks)
	return r.WithContext(context.WithValue(r.Context(), checkBudgetKey{}, left))
}

// memberResource is how a member resource type is named in attributes.
func memberResource(gr schema.GroupResource) string {
	if gr.Group == "" {
		return gr.Resource
	}
	return gr.Resource + "." + gr.Group
}

// check asks the host whether the request's user may verb resource in
// cluster and namespace, each "" for all. It asks nothing once the
// request's context has ended or its checks are spent, and then fails.
// A check that errs is a denial.
func (h *Handler) check(ctx context.Context, verb, resource, cluster, namespace string) (bool, error) {
	if err := ctx.Err(); err != nil {
		return false, err
	}
	if left, ok := ctx.Value(checkBudgetKey{}).(*atomic.Int32); ok && left.Add(-1) < 0 {
		return false, errTooManyChecks
	}
	u, _ := apirequest.UserFrom(ctx)
	decision, _, err := h.authz.Authorize(ctx, authorizer.AttributesRecord{
		User: u, Verb: verb, APIGroup: searchv1alpha1.GroupName, APIVersion: searchv1alpha1.SchemeGroupVersion.Version,
		Resource: resource, Namespace: namespace, Name: cluster, ResourceRequest: true,
	})
	if err != nil {
		klog.FromContext(ctx).Error(err, "Authorizing a member read failed", "verb", verb, "resource", resource, "cluster", cluster, "namespace", namespace)
	}
	return decision == authorizer.DecisionAllow, nil
}

// allowed is check of one cluster the caller knows to exist: a check not
// made is a denial.
func (h *Handler) allowed(ctx context.Context, verb, resource, cluster, namespace string) bool {
	if pathShapeNames[cluster] {
		return false
	}
	ok, _ := h.check(ctx, verb, resource, cluster, namespace)
	return ok
}

// decisions are the host's answers about one verb of one resource, by
// cluster and namespace, "" standing for every cluster or every namespace.
type decisions map[string]map[string]bool

func (d decisions) record(cluster, namespace string, allowed bool) {
	if d[cluster] == nil {
		d[cluster] = map[string]bool{}
	}
	d[cluster][namespace] = allowed
}

// allow reports whether the answers cover namespace of cluster.
func (d decisions) allow(cluster, namespace string) bool {
	return !pathShapeNames[cluster] && (d.acrossClusters(namespace) || d.allowIn(cluster, namespace))
}

// acrossClusters reports whether the answers cover namespace of every
// cluster.
func (d decisions) acrossClusters(namespace string) bool { return d.allowIn("", namespace) }

// allowIn reports whether the answers about cluster itself cover
// namespace.
func (d decisions) allowIn(cluster, namespace string) bool {
	return d[cluster][""] || d[cluster][namespace]
}

// allowInAsked reports whether the answers about some cluster asked by
// name cover namespace.
func (d decisions) allowInAsked(namespace string) bool {
	for c := range d {
		if c != "" && d.allowIn(c, namespace) {
			return true
		}
	}
	return false
}

// asker asks the host about one verb of one resource, widest question first.
type asker struct {
	h              *Handler
	ctx            context.Context
	verb, resource string
	decisions      decisions
}

// ask asks about namespaces of cluster ("" for every cluster): every
// namespace at once first when there are several, then each.
func (a *asker) ask(cluster string, namespaces []string) error {
	if len(namespaces) > 1 {
		ok, err := a.h.check(a.ctx, a.verb, a.resource, cluster, "")
		if err != nil || ok {
			a.decisions.record(cluster, "", ok)
			return err
		}
	}
	for _, ns := range namespaces {
		ok, err := a.h.check(a.ctx, a.verb, a.resource, cluster, ns)
		if err != nil {
			return err
		}
		a.decisions.record(cluster, ns, ok)
	}
	return nil
}

// askAcross asks about namespaces of every cluster when that can spare
// questions about clusters one by one: when several registered clusters
// are in question (all of them, for clusters none), known those of
// clusters that are. A cluster the registry does not know is never asked
// about by name: it is readable only through a grant across clusters,
// asked about once (of every namespace when several are named), and is
// otherwise answered as any cluster the user may not read, so that naming
// clusters costs nothing unless they exist and tells nothing of whether
// they do.
func (a *asker) askAcross(clusters, known []string, unknown bool, namespaces []string) error {
	switch {
	case len(clusters) == 0 || len(known) > 1:
		return a.ask("", namespaces)
	case unknown && len(namespaces) > 1:
		return a.ask("", []string{""})
	case unknown:
		return a.ask("", namespaces)
	}
	return nil
}

// registered are the clusters of clusters (every one for none) that the
// registry knows, each once, but those nobody may read; unknown reports
// whether clusters names any it does not know.
func (h *Handler) registered(clusters []string) (known []string, unknown bool) {
	if len(clusters) == 0 {
		return slices.DeleteFunc(h.registry.Names(), func(c string) bool { return pathShapeNames[c] }), false
	}
	for _, c := range clusters {
		exists, _, _ := h.registry.Cluster(c)
		switch {
		case !exists:
			unknown = true
		case !pathShapeNames[c] && !slices.Contains(known, c):
			known = append(known, c)
		}
	}
	return known, unknown
}

// decide asks the host what the request's user may verb of resource in
// namespaces (none: across namespaces) of clusters (none: every cluster
// the registry knows): across clusters first (askAcross), then each
// registered cluster for the namespaces not allowed in every one.
func (h *Handler) decide(ctx context.Context, verb, resource string, clusters, namespaces []string) (decisions, error) {
	if len(namespaces) == 0 {
		namespaces = []string{""}
	}
	a := &asker{h: h, ctx: ctx, verb: verb, resource: resource, decisions: decisions{}}
	known, unknown := h.registered(clusters)
	if err := a.askAcross(clusters, known, unknown, namespaces); err != nil {
		return a.decisions, err
	}
	left := slices.DeleteFunc(slices.Clone(namespaces), a.decisions.acrossClusters)
	if len(left) == 0 {
		return a.decisions, nil
	}
	for _, c := range known {
		if err := a.ask(c, left); err != nil {
			return a.decisions, err
		}
	}
	return a.decisions, nil
}

// allowedInAny reports whether the request's user may verb resource in
// namespace of at least one of clusters (none: of any cluster), asked as
// decide asks but stopping at the first cluster that allows it.
func (h *Handler) allowedInAny(ctx context.Context, verb, resource string, clusters []string, namespace string) (bool, error) {
	a := &asker{h: h, ctx: ctx, verb: verb, resource: resource, decisions: decisions{}}
	known, unknown := h.registered(clusters)
	namespaces := []string{namespace}
	if err := a.askAcross(clusters, known, unknown, namespaces); err != nil || a.decisions.acrossClusters(namespace) {
		return a.decisions.acrossClusters(namespace), err
	}
	for _, c := range known {
		if err := a.ask(c, namespaces); err != nil || a.decisions.allow(c, namespace) {
			return a.decisions.allow(c, namespace), err
		}
	}
	return false, nil
}

// forbidden is the 403 of a read refused. It names the namespaces and
// clusters the request named, and no other: a user learns no cluster's
// name from it, nor whether the clusters they named exist.
func forbidden(ctx context.Context, verb string, gr schema.GroupResource, namespaces, clusters []string) error {
	name := "anonymous"
	if u, ok := apirequest.UserFrom(ctx); ok {
		name = u.GetName()
	}
	where := "in any namespace"
	if len(namespaces) > 0 {
		where = "in namespaces " + strings.Join(namespaces, ", ")
	}
	of := "of any cluster"
	if len(clusters) > 0 {
		of = "of clusters " + strings.Join(clusters, ", ") + " (or they do not exist)"
	}
	return apierrors.NewForbidden(schema.GroupResource{Group: searchv1alpha1.GroupName, Resource: memberResource(gr)}, "",
		fmt.Errorf("user %q cannot %s %s %s %s", name, verb, memberResource(gr), where, of))
}

// authorizeIn authorizes a read in namespace ("" across namespaces) of one
// cluster, as restrict does a query of that cluster and namespace: the
// same checks, the same 403.
func (h *Handler) authorizeIn(ctx context.Context, verb string, gr schema.GroupResource, cluster, namespace string) error {
	var namespaces []string
	if namespace != "" {
		namespaces = []string{namespace}
	}
	d, err := h.decide(ctx, verb, memberResource(gr), []string{cluster}, namespaces)
	if err != nil {
		return err
	}
	if !d.allow(cluster, namespace) {
		return forbidden(ctx, verb, gr, namespaces, []string{cluster})
	}
	return nil
}

// restrict narrows q to what the user may verb: the clusters asked (all the
// registry knows when none) and, when asked, namespaces. A namespace denied
// in every cluster is left out; then a cluster is kept only if every
// namespace left is allowed in it, since one query selects the product of
// its clusters and namespaces. It fails with 403 when nothing is left, and
// warns of what it leaves out in terms that depend only on what the
// request named and on the user's grants: how many of the clusters named,
// and across all clusters only that the user's grants are per cluster,
// never how many clusters there are.
func (h *Handler) restrict(w http.ResponseWriter, r *http.Request, verb string, gr schema.GroupResource, q *storage.ListQuery) error {
	if slices.Equal(q.Clusters, []string{matchNothing}) {
		return nil // the path and the parameters disagree: nothing to read
	}
	resource := memberResource(gr)
	d, err := h.decide(r.Context(), verb, resource, q.Clusters, q.Namespaces)
	if err != nil {
		return err
	}
	clusters := q.Clusters
	if len(clusters) == 0 {
		clusters = h.registry.Names()
	}
	namespaces := q.Namespaces
	if len(namespaces) == 0 {
		namespaces = []string{""}
	}
	// Only clusters asked about by name have answers of their own; the
	// others (clusters that do not exist among them) have those across
	// clusters.
	var keptNamespaces []string
	for _, ns := range namespaces {
		if d.acrossClusters(ns) || d.allowInAsked(ns) {
			keptNamespaces = append(keptNamespaces, ns)
		}
	}
	allAcross := !slices.ContainsFunc(keptNamespaces, func(ns string) bool { return !d.acrossClusters(ns) })
	var kept []string
	for _, c := range clusters {
		_, asked := d[c]
		switch {
		case pathShapeNames[c] || len(keptNamespaces) == 0:
		case !asked && allAcross, asked && !slices.ContainsFunc(keptNamespaces, func(ns string) bool { return !d.allow(c, ns) }):
			kept = append(kept, c)
		}
	}
	if len(kept) == 0 {
		return forbidden(r.Context(), verb, gr, q.Namespaces, q.Clusters)
	}
	switch {
	case len(q.Clusters) > len(kept):
		warn(w, fmt.Sprintf("%d clusters left out of %s: you may not %s it there, or they do not exist", len(q.Clusters)-len(kept), resource, verb))
	case len(q.Clusters) == 0 && !allAcross:
		warn(w, fmt.Sprintf("clusters you may not %s %s in are left out: you have no grant of it across clusters", verb, resource))
	}
	if n := len(namespaces) - len(keptNamespaces); n > 0 {
		warn(w, fmt.Sprintf("%d namespaces left out of %s: you may not %s them in any cluster", n, resource, verb))
	}
	q.Clusters = kept
	if len(q.Namespaces) > 0 {
		q.Namespaces = keptNamespaces
	}
	return nil
}

// isAnonymous reports whether u is a user no authenticator vouched for.
func isAnonymous(u user.Info) bool {
	return u == nil || u.GetName() == user.Anonymous || slices.Contains(u.GetGroups(), user.AllUnauthenticated)
}

// publicInfoPaths are what kube-apiserver serves anonymous users (RBAC's
// system:public-info-viewer).
var publicInfoPaths = []string{"/healthz", "/livez", "/readyz", "/version", "/version/"}

// serverAuthorizer is the generic server's authorizer: anonymous users are
// refused everything but public paths before any check, member reads are
// the handler's to authorize (handledByPanorama), and host, the host's
// authorization as hostauthz composes it, decides the rest and lets
// alwaysAllowPaths pass.
func serverAuthorizer(host authorizer.Authorizer, alwaysAllowPaths []string) (authorizer.Authorizer, error) {
	public, err := path.NewAuthorizer(append(slices.Clone(alwaysAllowPaths), publicInfoPaths...))
	if err != nil {
		return nil, err
	}
	return union.New(
		union.NamedAuthorizer{AuthorizerName: "anonymous", Authorizer: refuseAnonymous(public)},
		union.NamedAuthorizer{AuthorizerName: "panorama", Authorizer: handledByPanorama},
		union.NamedAuthorizer{AuthorizerName: "host", Authorizer: host},
	)
}

// refuseAnonymous denies anonymous users every path public does not allow,
// so that their requests cost no SubjectAccessReview: the generic server
// answers 403, as kube-apiserver answers anonymous requests RBAC does not
// grant.
func refuseAnonymous(public authorizer.Authorizer) authorizer.Authorizer {
	return authorizer.AuthorizerFunc(func(ctx context.Context, a authorizer.Attributes) (authorizer.Decision, string, error) {
		if !isAnonymous(a.GetUser()) {
			return authorizer.DecisionNoOpinion, "", nil
		}
		if d, _, _ := public.Authorize(ctx, a); d == authorizer.DecisionAllow {
			return authorizer.DecisionNoOpinion, "", nil
		}
		return authorizer.DecisionDeny, "Panorama serves anonymous users nothing but " + strings.Join(publicInfoPaths, ", "), nil
	})
}

// handledByPanorama lets the generic server's authorization filter pass
// member reads, which the handler authorizes per cluster, namespace and
// resource type: the request info of those paths (see requestInfoResolver)
// names only Panorama's own resources, which no RBAC rule should grant.
var handledByPanorama = authorizer.AuthorizerFunc(func(_ context.Context, a authorizer.Attributes) (authorizer.Decision, string, error) {
	if a.IsResourceRequest() && a.GetAPIGroup() == searchv1alpha1.GroupName &&
		(a.GetResource() == "resources" || a.GetResource() == "collectionresources") &&
		(a.GetVerb() == "get" || a.GetVerb() == "list" || a.GetVerb() == "watch") {
		return authorizer.DecisionAllow, "Panorama authorizes member reads per cluster, namespace and resource", nil
	}
	return authorizer.DecisionNoOpinion, "", nil
})

// seesCluster reports whether the request's user may see cluster at all:
// it exists and they may get "clusters" named after it. Who may not is
// answered 404, as for a cluster that does not exist.
func (h *Handler) seesCluster(r *http.Request, cluster string) bool {
	exists, _, _ := h.registry.Cluster(cluster)
	return exists && h.allowed(r.Context(), "get", clustersResource, cluster, "")
}

// viewClusters are the clusters of the view of cluster: it alone, or every
// cluster the registry knows for the view across clusters ("").
func (h *Handler) viewClusters(cluster string) []string {
	if cluster == "" {
		return h.registry.Names()
	}
	return []string{cluster}
}

// clusterNotFound is the answer to who may not see cluster, the same as
// for a cluster that does not exist.
func clusterNotFound(cluster string) error {
	return apierrors.NewNotFound(schema.GroupResource{Group: "cluster.panorama.io", Resource: "clusters"}, cluster)
}
