// Package v1alpha1 holds the cluster.panorama.io API: Cluster, the member
// clusters Panorama syncs, and ClusterSyncResources, resource lists that
// several Clusters share.
// +kubebuilder:object:generate=true
// +groupName=cluster.panorama.io
package v1alpha1

import (
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/scheme"
)

var (
	// GroupVersion is the group and version of these types.
	GroupVersion = schema.GroupVersion{Group: "cluster.panorama.io", Version: "v1alpha1"}

	// SchemeBuilder registers these types with a runtime.Scheme.
	SchemeBuilder = &scheme.Builder{GroupVersion: GroupVersion}

	// AddToScheme adds these types to a runtime.Scheme.
	AddToScheme = SchemeBuilder.AddToScheme
)
