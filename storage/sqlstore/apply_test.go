package sqlstore_test

import (
	"context"
	"reflect"
	"strconv"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/panorama-io/panorama/storage"
	"github.com/panorama-io/panorama/storage/storagetest"
)

// TestApplyLeavesTheCallersObjects: Apply stores stamped copies of the
// objects (the revision as resourceVersion, the cluster and the member's
// resourceVersion as annotations) and leaves the caller's changes as it
// sent them, whether it failed after planning them or wrote them.
func TestApplyLeavesTheCallersObjects(t *testing.T) {
	s := storagetest.Backends()[0].Open(t) // SQLite: the refusal is a trigger
	ctx := context.Background()
	w := s.ForCluster("east", storage.Unfenced)
	changes := func() []storage.Change {
		return []storage.Change{
			storage.Upsert(object("Pod", "ns", "a", "7", func(u *unstructured.Unstructured) { u.SetAnnotations(map[string]string{"team": "web"}) })),
			storage.Upsert(object("Pod", "ns", "b", "8")),
			storage.DeleteAt("ns", "c", "9"),
		}
	}
	unchanged := func(what string, sent []storage.Change) {
		t.Helper()
		if want := changes(); !reflect.DeepEqual(sent, want) {
			t.Fatalf("%s: the caller's changes became %+v, want %+v", what, sent, want)
		}
	}

	accept := refuseObjects(t, s)
	sent := changes()
	if _, err := w.Apply(ctx, podsGVR, sent); err == nil {
		t.Fatal("the refused write succeeded")
	}
	unchanged("refused", sent)
	accept()

	sent = changes()
	if _, err := w.Apply(ctx, podsGVR, sent); err != nil {
		t.Fatal(err)
	}
	unchanged("written", sent)
	o, err := s.Get(ctx, storage.Key{Cluster: "east", GVR: podsGVR, Namespace: "ns", Name: "a"})
	if err != nil {
		t.Fatal(err)
	}
	var stored unstructured.Unstructured
	if err := stored.UnmarshalJSON(o.Data); err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"team": "web", storage.ClusterAnnotation: "east", storage.MemberResourceVersionAnnotation: "7"}
	if rv := stored.GetResourceVersion(); rv != strconv.FormatInt(o.Revision, 10) || !reflect.DeepEqual(stored.GetAnnotations(), want) {
		t.Fatalf("stored resourceVersion %q, annotations %v; want %d, %v", rv, stored.GetAnnotations(), o.Revision, want)
	}
}
