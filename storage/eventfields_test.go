package storage

import (
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// event is an Event created at created with the given fields (a dotted
// path to a value; nil as members serve an unset eventTime).
func event(apiVersion string, created time.Time, fields map[string]any) *unstructured.Unstructured {
	u := &unstructured.Unstructured{Object: map[string]any{"apiVersion": apiVersion, "kind": "Event",
		"metadata": map[string]any{"name": "e", "namespace": "ns", "creationTimestamp": created.Format(time.RFC3339)}}}
	for path, v := range fields {
		if err := unstructured.SetNestedField(u.Object, v, strings.Split(path, ".")...); err != nil {
			panic(err)
		}
	}
	return u
}

// TestLastSeen: an Event is as old as the latest time either API gives
// it, whichever fields its reporter set; its creation when none.
func TestLastSeen(t *testing.T) {
	created := time.Date(2026, 12, 3, 10, 0, 0, 0, time.UTC)
	at := func(d time.Duration) string { return created.Add(d).Format(time.RFC3339) }
	micro := func(d time.Duration) string { return created.Add(d).Format("2006-01-02T15:04:05.000000Z07:00") }
	for _, c := range []struct {
		name       string
		apiVersion string
		times      map[string]any
		want       time.Duration // after created
	}{
		{"core, by a client-go recorder", "v1", map[string]any{"firstTimestamp": at(0), "lastTimestamp": at(5 * time.Minute), "eventTime": nil}, 5 * time.Minute},
		{"core, written through events.k8s.io", "v1", map[string]any{"eventTime": micro(90 * time.Second), "reportingComponent": "kubelet"}, 90 * time.Second},
		{"core, a series", "v1", map[string]any{"eventTime": micro(time.Minute), "series.lastObservedTime": micro(40 * time.Minute), "series.count": int64(3)}, 40 * time.Minute},
		{"events.k8s.io", "events.k8s.io/v1", map[string]any{"eventTime": micro(2 * time.Minute)}, 2 * time.Minute},
		{"events.k8s.io, of a core recorder", "events.k8s.io/v1", map[string]any{"deprecatedFirstTimestamp": at(time.Minute), "deprecatedLastTimestamp": at(20 * time.Minute)}, 20 * time.Minute},
		{"only a first time", "v1", map[string]any{"firstTimestamp": at(-time.Hour)}, -time.Hour},
		{"no time at all", "v1", map[string]any{"lastTimestamp": nil, "eventTime": nil}, 0},
		{"garbage", "v1", map[string]any{"lastTimestamp": "yesterday"}, 0},
	} {
		got := EventLastSeen(event(c.apiVersion, created, c.times))
		if !got.Equal(created.Add(c.want)) {
			t.Errorf("%s: last seen %s, want %s", c.name, got, created.Add(c.want))
		}
	}
}

// TestEventSource: the field label "source" of a core/v1 Event is
// source.component, else reportingComponent, as kube-apiserver derives it;
// other kinds, and events.k8s.io, have no such derived field.
func TestEventSource(t *testing.T) {
	now := time.Now()
	for _, c := range []struct {
		name   string
		u      *unstructured.Unstructured
		want   string
		exists bool
	}{
		{"recorder", event("v1", now, map[string]any{"source.component": "kubelet", "source.host": "n1", "reportingComponent": "other"}), "kubelet", true},
		{"through events.k8s.io", event("v1", now, map[string]any{"reportingComponent": "example.com/ctl"}), "example.com/ctl", true},
		{"neither", event("v1", now, map[string]any{"reason": "x"}), "", false},
		{"events.k8s.io", event("events.k8s.io/v1", now, map[string]any{"deprecatedSource.component": "kubelet", "reportingController": "kubelet"}), "", false},
	} {
		gr := schema.GroupResource{Resource: "events"}
		if c.u.GetAPIVersion() != "v1" {
			gr.Group = "events.k8s.io"
		}
		o := BuiltinFields.Describe(gr, c.u)
		if v, ok := o.Fields["source"]; strings.Join(v, ",") != c.want || ok != c.exists {
			t.Errorf("%s: source %q (%v), want %q (%v)", c.name, v, ok, c.want, c.exists)
		}
	}
}
