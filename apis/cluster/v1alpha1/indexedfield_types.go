package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// ConditionIndexed says whether an IndexedField's values are indexed, so
// that field selectors may use it.
const ConditionIndexed = "Indexed"

// IndexedFieldSpec says where a field's values are.
type IndexedFieldSpec struct {
	// Paths are where the values are: dotted names, each optionally
	// followed by [*] for every element of an array, e.g.
	// spec.template.spec.containers[*].image. The field has every value
	// found at any path (strings, numbers and booleans).
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=16
	// +kubebuilder:validation:items:Pattern=`^\{?\.?[A-Za-z0-9_-]+(\[\*\])?(\.[A-Za-z0-9_-]+(\[\*\])?)*\}?$`
	Paths []string `json:"paths"`
	// Resources limits the field to these resources, as resource.group
	// ("pods", "deployments.apps"); empty means every resource.
	// +optional
	// +kubebuilder:validation:items:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$`
	Resources []string `json:"resources,omitempty"`
}

// IndexedFieldStatus says whether the field is indexed.
type IndexedFieldStatus struct {
	// Conditions: Indexed.
	// +optional
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

// IndexedField declares a field, named as the object, that field selectors
// (fieldSelector=<name>=<value>) may use on the resources Panorama serves,
// beyond the built-in ones. Changing the declarations reindexes what is
// stored; the field is selectable once Indexed.
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:scope=Cluster,categories=panorama
// +kubebuilder:printcolumn:name="Paths",type=string,JSONPath=`.spec.paths`
// +kubebuilder:printcolumn:name="Indexed",type=string,JSONPath=`.status.conditions[?(@.type=="Indexed")].status`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type IndexedField struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   IndexedFieldSpec   `json:"spec"`
	Status IndexedFieldStatus `json:"status,omitempty"`
}

// IndexedFieldList is a list of IndexedFields.
// +kubebuilder:object:root=true
type IndexedFieldList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []IndexedField `json:"items"`
}
