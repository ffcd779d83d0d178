package sqlstore_test

import (
	"context"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/panorama-io/panorama/storage"
	"github.com/panorama-io/panorama/storage/storagetest"
)

var eventsV1GVR = schema.GroupVersionResource{Group: "events.k8s.io", Version: "v1", Resource: "events"}

// coreEvent is a core/v1 Event about involved, with the top-level fields
// given (reason, type, source, reportingComponent, ...).
func coreEvent(name string, involved, top map[string]any) *unstructured.Unstructured {
	return object("Event", "web", name, "1", func(u *unstructured.Unstructured) {
		u.Object["involvedObject"] = involved
		for k, v := range top {
			u.Object[k] = v
		}
	})
}

// eventV1 is the same as events.k8s.io/v1 serves it: regarding,
// reportingController, deprecatedSource.
func eventV1(name string, regarding, top map[string]any) *unstructured.Unstructured {
	u := coreEvent(name, nil, top)
	delete(u.Object, "involvedObject")
	u.SetAPIVersion("events.k8s.io/v1")
	u.Object["regarding"] = regarding
	return u
}

// TestEventFieldSelectors lists Events of both APIs by every field label
// kube-apiserver accepts for them (pkg/apis/core/v1 and pkg/apis/events/v1
// AddFieldLabelConversionsForEvent), the ones kubectl describe sends
// among them, on every database: each answer is the one written by hand
// here, and the SQL one equals the brute-force one, also a page at a time.
func TestEventFieldSelectors(t *testing.T) {
	storagetest.ForEach(t, func(t *testing.T, b storagetest.Backend) {
		s := b.Open(t)
		ctx := context.Background()
		w := &world{objects: map[storage.Key]*storage.Object{}}
		write := func(cluster string, gvr schema.GroupVersionResource, us ...*unstructured.Unstructured) {
			t.Helper()
			var changes []storage.Change
			for _, u := range us {
				changes = append(changes, storage.Upsert(u.DeepCopy()))
				w.put(cluster, gvr, u)
			}
			if _, err := s.ForCluster(cluster, storage.Unfenced).Apply(ctx, gvr, changes); err != nil {
				t.Fatal(err)
			}
		}
		pod := func(name, uid string) map[string]any {
			return map[string]any{"kind": "Pod", "namespace": "web", "name": name, "uid": uid, "apiVersion": "v1"}
		}
		pulled := pod("web-1", "u1")
		pulled["resourceVersion"], pulled["fieldPath"] = "5", "spec.containers{c}"
		write("east", eventsGVR,
			coreEvent("e1", pulled, map[string]any{"reason": "Pulled", "type": "Normal", "source": map[string]any{"component": "kubelet", "host": "n1"}}),
			// Written through events.k8s.io: no source, a reportingComponent.
			coreEvent("e2", pod("web-2", "u2"), map[string]any{"reason": "BackOff", "type": "Warning", "reportingComponent": "kubelet"}),
			coreEvent("e3", map[string]any{"kind": "Deployment", "namespace": "web", "name": "web-1", "uid": "u3", "apiVersion": "apps/v1"},
				map[string]any{"reason": "ScalingReplicaSet", "type": "Normal", "source": map[string]any{"component": "deployment-controller"}}),
		)
		write("west", eventsGVR,
			coreEvent("e1", pod("web-1", "u4"), map[string]any{"reason": "Pulled", "type": "Normal", "source": map[string]any{"component": "kubelet"}}))
		regarding := pod("web-1", "u1")
		regarding["resourceVersion"], regarding["fieldPath"] = "5", "spec.containers{c}"
		write("east", eventsV1GVR,
			eventV1("n1", regarding, map[string]any{"reason": "Pulled", "type": "Normal", "reportingController": "kubelet", "deprecatedSource": map[string]any{"component": "kubelet"}}),
			eventV1("n2", pod("web-2", "u2"), map[string]any{"reason": "BackOff", "type": "Warning", "reportingController": "kubelet"}))
		write("west", eventsV1GVR,
			eventV1("n3", pod("web-1", "u4"), map[string]any{"reason": "Pulled", "type": "Normal", "reportingController": "other"}))

		for _, c := range []struct {
			gvr      schema.GroupVersionResource
			selector string
			want     string // cluster/name, in key order
		}{
			// kubectl describe pod web-1 -n web, in east.
			{eventsGVR, "involvedObject.name=web-1,involvedObject.namespace=web,involvedObject.kind=Pod,involvedObject.uid=u1", "east/e1"},
			{eventsGVR, "involvedObject.name=web-1", "east/e1 east/e3 west/e1"},
			{eventsGVR, "involvedObject.name=web-1,involvedObject.kind=Pod", "east/e1 west/e1"},
			{eventsGVR, "involvedObject.apiVersion=apps/v1", "east/e3"},
			{eventsGVR, "involvedObject.resourceVersion=5,involvedObject.fieldPath=spec.containers{c}", "east/e1"},
			{eventsGVR, "type=Warning", "east/e2"},
			{eventsGVR, "reason=Pulled", "east/e1 west/e1"},
			{eventsGVR, "reportingComponent=kubelet", "east/e2"},
			// source.component, else reportingComponent, as kube derives it.
			{eventsGVR, "source=kubelet", "east/e1 east/e2 west/e1"},
			{eventsGVR, "source!=kubelet", "east/e3"},
			{eventsGVR, "source=deployment-controller,reason!=Pulled", "east/e3"},
			{eventsV1GVR, "regarding.name=web-1", "east/n1 west/n3"},
			{eventsV1GVR, "regarding.name=web-1,regarding.namespace=web,regarding.kind=Pod,regarding.uid=u1", "east/n1"},
			{eventsV1GVR, "regarding.apiVersion=v1,regarding.resourceVersion=5,regarding.fieldPath=spec.containers{c}", "east/n1"},
			{eventsV1GVR, "regarding.kind=Pod,type=Warning", "east/n2"},
			{eventsV1GVR, "reportingController=kubelet", "east/n1 east/n2"},
			{eventsV1GVR, "reportingController!=kubelet,reason=Pulled", "west/n3"},
		} {
			q := storage.ListQuery{GVR: c.gvr, Fields: fields.ParseSelectorOrDie(c.selector).Requirements()}
			var got []string
			for _, k := range w.expect(&q) {
				got = append(got, k.Cluster+"/"+k.Name)
			}
			if strings.Join(got, " ") != c.want {
				t.Fatalf("%s %s: brute force %v, want %s", c.gvr.Resource, c.selector, got, c.want)
			}
			checkQuery(t, s, w, q)
			q.Limit = 1
			checkQuery(t, s, w, q)
		}
	})
}
