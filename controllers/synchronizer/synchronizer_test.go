package synchronizer

import (
	"context"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/panorama-io/panorama/storage"
	"github.com/panorama-io/panorama/storage/storagetest"
)

// TestApplySkipsWhatStorageRefuses: objects storage cannot hold (an
// overlong label, NUL in a name, invalid UTF-8 in a label: a
// kube-apiserver accepts all three)
// must not hold back the rest of their batch, on any database, and are
// counted and named in the synchronizer's status.
func TestApplySkipsWhatStorageRefuses(t *testing.T) {
	for _, b := range storagetest.Backends() {
		t.Run(b.Name, func(t *testing.T) {
			store := b.Open(t)
			gvr := schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}
			s := New("east", storage.Unfenced, Resource{Resource: storage.Resource{GVR: gvr, Kind: "ConfigMap", Namespaced: true}}, nil, store, Options{}, func() {})
			obj := func(name string, labels map[string]string, data string) pendingChange {
				u := object("ConfigMap", name)
				u.Object["data"] = map[string]any{"k": data}
				u.SetLabels(labels)
				return upsert(u)
			}
			err := s.apply(context.Background(), []pendingChange{
				obj("a", nil, "x"), obj("long", map[string]string{"k": strings.Repeat("v", 600)}, "x"),
				obj("a\x00b", nil, "x"), obj("utf8", map[string]string{"k": "\xff\xfe"}, "x"), obj("c", nil, "x"),
				// Data is stored as JSON, where NUL is an escape: kept.
				obj("nul-data", nil, "a\x00b"),
			})
			if err != nil {
				t.Fatal(err)
			}
			versions, err := store.MemberVersions(context.Background(), "east", gvr)
			if err != nil || len(versions) != 3 {
				t.Fatalf("stored %v (%v), want a, c and nul-data", versions, err)
			}
			if st := s.Status(); st.Refused != 3 || !strings.Contains(st.LastRefused, "3 objects refused") {
				t.Fatalf("status %+v, want 3 refused objects named", st)
			}
		})
	}
}

// TestPoolStopped: once stopped for shutdown, the pool starts nothing, so
// a reconcile still in flight cannot leave a synchronizer running.
func TestPoolStopped(t *testing.T) {
	store := storagetest.Backends()[0].Open(t)
	p := NewPool(store, Options{}, func(string) {})
	p.StopAll()
	gvr := schema.GroupVersionResource{Version: "v1", Resource: "pods"}
	if err := p.Ensure(context.Background(), "east", "id", storage.Unfenced, nil, Selection{Resources: []Resource{{Resource: storage.Resource{GVR: gvr, Kind: "Pod"}}}}); err != ErrStopped {
		t.Fatalf("Ensure after StopAll: %v", err)
	}
	if s := p.Statuses("east"); len(s) != 0 {
		t.Fatalf("synchronizers after StopAll: %v", s)
	}
}
