package watchcache

import (
	"bytes"
	"encoding/hex"
	"encoding/json"
	"math/rand/v2"
	"reflect"
	"testing"

	"github.com/panorama-io/panorama/storage"
	"github.com/panorama-io/panorama/storage/storagetest"
)

// TestPreImageKeepsItsJSON: a pre-image gives back exactly the JSON and
// the description it was made of, from the JSON of the object it was kept
// with, whether that is the next version of the object (a few hundred
// bytes kept for a pod), an object bigger than deflate's window, or
// nothing like it; and what it shares with the next object is that
// object's in memory.
func TestPreImageKeepsItsJSON(t *testing.T) {
	pod := func(round int) *storage.Object {
		return decoded(t, storagetest.RealisticPod(rand.New(rand.NewPCG(3, 3)), 7, round).Object)
	}
	configMap := func(data string) *storage.Object {
		return decoded(t, map[string]any{"apiVersion": "v1", "kind": "ConfigMap",
			"metadata": map[string]any{"name": "big", "namespace": "ns", "resourceVersion": "5", "labels": map[string]any{"app": "web"}},
			"data":     map[string]any{"blob": data}})
	}
	// 100 KB that deflate does not shrink, and beyond its window, the
	// dictionary does not help either.
	noise := make([]byte, 50_000)
	for i := range noise {
		noise[i] = byte(rand.N(256))
	}
	big := hex.EncodeToString(noise)
	cases := []struct {
		name      string
		was, next *storage.Object
		atMost    int // bytes kept of the JSON
	}{
		{"a pod's status changed", pod(0), pod(1), 300},
		{"a big object changed", configMap(big + "1"), configMap(big + "2"), 101_000},
		{"unlike the next object", pod(0), configMap("x"), 3_000},
		{"the next object has no JSON", pod(0), &storage.Object{}, 3_000},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			p := newPreImage(tc.was, tc.next)
			t.Logf("%d bytes of JSON kept as %d", len(tc.was.Data), len(p.deflated))
			if len(p.deflated) > tc.atMost {
				t.Errorf("%d bytes of JSON kept as %d, want %d at most", len(tc.was.Data), len(p.deflated), tc.atMost)
			}
			got, err := p.object(tc.next)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(got.Data, tc.was.Data) {
				t.Fatalf("inflated JSON differs:\n got %s\nwant %s", got.Data, tc.was.Data)
			}
			if !reflect.DeepEqual(got, tc.was) {
				t.Fatalf("description differs:\n got %+v\nwant %+v", got, tc.was)
			}
		})
	}

	was, next := pod(0), pod(1)
	p := newPreImage(was, next)
	if reflect.ValueOf(p.described.Labels).UnsafePointer() != reflect.ValueOf(next.Labels).UnsafePointer() ||
		reflect.ValueOf(p.described.Fields).UnsafePointer() != reflect.ValueOf(next.Fields).UnsafePointer() {
		t.Error("the pre-image of a status change does not share the labels and fields of the next object")
	}
}

func decoded(t *testing.T, u map[string]any) *storage.Object {
	t.Helper()
	data, err := json.Marshal(u)
	if err != nil {
		t.Fatal(err)
	}
	o, err := storage.DecodeStored(data)
	if err != nil {
		t.Fatal(err)
	}
	return &o
}
