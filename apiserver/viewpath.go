package apiserver

// ViewPath is the URL path, on the host, of a view: every cluster for "",
// one cluster otherwise. Whatever writes a kubeconfig for Panorama points a
// context's server at the host's address + ViewPath, so that views move in
// one place.
func ViewPath(cluster string) string {
	if cluster == "" {
		return ResourcesPrefix
	}
	return ResourcesPrefix + "/clusters/" + cluster
}
