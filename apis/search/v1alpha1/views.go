package v1alpha1

// The views are where Panorama serves the synced clusters as one member
// API server would: ViewPath(cluster) + a member-style path. These are the
// paths whatever writes a kubeconfig for Panorama points a context at, so
// they live here, with the wire types, and not in the server.

// ViewsPrefix is where views are served: ViewsPrefix + "/{cluster}/proxy"
// + a member-style path. The host's kube-apiserver parses such a path as
// the proxy subresource of a search.panorama.io "clusters" object named
// {cluster}, which it counts as long-running (BasicLongRunningRequestCheck),
// as it does nodes/{name}/proxy: its --request-timeout does not cut the
// watches it forwards there. The host needs only `get` of clusters/proxy
// for every request there, watches included (its verb is get whenever the
// path names an object).
const ViewsPrefix = "/apis/" + GroupName + "/" + Version + "/clusters"

// AllClusters is the cluster name of the view across all clusters. No
// Cluster can have it: the names of custom objects are DNS subdomains
// (lowercase letters, digits, '-' and '.'), and "_" is none of those.
const AllClusters = "_all"

// FlatClusters is the cluster name of the flat view, the view across
// clusters in which every member namespace is <cluster>.<namespace>, for
// clients that key objects by namespace/name. No Cluster can have it, as
// AllClusters.
const FlatClusters = "_flat"

// ViewPath is the URL path, on the host, of a view: every cluster for "",
// one cluster otherwise (or FlatClusters). Whatever writes a kubeconfig
// for Panorama points a context's server at the host's address + ViewPath,
// so that views move in one place.
func ViewPath(cluster string) string {
	if cluster == "" {
		cluster = AllClusters
	}
	return ViewsPrefix + "/" + cluster + "/proxy"
}
