package apiserver

import (
	"maps"
	"slices"

	"github.com/panorama-io/panorama/storage"
)

// Every view serves the CustomResourceDefinitions of what it syncs,
// read-only, as apiextensions.k8s.io/v1 customresourcedefinitions, so that
// CRD-aware clients (k9s, kubectl get crd) find their custom resources.
// The controller stores a member's CRDs whenever the Cluster syncs one of
// its custom resources; they are read like any other member resource (same
// authorization: customresourcedefinitions.apiextensions.k8s.io), narrowed
// to the CRDs of the custom resources the view syncs, since a member's
// other CRDs name types Panorama does not serve there.

// crdResource is how the registry serves the CRDs under every cluster,
// synced or not: an empty list says "no custom resources here", where a 404
// makes clients report that CRDs failed to load.
var crdResource = storage.Resource{GVR: storage.CRDResource, Kind: "CustomResourceDefinition"}

// syncedCRDNames are the names (<plural>.<group>) of the CRDs that define
// what a cluster syncs: one per synced resource of a named group. Built-in
// groups yield names no CRD has, which select nothing.
func syncedCRDNames(c *clusterInfo) map[string]bool {
	out := map[string]bool{}
	for gvr := range c.resources {
		if gvr.Group != "" && gvr != storage.CRDResource {
			out[gvr.Resource+"."+gvr.Group] = true
		}
	}
	return out
}

// onlySyncedCRDs narrows a query of CRDs to those defining what its
// clusters sync, keeping only the clusters that sync one (with the names
// asked, if any). A query of several clusters selects the union of their
// names in each of them, since a query selects the product of its clusters
// and names: a CRD one cluster syncs shows for another that stores it.
// It reports false when nothing is left, with q selecting nothing.
func (h *Handler) onlySyncedCRDs(q *storage.ListQuery) bool {
	if q.GVR != storage.CRDResource || slices.Equal(q.Clusters, []string{matchNothing}) {
		return true
	}
	names := h.registry.crdNames(q.Clusters, q.Names)
	var clusters []string
	union := map[string]bool{}
	for _, c := range slices.Sorted(maps.Keys(names)) {
		if len(names[c]) == 0 {
			continue
		}
		clusters = append(clusters, c)
		for n := range names[c] {
			union[n] = true
		}
	}
	if len(clusters) == 0 {
		q.Clusters = []string{matchNothing}
		return false
	}
	q.Clusters = clusters
	if len(union) <= storage.MaxListValues {
		q.Names = slices.Sorted(maps.Keys(union))
	} // else all their stored CRDs: a query may name no more
	return true
}

// crdNames maps each of clusters (every cluster when none) to the names of
// the CRDs it syncs, only those in asked when asked is not empty.
func (r *Registry) crdNames(clusters, asked []string) map[string]map[string]bool {
	r.mu.RLock()
	defer r.mu.RUnlock()
	if len(clusters) == 0 {
		clusters = slices.Collect(maps.Keys(r.clusters))
	}
	out := map[string]map[string]bool{}
	for _, name := range clusters {
		c := r.clusters[name]
		if c == nil {
			continue
		}
		names := syncedCRDNames(c)
		if len(asked) > 0 {
			maps.DeleteFunc(names, func(n string, _ bool) bool { return !slices.Contains(asked, n) })
		}
		out[name] = names
	}
	return out
}
