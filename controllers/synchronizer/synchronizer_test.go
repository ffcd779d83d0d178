package synchronizer

import (
	"context"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/panorama-io/panorama/storage"
	"github.com/panorama-io/panorama/storage/storagetest"
)

// TestApplySkipsWhatStorageRefuses: one object storage cannot hold must not
// hold back the rest of its batch.
func TestApplySkipsWhatStorageRefuses(t *testing.T) {
	store := storagetest.Backends()[0].Open(t)
	gvr := schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}
	s := New("east", Resource{GVR: gvr, Kind: "ConfigMap", Namespaced: true}, nil, store, Options{}, func() {})
	obj := func(name string, labels map[string]string) storage.Change {
		u := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "ConfigMap",
			"metadata": map[string]any{"name": name, "namespace": "ns", "resourceVersion": "1"}}}
		u.SetLabels(labels)
		return storage.Upsert(u)
	}
	err := s.apply(context.Background(), []storage.Change{
		obj("a", nil), obj("bad", map[string]string{"k": strings.Repeat("v", 600)}), obj("c", nil),
	})
	if err != nil {
		t.Fatal(err)
	}
	versions, err := store.MemberVersions(context.Background(), "east", gvr)
	if err != nil || len(versions) != 2 {
		t.Fatalf("stored %v (%v), want a and c", versions, err)
	}
}

// TestPoolStopped: once stopped for shutdown, the pool starts nothing, so
// a reconcile still in flight cannot leave a synchronizer running.
func TestPoolStopped(t *testing.T) {
	store := storagetest.Backends()[0].Open(t)
	p := NewPool(store, Options{}, func(string) {})
	p.StopAll()
	gvr := schema.GroupVersionResource{Version: "v1", Resource: "pods"}
	if err := p.Ensure(context.Background(), "east", "id", nil, []Resource{{GVR: gvr, Kind: "Pod"}}); err != ErrStopped {
		t.Fatalf("Ensure after StopAll: %v", err)
	}
	if s := p.Statuses("east"); len(s) != 0 {
		t.Fatalf("synchronizers after StopAll: %v", s)
	}
}
