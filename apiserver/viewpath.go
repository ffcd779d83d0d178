package apiserver

import (
	"fmt"
	"net/http"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	searchv1alpha1 "github.com/panorama-io/panorama/apis/search/v1alpha1"
)

// splitView takes the view prefix off path: the cluster ("" for
// searchv1alpha1.AllClusters) and the member-style rest.
func splitView(path string) (cluster, rest string, ok bool) {
	after, ok := strings.CutPrefix(path, searchv1alpha1.ViewsPrefix+"/")
	if !ok {
		return "", "", false
	}
	cluster, after, _ = strings.Cut(after, "/")
	rest, ok = strings.CutPrefix("/"+after, "/proxy")
	if !ok || cluster == "" || (rest != "" && rest[0] != '/') {
		return "", "", false
	}
	if cluster == searchv1alpha1.AllClusters {
		cluster = ""
	}
	return cluster, rest, true
}

// splitDeprecatedPath takes ResourcesPrefix, the deprecated way to the
// views, off path: the host cuts watches there after its request timeout,
// since it sees them as gets of "resources".
func splitDeprecatedPath(path string) (cluster, rest string, ok bool) {
	rest, ok = strings.CutPrefix(path, ResourcesPrefix)
	if !ok || (rest != "" && rest[0] != '/') {
		return "", "", false
	}
	if after, isCluster := strings.CutPrefix(rest, "/clusters/"); isCluster {
		cluster, rest, _ = strings.Cut(after, "/")
		rest = "/" + rest
		if cluster == "" || cluster == searchv1alpha1.FlatClusters {
			// .../clusters//api/v1/pods names no cluster, it does not mean
			// all; the flat view has only its own path.
			return "", "", false
		}
	}
	return cluster, rest, true
}

// warnDeprecatedPath tells clients of ResourcesPrefix where the view moved
// (kubectl prints the Warning header on every command).
func warnDeprecatedPath(w http.ResponseWriter, path, cluster, rest string) {
	if strings.HasPrefix(path, ResourcesPrefix) {
		warn(w, fmt.Sprintf("%s is deprecated and will be removed: the host cuts its watches after its --request-timeout; use %s",
			ResourcesPrefix, searchv1alpha1.ViewPath(cluster)+rest))
	}
}

// viewsResource tells discovery clients of the host (kubectl api-resources,
// RBAC tools) that views are the proxy subresource of clusters, as kube
// lists nodes/proxy. Only the legacy document lists it: aggregated
// discovery can hold a subresource only under its parent resource, and a
// search.panorama.io "clusters" resource would give kubectl a second
// mapping for `kubectl get clusters` beside cluster.panorama.io's.
var viewsResource = metav1.APIResource{
	Name: "clusters/proxy", Group: "cluster.panorama.io", Version: "v1alpha1", Kind: "Cluster", Verbs: metav1.Verbs{"get"},
}
