package apiserver

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apiserver/pkg/authorization/authorizer"
	apirequest "k8s.io/apiserver/pkg/endpoints/request"
	"k8s.io/klog/v2"

	searchv1alpha1 "github.com/panorama-io/panorama/apis/search/v1alpha1"
	"github.com/panorama-io/panorama/storage"
)

// Panorama authorizes every member read itself, by host RBAC, with
// attributes it builds (see memberAttributes): verb get, list or watch;
// API group search.panorama.io; resource the member resource as kubectl
// spells it ("pods", "deployments.apps"); namespace the member namespace
// ("" across namespaces, as kube asks for -A); name the cluster. RBAC so
// grants a resource type everywhere (a ClusterRole), in one namespace of
// every cluster (a RoleBinding), or in some clusters (resourceNames, which
// RBAC matches for list and watch too since the name is set).

// clustersResource is the attribute resource of seeing a cluster at all
// (its discovery): get "clusters" named after it.
const clustersResource = "clusters"

// pathShapeNames are the names the host sees in every deprecated path
// (.../resources/api/v1/pods is "resources/v1" named "api"), which every
// user is granted for any resource: a cluster so named would be granted
// too, so nobody may read one.
var pathShapeNames = map[string]bool{"api": true, "apis": true, "clusters": true}

// memberResource is how a member resource type is named in attributes.
func memberResource(gr schema.GroupResource) string {
	if gr.Group == "" {
		return gr.Resource
	}
	return gr.Resource + "." + gr.Group
}

// allowed asks the host whether the request's user may verb resource in
// cluster and namespace. A failed check is a denial.
func (h *Handler) allowed(ctx context.Context, verb, resource, cluster, namespace string) bool {
	if pathShapeNames[cluster] {
		return false
	}
	u, _ := apirequest.UserFrom(ctx)
	decision, _, err := h.authz.Authorize(ctx, authorizer.AttributesRecord{
		User: u, Verb: verb, APIGroup: searchv1alpha1.GroupName, APIVersion: searchv1alpha1.SchemeGroupVersion.Version,
		Resource: resource, Namespace: namespace, Name: cluster, ResourceRequest: true,
	})
	if err != nil {
		klog.ErrorS(err, "authorizing a member read", "verb", verb, "resource", resource, "cluster", cluster, "namespace", namespace)
	}
	return decision == authorizer.DecisionAllow
}

func forbidden(ctx context.Context, verb string, gr schema.GroupResource, where string) error {
	name := "anonymous"
	if u, ok := apirequest.UserFrom(ctx); ok {
		name = u.GetName()
	}
	return apierrors.NewForbidden(schema.GroupResource{Group: searchv1alpha1.GroupName, Resource: memberResource(gr)}, "",
		fmt.Errorf("user %q cannot %s %s %s", name, verb, memberResource(gr), where))
}

// restrict narrows q to what the user may verb: the clusters asked (all the
// registry knows when none) and, when asked, namespaces. A namespace denied
// in every cluster is left out; then a cluster is kept only if every
// namespace left is allowed in it, since one query selects the product of
// its clusters and namespaces. It warns of what it leaves out and fails
// with 403 when nothing is left.
func (h *Handler) restrict(w http.ResponseWriter, r *http.Request, verb string, gr schema.GroupResource, q *storage.ListQuery) error {
	if slices.Equal(q.Clusters, []string{matchNothing}) {
		return nil // the path and the parameters disagree: nothing to read
	}
	ctx := r.Context()
	clusters := q.Clusters
	if len(clusters) == 0 {
		clusters = h.registry.Names()
	}
	namespaces := q.Namespaces
	if len(namespaces) == 0 {
		namespaces = []string{""}
	}
	ok := make(map[[2]string]bool, len(clusters)*len(namespaces))
	var keptNamespaces []string
	for _, ns := range namespaces {
		any := false
		for _, c := range clusters {
			allowed := h.allowed(ctx, verb, memberResource(gr), c, ns)
			ok[[2]string{c, ns}] = allowed
			any = any || allowed
		}
		if any {
			keptNamespaces = append(keptNamespaces, ns)
		}
	}
	var kept []string
	for _, c := range clusters {
		all := len(keptNamespaces) > 0
		for _, ns := range keptNamespaces {
			all = all && ok[[2]string{c, ns}]
		}
		if all {
			kept = append(kept, c)
		}
	}
	if len(kept) == 0 {
		where := "in any namespace"
		if len(q.Namespaces) > 0 {
			where = "in namespaces " + strings.Join(q.Namespaces, ", ")
		}
		return forbidden(ctx, verb, gr, fmt.Sprintf("%s of clusters %s", where, strings.Join(clusters, ", ")))
	}
	if n := len(clusters) - len(kept); n > 0 {
		warn(w, fmt.Sprintf("%d clusters left out of %s: you may not %s them there", n, memberResource(gr), verb))
	}
	if n := len(namespaces) - len(keptNamespaces); n > 0 {
		warn(w, fmt.Sprintf("%d namespaces left out of %s: you may not %s them in any cluster", n, memberResource(gr), verb))
	}
	q.Clusters = kept
	if len(q.Namespaces) > 0 {
		q.Namespaces = keptNamespaces
	}
	return nil
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
