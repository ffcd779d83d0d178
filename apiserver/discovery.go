package apiserver

import (
	"net/http"
	"slices"
	"strings"

	apidiscoveryv2 "k8s.io/api/apidiscovery/v2"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/panorama-io/panorama/internal/responsewriters"
	"github.com/panorama-io/panorama/storage"
)

// aggregatedDiscoveryType is the media type of aggregated discovery, which
// kubectl and client-go ask for first.
const aggregatedDiscoveryType = "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList"

var servedVerbs = metav1.Verbs{"get", "list", "watch"}

// serveDiscovery answers /api, /api/v1, /apis, /apis/{group} and
// /apis/{group}/{version} under a view from what is synced there, to who
// sees the view.
func (h *Handler) serveDiscovery(w http.ResponseWriter, req *request) {
	r, cluster, path := req.r, req.cluster, req.rest
	if cluster != "" {
		// Only users who may see a cluster learn it exists.
		if !h.seesCluster(r, cluster) {
			writeError(w, req.r, clusterNotFound(cluster), schema.GroupResource{})
			return
		}
		if _, ready, message := h.registry.Cluster(cluster); !ready {
			warn(w, notReadyMessage(cluster, message))
		}
	}
	parts := strings.Split(strings.Trim(path, "/"), "/")
	resources := discoverable(h.registry.ResourcesWith(cluster, selfReviewResources...))
	aggregated := strings.Contains(r.Header.Get("Accept"), "apidiscovery.k8s.io")
	switch {
	case len(parts) == 1 && parts[0] == "api":
		if aggregated {
			h.writeAggregated(w, resources, true)
			return
		}
		versions := &metav1.APIVersions{TypeMeta: metav1.TypeMeta{Kind: "APIVersions"}, Versions: []string{},
			ServerAddressByClientCIDRs: []metav1.ServerAddressByClientCIDR{{ClientCIDR: "0.0.0.0/0"}}}
		for _, gv := range groupVersions(resources, true) {
			versions.Versions = append(versions.Versions, gv.Version)
		}
		responsewriters.WriteJSON(w, http.StatusOK, versions)
	case len(parts) == 1 && parts[0] == "apis":
		if aggregated {
			h.writeAggregated(w, resources, false)
			return
		}
		list := &metav1.APIGroupList{TypeMeta: metav1.TypeMeta{Kind: "APIGroupList", APIVersion: "v1"}, Groups: []metav1.APIGroup{}}
		list.Groups = append(list.Groups, apiGroups(resources)...)
		responsewriters.WriteJSON(w, http.StatusOK, list)
	case len(parts) == 2 && parts[0] == "apis":
		for _, g := range apiGroups(resources) {
			if g.Name == parts[1] {
				g.TypeMeta = metav1.TypeMeta{Kind: "APIGroup", APIVersion: "v1"}
				responsewriters.WriteJSON(w, http.StatusOK, g)
				return
			}
		}
		writeError(w, req.r, notFound(), schema.GroupResource{})
	case (len(parts) == 2 && parts[0] == "api") || (len(parts) == 3 && parts[0] == "apis"):
		gv := schema.GroupVersion{Version: parts[1]}
		if parts[0] == "apis" {
			gv = schema.GroupVersion{Group: parts[1], Version: parts[2]}
		}
		list := &metav1.APIResourceList{TypeMeta: metav1.TypeMeta{Kind: "APIResourceList", APIVersion: "v1"}, GroupVersion: gv.String(), APIResources: []metav1.APIResource{}}
		for _, res := range resources {
			if res.GVR.GroupVersion() == gv {
				list.APIResources = append(list.APIResources, apiResource(res))
			}
		}
		if len(list.APIResources) == 0 {
			writeError(w, req.r, notFound(), schema.GroupResource{})
			return
		}
		responsewriters.WriteJSON(w, http.StatusOK, list)
	}
}

// isDiscovery reports whether path is one serveDiscovery answers.
func isDiscovery(path string) bool {
	parts := strings.Split(strings.Trim(path, "/"), "/")
	switch len(parts) {
	case 1, 2:
		return parts[0] == "api" || parts[0] == "apis"
	case 3:
		return parts[0] == "apis"
	}
	return false
}

// discoverable leaves out of resources those of groups not Kubernetes'
// own (see groupRank) named as a short name of Kubernetes' resources:
// kubectl expands a short name only when no resource is named so, plural
// or singular, so a member's `po` or Kind `Deploy` would take `kubectl get
// po` of the view. Such a resource is still served by its path.
func discoverable(resources []storage.Resource) []storage.Resource {
	return slices.DeleteFunc(resources, func(res storage.Resource) bool {
		return groupRank(res.GVR.Group) > kubernetesRank &&
			(kubernetesShortNames[res.GVR.Resource] || kubernetesShortNames[singularName(res)])
	})
}

// kubernetesShortNames are the short names of Kubernetes' resources
// discovery gives.
var kubernetesShortNames = func() map[string]bool {
	out := map[string]bool{}
	for gr, names := range shortNames {
		if groupRank(gr.Group) <= kubernetesRank {
			for _, n := range names {
				out[n] = true
			}
		}
	}
	return out
}()

func singularName(res storage.Resource) string { return strings.ToLower(res.Kind) }

func apiResource(res storage.Resource) metav1.APIResource {
	return metav1.APIResource{
		Name: res.GVR.Resource, SingularName: singularName(res), Namespaced: res.Namespaced,
		Kind: res.Kind, Verbs: verbsOf(res), ShortNames: shortNames[res.GVR.GroupResource()],
	}
}

// shortNames of the built-in kinds, so that `kubectl get po` works: those
// of the kinds references point at, which refersTo and referredBy take
// too (relations.go), and a few more.
var shortNames = func() map[schema.GroupResource][]string {
	out := map[schema.GroupResource][]string{
		{Resource: "events"}: {"ev"}, {Group: "networking.k8s.io", Resource: "ingresses"}: {"ing"},
		{Group: "apiextensions.k8s.io", Resource: "customresourcedefinitions"}: {"crd", "crds"}, // crds.go
	}
	for _, k := range storage.ReferenceKinds {
		if len(k.ShortNames) > 0 {
			out[schema.GroupResource{Group: k.Group, Resource: k.Resource}] = k.ShortNames
		}
	}
	return out
}()

// groupVersions lists the group versions of resources, core or not, in the
// registry's order (preferred version first within a group).
func groupVersions(resources []storage.Resource, core bool) []schema.GroupVersion {
	var out []schema.GroupVersion
	seen := map[schema.GroupVersion]bool{}
	for _, res := range resources {
		gv := res.GVR.GroupVersion()
		if (gv.Group == "") != core || seen[gv] {
			continue
		}
		seen[gv] = true
		out = append(out, gv)
	}
	return out
}

func apiGroups(resources []storage.Resource) []metav1.APIGroup {
	var out []metav1.APIGroup
	for _, gv := range groupVersions(resources, false) {
		v := metav1.GroupVersionForDiscovery{GroupVersion: gv.String(), Version: gv.Version}
		if n := len(out); n > 0 && out[n-1].Name == gv.Group {
			out[n-1].Versions = append(out[n-1].Versions, v)
			continue
		}
		out = append(out, metav1.APIGroup{Name: gv.Group, Versions: []metav1.GroupVersionForDiscovery{v}, PreferredVersion: v})
	}
	return out
}

func (h *Handler) writeAggregated(w http.ResponseWriter, resources []storage.Resource, core bool) {
	list := &apidiscoveryv2.APIGroupDiscoveryList{
		TypeMeta: metav1.TypeMeta{Kind: "APIGroupDiscoveryList", APIVersion: "apidiscovery.k8s.io/v2"},
		Items:    []apidiscoveryv2.APIGroupDiscovery{},
	}
	for _, gv := range groupVersions(resources, core) {
		var vd apidiscoveryv2.APIVersionDiscovery
		vd.Version, vd.Freshness = gv.Version, apidiscoveryv2.DiscoveryFreshnessCurrent
		for _, res := range resources {
			if res.GVR.GroupVersion() != gv {
				continue
			}
			scope := apidiscoveryv2.ScopeCluster
			if res.Namespaced {
				scope = apidiscoveryv2.ScopeNamespace
			}
			vd.Resources = append(vd.Resources, apidiscoveryv2.APIResourceDiscovery{
				Resource: res.GVR.Resource, SingularResource: singularName(res), Scope: scope,
				ResponseKind: &metav1.GroupVersionKind{Group: gv.Group, Version: gv.Version, Kind: res.Kind},
				Verbs:        verbsOf(res), ShortNames: shortNames[res.GVR.GroupResource()],
			})
		}
		if n := len(list.Items); n > 0 && list.Items[n-1].Name == gv.Group {
			list.Items[n-1].Versions = append(list.Items[n-1].Versions, vd)
			continue
		}
		list.Items = append(list.Items, apidiscoveryv2.APIGroupDiscovery{
			ObjectMeta: metav1.ObjectMeta{Name: gv.Group}, Versions: []apidiscoveryv2.APIVersionDiscovery{vd},
		})
	}
	responsewriters.WriteJSONAs(w, http.StatusOK, aggregatedDiscoveryType, list)
}
