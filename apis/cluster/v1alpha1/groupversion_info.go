// Package v1alpha1 holds the cluster.panorama.io API: Cluster, the member
// clusters Panorama syncs, ClusterSyncResources, resource lists that
// several Clusters share, and ClusterImportPolicy, which makes Clusters of a
// cluster inventory's members, and IndexedField, fields selectors may use.
// +kubebuilder:object:generate=true
// +groupName=cluster.panorama.io
package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

var (
	// GroupVersion is the group and version of these types.
	GroupVersion = schema.GroupVersion{Group: "cluster.panorama.io", Version: "v1alpha1"}

	// SchemeBuilder registers these types with a runtime.Scheme.
	SchemeBuilder = runtime.NewSchemeBuilder(addKnownTypes)

	// AddToScheme adds these types to a runtime.Scheme.
	AddToScheme = SchemeBuilder.AddToScheme
)

func addKnownTypes(s *runtime.Scheme) error {
	s.AddKnownTypes(GroupVersion, &Cluster{}, &ClusterList{}, &ClusterSyncResources{}, &ClusterSyncResourcesList{},
		&ClusterImportPolicy{}, &ClusterImportPolicyList{}, &IndexedField{}, &IndexedFieldList{})
	metav1.AddToGroupVersion(s, GroupVersion)
	return nil
}
