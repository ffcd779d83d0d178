// Package v1alpha1 is the aggregated API group search.panorama.io that the
// Panorama API server serves: the views (ViewPath), where every synced
// resource is served as a member API server would; the answers Panorama
// adds to that API, Counts (a list with groupBy) and History (the history
// subresource); and "collectionresources", several kinds in one list.
// Clients such as the kubeconfig writer import this package, not the
// server.
// +kubebuilder:object:generate=true
// +groupName=search.panorama.io
package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

const (
	// GroupName is the aggregated API group.
	GroupName = "search.panorama.io"
	// Version is the version served.
	Version = "v1alpha1"
)

var (
	// SchemeGroupVersion is the group and version served.
	SchemeGroupVersion = schema.GroupVersion{Group: GroupName, Version: Version}

	schemeBuilder = runtime.NewSchemeBuilder(addKnownTypes)
	// AddToScheme adds the group's types to a scheme.
	AddToScheme = schemeBuilder.AddToScheme
)

func addKnownTypes(scheme *runtime.Scheme) error {
	scheme.AddKnownTypes(SchemeGroupVersion,
		&CollectionResource{}, &CollectionResourceList{}, &Counts{}, &History{})
	metav1.AddToGroupVersion(scheme, SchemeGroupVersion)
	return nil
}
