package storage

import "k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

// setEventSource gives a core/v1 Event the field label "source" as
// kube-apiserver derives it (ToSelectableFields of pkg/registry/core/event):
// source.component, or reportingComponent when the Event has none, which
// is the case of Events written through events.k8s.io. The path "source"
// is an object there, so the generic extraction of IndexedFields skips it.
func setEventSource(u *unstructured.Unstructured, o *Object) {
	if u.GetAPIVersion() != "v1" || u.GetKind() != "Event" {
		return
	}
	v, _, _ := unstructured.NestedString(u.Object, "source", "component")
	if v == "" {
		v, _, _ = unstructured.NestedString(u.Object, "reportingComponent")
	}
	if v == "" || len(v) > MaxFieldValueLen {
		return
	}
	if o.Fields == nil {
		o.Fields = map[string]string{}
	}
	o.Fields["source"] = v
}
