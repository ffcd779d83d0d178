package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// CollectionResourceType is one resource that a collection gathers.
type CollectionResourceType struct {
	Group    string `json:"group"`
	Version  string `json:"version,omitempty"`
	Resource string `json:"resource"`
	Kind     string `json:"kind,omitempty"`
}

// CollectionResource is a named set of resources listed together, such as
// "workloads" (deployments, daemonsets, statefulsets); on get it carries the
// matching objects of all those resources.
// +kubebuilder:object:root=true
type CollectionResource struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	ResourceTypes []CollectionResourceType `json:"resourceTypes"`
	// +optional
	Items []runtime.RawExtension `json:"items,omitempty"`
}

// CollectionResourceList lists the collections served.
// +kubebuilder:object:root=true
type CollectionResourceList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []CollectionResource `json:"items"`
}
