package storage

import (
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// coreEvents is the resource of core/v1 Events.
var coreEvents = schema.GroupResource{Resource: "events"}

// eventSource is the field label "source" of a core/v1 Event as
// kube-apiserver derives it (ToSelectableFields of pkg/registry/core/event):
// source.component, or reportingComponent when the Event has none, which
// is the case of Events written through events.k8s.io. The path "source"
// is an object there, so no declared path can say it.
func eventSource(obj map[string]any) (string, bool) {
	v, _, _ := unstructured.NestedString(obj, "source", "component")
	if v == "" {
		v, _, _ = unstructured.NestedString(obj, "reportingComponent")
	}
	return v, v != "" && len(v) <= MaxFieldValueLen
}

// eventTimeFields are where the two APIs say when an Event was last
// seen: core/v1 lastTimestamp, eventTime and series.lastObservedTime;
// events.k8s.io eventTime, series.lastObservedTime and
// deprecatedLastTimestamp. The first times count for Events that have
// nothing later.
var eventTimeFields = [][]string{
	{"lastTimestamp"}, {"eventTime"}, {"series", "lastObservedTime"}, {"deprecatedLastTimestamp"},
	{"firstTimestamp"}, {"deprecatedFirstTimestamp"},
}

// EventLastSeen is the latest time an Event of either API says it
// happened; its creation when it says none. Retention counts from it, and
// the LAST SEEN column shows it.
func EventLastSeen(u *unstructured.Unstructured) time.Time {
	var last time.Time
	for _, path := range eventTimeFields {
		s, _, _ := unstructured.NestedString(u.Object, path...)
		// RFC3339 parses MicroTime's fractional seconds too.
		if t, err := time.Parse(time.RFC3339, s); err == nil && t.After(last) {
			last = t
		}
	}
	if last.IsZero() {
		return u.GetCreationTimestamp().Time
	}
	return last
}

// EventSourceField is the field label kube-apiserver derives for core/v1
// Events (eventSource).
const EventSourceField = "source"
