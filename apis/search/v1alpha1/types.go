package v1alpha1

import (
	"encoding/json"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
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

// Counts answers a list with the groupBy search parameter: how many of the
// objects the list would return each group holds, at one revision.
// +kubebuilder:object:root=true
type Counts struct {
	metav1.TypeMeta `json:",inline"`
	// ResourceVersion is the revision counted at; RemainingItemCount the
	// groups the limit left out.
	metav1.ListMeta `json:"metadata"`
	// GroupBy are the terms as the request spelled them.
	GroupBy []string      `json:"groupBy"`
	Items   []CountsGroup `json:"items"`
}

// CountsGroup is one group: its value of each term, by the term, leaving
// out the terms whose label or field its objects lack.
type CountsGroup struct {
	Group map[string]string `json:"group"`
	Count int64             `json:"count"`
	// HeldSince, asked for by withHeldSince, is when the group's current
	// period began; absent from the group of objects lacking the label or
	// field.
	HeldSince *HeldSince `json:"heldSince,omitempty"`
}

// HeldSince is the write that took a group from no objects to some, after
// which it has had some ever since. Empty when Panorama cannot know it:
// the period began before it kept track, or its list of a member found
// the period under way.
type HeldSince struct {
	Revision int64             `json:"revision,omitempty"`
	Time     *metav1.MicroTime `json:"time,omitempty"`
}

// History answers the history subresource of an object: its versions,
// oldest first.
// +kubebuilder:object:root=true
type History struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata"`
	Items           []HistoryItem `json:"items"`
}

// HistoryItem is one change of the object.
type HistoryItem struct {
	// Revision is the Panorama revision of the change: the object's
	// resourceVersion after it.
	Revision int64 `json:"revision"`
	// Time the change was written to Panorama; absent when not known.
	// +optional
	Time *metav1.MicroTime `json:"time,omitempty"`
	// +optional
	MemberResourceVersion string          `json:"memberResourceVersion,omitempty"`
	Type                  watch.EventType `json:"type"`
	// Patch is the JSON merge patch (RFC 7386) from the previous version:
	// the whole object when ADDED, null when DELETED.
	Patch json.RawMessage `json:"patch"`
	// Object is the whole object after the change, on the first item only
	// and only when that is a MODIFIED one: its previous version is not in
	// the answer (beyond limit, or past the retention), so that clients
	// rebuild the versions from it rather than from a patch they cannot
	// apply.
	// +optional
	Object json.RawMessage `json:"object,omitempty"`
}
