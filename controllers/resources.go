package controllers

import (
	"context"
	"fmt"
	"slices"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/metadata"

	clusterv1alpha1 "github.com/panorama-io/panorama/apis/cluster/v1alpha1"
	"github.com/panorama-io/panorama/controllers/synchronizer"
	"github.com/panorama-io/panorama/internal/builtin"
	"github.com/panorama-io/panorama/storage"
)

const wildcard = "*"

// memberResources is what a member serves, from discovery.
type memberResources struct {
	preferred map[string]string                            // group -> preferred version
	versions  map[string][]string                          // group -> versions, preferred first
	resources map[schema.GroupVersion][]metav1.APIResource // listable and watchable, no subresources
	// partial: some groups failed discovery, so their resources are unknown.
	partial bool
}

// discover reads what the member serves with client-go's discovery.
func discover(dc discovery.DiscoveryInterface) (*memberResources, error) {
	groups, lists, err := dc.ServerGroupsAndResources()
	if err != nil && !discovery.IsGroupDiscoveryFailedError(err) {
		return nil, err
	}
	// A group that failed discovery (a broken aggregated API, say) is left
	// out; the rest still syncs.
	values := make([]metav1.APIGroup, 0, len(groups))
	for _, g := range groups {
		values = append(values, *g)
	}
	return memberResourcesOf(values, lists, err != nil), nil
}

// memberResourcesOf is what discovery's groups and resource lists say a
// member serves; partial when some groups failed discovery.
func memberResourcesOf(groups []metav1.APIGroup, lists []*metav1.APIResourceList, partial bool) *memberResources {
	m := &memberResources{preferred: map[string]string{}, versions: map[string][]string{}, resources: map[schema.GroupVersion][]metav1.APIResource{},
		partial: partial}
	for _, g := range groups {
		m.preferred[g.Name] = g.PreferredVersion.Version
		for _, v := range g.Versions {
			m.versions[g.Name] = append(m.versions[g.Name], v.Version)
		}
	}
	for _, l := range lists {
		gv, err := schema.ParseGroupVersion(l.GroupVersion)
		if err != nil || !wellNamed(gv) {
			continue
		}
		for _, r := range l.APIResources {
			if !slices.Contains(r.Verbs, "list") || !slices.Contains(r.Verbs, "watch") || !wellNamedResource(&r) ||
				(builtin.Group(gv.Group) && !builtin.Resource(gv.WithKind(r.Kind), r.Name)) {
				continue
			}
			m.resources[gv] = append(m.resources[gv], r)
		}
	}
	return m
}

// wellNamed reports whether gv is named as kube-apiserver names groups
// and versions. A member's discovery is its own to claim (an aggregated
// API answers anything), and what it claims goes into the paths that
// clients of the views build from Panorama's discovery: a ".." or "?"
// there would take them elsewhere.
func wellNamed(gv schema.GroupVersion) bool {
	return (gv.Group == "" || len(validation.IsDNS1123Subdomain(gv.Group)) == 0) && len(validation.IsDNS1035Label(gv.Version)) == 0
}

// wellNamedResource reports whether r is a resource, not a subresource,
// with names as a CRD's must be (see wellNamed for why); short names and
// categories that are not are dropped from it.
func wellNamedResource(r *metav1.APIResource) bool {
	label := func(s string) bool { return len(validation.IsDNS1035Label(s)) == 0 }
	if strings.Contains(r.Name, "/") || !label(r.Name) || !label(strings.ToLower(r.Kind)) ||
		(r.SingularName != "" && !label(r.SingularName)) {
		return false
	}
	r.ShortNames = slices.DeleteFunc(slices.Clone(r.ShortNames), func(s string) bool { return !label(s) })
	r.Categories = slices.DeleteFunc(slices.Clone(r.Categories), func(s string) bool { return !label(s) })
	return true
}

// Paging of the member's CRDs' metadata. A CRD's metadata alone can be
// hundreds of KiB (its managedFields name every field of its schemas, and
// a client-side apply copies it whole into an annotation), so a page stays
// well under maxMemberResponseBytes. maxMemberCRDs, far above any
// member's, ends the paging of a member that never stops answering more;
// with names of valid length only kept, what is kept stays bounded too.
const (
	crdListPageSize = 100
	maxMemberCRDs   = 50000
)

// customResourceSelections selects every resource a CRD of the member
// serves. It lists the CRDs' metadata only: a CRD is named
// <plural>.<group> (kube-apiserver insists), and its schemas, often
// hundreds of KiB, would cost every health check dearly.
func customResourceSelections(ctx context.Context, md metadata.Interface) ([]clusterv1alpha1.GroupResources, error) {
	var out []clusterv1alpha1.GroupResources
	opts := metav1.ListOptions{Limit: crdListPageSize}
	const maxPages = maxMemberCRDs / crdListPageSize
	for seen, pages := 0, 1; ; pages++ {
		list, err := md.Resource(storage.CRDResource).List(ctx, opts)
		if err != nil {
			return nil, err
		}
		// Pages are counted too: a member may answer empty pages forever.
		if seen += len(list.Items); seen > maxMemberCRDs || pages > maxPages {
			return nil, fmt.Errorf("the member lists more than %d CRDs, or in more than %d pages", maxMemberCRDs, maxPages)
		}
		for _, crd := range list.Items {
			if len(crd.Name) > validation.DNS1123SubdomainMaxLength {
				continue
			}
			if plural, group, ok := strings.Cut(crd.Name, "."); ok && plural != "" && group != "" {
				out = append(out, clusterv1alpha1.GroupResources{Group: group, Resources: []string{plural}})
			}
		}
		if opts.Continue = list.Continue; opts.Continue == "" {
			return out, nil
		}
	}
}

// resolve turns selections into concrete resources: "*" groups and
// resources expand to what the member serves but core Secrets, which must be
// named, missing or "*" versions to the group's preferred version. Selections
// of what the member does not serve, or of Panorama's own groups, select
// nothing. A resource several selections select takes the filter of the
// first that names it, else of the first that selects it by "*". A
// selection whose filter cannot be applied fails the whole: leaving it
// out could have another selection sync what it keeps out.
//
// implied are selections the Cluster's own imply (the CRDs of the custom
// resources it syncs, syncAllCustomResources): they add what no selection
// of the Cluster's selects, and never take a resource's filter away.
func (m *memberResources) resolve(selections []clusterv1alpha1.GroupResources, implied ...clusterv1alpha1.GroupResources) ([]synchronizer.Resource, error) {
	type chosen struct {
		at    int // in out
		named bool
	}
	seen := map[schema.GroupVersionResource]chosen{}
	var out []synchronizer.Resource
	for i, sel := range append(slices.Clip(selections), implied...) {
		own := i < len(selections)
		filter, err := synchronizer.NewFilter(sel)
		if err != nil {
			return nil, fmt.Errorf("syncResources[%d] (group %q): %w", i, sel.Group, err)
		}
		for group := range m.versions {
			if (sel.Group != wildcard && sel.Group != group) || reservedGroup(group) {
				continue
			}
			var versions []string
			if len(sel.Versions) == 0 || slices.Contains(sel.Versions, wildcard) {
				versions = []string{m.preferred[group]}
			} else {
				versions = sel.Versions
			}
			for _, v := range versions {
				for _, r := range m.resources[schema.GroupVersion{Group: group, Version: v}] {
					named := slices.Contains(sel.Resources, r.Name)
					if !named && (!slices.Contains(sel.Resources, wildcard) || isSecrets(group, r.Name)) {
						continue
					}
					gvr := schema.GroupVersionResource{Group: group, Version: v, Resource: r.Name}
					filter := filter.For(r.Namespaced)
					prev, ok := seen[gvr]
					switch {
					case !ok:
						seen[gvr] = chosen{at: len(out), named: named}
						out = append(out, synchronizer.Resource{Resource: storage.Resource{GVR: gvr, Kind: r.Kind, Namespaced: r.Namespaced}, Filter: filter})
					case named && !prev.named && own:
						seen[gvr] = chosen{at: prev.at, named: true}
						out[prev.at].Filter = filter
					}
				}
			}
		}
	}
	slices.SortFunc(out, func(a, b synchronizer.Resource) int { return strings.Compare(a.GVR.String(), b.GVR.String()) })
	return out, nil
}

func isSecrets(group, resource string) bool { return group == "" && resource == "secrets" }

// reservedGroup: panorama.io and its subgroups are Panorama's own. Storage
// keeps what it holds of a cluster beside the member's resources
// (openapi.panorama.io, storage.OpenAPIResource), so a member serving such
// a group could overwrite it, or be read as it.
func reservedGroup(group string) bool {
	return group == "panorama.io" || strings.HasSuffix(group, ".panorama.io")
}
