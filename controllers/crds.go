package controllers

import (
	"context"
	"slices"

	"k8s.io/client-go/metadata"
	"k8s.io/client-go/rest"

	clusterv1alpha1 "github.com/panorama-io/panorama/apis/cluster/v1alpha1"
	"github.com/panorama-io/panorama/controllers/synchronizer"
	"github.com/panorama-io/panorama/storage"
)

// crdsSelection selects the member's CRDs.
var crdsSelection = clusterv1alpha1.GroupResources{Group: storage.CRDResource.Group, Resources: []string{storage.CRDResource.Resource}}

// crdSelection selects the member's CRDs when resources holds a custom
// resource, as syncAllCustomResources does: the API server serves the CRDs
// of what a cluster syncs (clients such as k9s and `kubectl get crd` read
// their spec) and takes their printer columns. The synchronizer syncs a
// resource whole, so all the member's CRDs are stored; the API server
// serves only those of synced resources. Only names are listed, and only
// when a resource of a named group is selected, so that clusters syncing
// core resources cost no more.
func crdSelection(ctx context.Context, cfg *rest.Config, resources []synchronizer.Resource) ([]clusterv1alpha1.GroupResources, error) {
	if !slices.ContainsFunc(resources, func(r synchronizer.Resource) bool { return r.GVR.Group != "" }) {
		return nil, nil
	}
	md, err := metadata.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	crds, err := customResourceSelections(ctx, md)
	if err != nil {
		return nil, err
	}
	for _, r := range resources {
		if slices.ContainsFunc(crds, func(c clusterv1alpha1.GroupResources) bool {
			return c.Group == r.GVR.Group && slices.Contains(c.Resources, r.GVR.Resource)
		}) {
			return []clusterv1alpha1.GroupResources{crdsSelection}, nil
		}
	}
	return nil, nil
}
