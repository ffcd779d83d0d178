package apiserver

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"reflect"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	searchv1alpha1 "github.com/panorama-io/panorama/apis/search/v1alpha1"
	"github.com/panorama-io/panorama/apiserver/watchcache"
	"github.com/panorama-io/panorama/storage"
	"github.com/panorama-io/panorama/storage/storagetest"
)

// TestStreamedListsAsEncodedWhole: lists written item by item are, as JSON,
// what encoding the whole list at once gives, in every format.
func TestStreamedListsAsEncodedWhole(t *testing.T) {
	h, store := testHandler(t)
	putPod(t, store, "east", "a")
	putPod(t, store, "west", "b")
	putPod(t, store, "east", "c")
	srv := httptest.NewServer(asUser(h))
	t.Cleanup(srv.Close)
	ctx := context.Background()
	res := storage.Resource{GVR: podsGVR, Kind: "Pod", Namespaced: true}
	cols := h.columnsFor(ctx, podsGVR, "")

	// whole encodes the list q selects as one value, as the handler did
	// before it streamed.
	whole := func(q storage.ListQuery, accept, onlyMetadata, includeObject string) any {
		q.GVR = podsGVR
		page, err := h.store.List(ctx, &q)
		if err != nil {
			t.Fatal(err)
		}
		meta := metav1.ListMeta{ResourceVersion: strconv.FormatInt(page.Revision, 10), Continue: page.Continue}
		var v any
		if strings.Contains(accept, "as=Table") {
			datas := make([][]byte, len(page.Objects))
			for i, o := range page.Objects {
				datas[i] = o.Data
			}
			tbl, err := table(cols, datas, includeObject, true)
			if err != nil {
				t.Fatal(err)
			}
			tbl.ListMeta = meta
			v = tbl
		} else {
			r := httptest.NewRequest(http.MethodGet, "/", nil)
			r.Header.Set("Accept", accept)
			f := formatOf(r, res, onlyMetadata == "true")
			list := listEnvelope{Kind: f.listKind, APIVersion: f.apiVersion, Metadata: meta, Items: []json.RawMessage{}}
			for _, o := range page.Objects {
				item, err := f.item(o.Data)
				if err != nil {
					t.Fatal(err)
				}
				list.Items = append(list.Items, item)
			}
			v = list
		}
		data, err := json.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		var out any
		if err := json.Unmarshal(data, &out); err != nil {
			t.Fatal(err)
		}
		return out
	}
	for _, tc := range []struct {
		query, accept, onlyMetadata, includeObject string
		q                                          storage.ListQuery
	}{
		{}, // a PodList
		{query: "limit=2", q: storage.ListQuery{Limit: 2}},
		{query: "names=none", q: storage.ListQuery{Names: []string{"none"}}}, // "items":[]
		{query: "onlyMetadata=true", onlyMetadata: "true"},
		{accept: partialMetadataType + "List"},
		{accept: tableContentType},
		{accept: tableContentType, query: "includeObject=None", includeObject: "None"},
		{accept: tableContentType, query: "includeObject=Object&limit=1", includeObject: "Object", q: storage.ListQuery{Limit: 1}},
		{accept: tableContentType, query: "names=none", q: storage.ListQuery{Names: []string{"none"}}},
	} {
		req, _ := http.NewRequest(http.MethodGet, srv.URL+searchv1alpha1.ViewPath("")+"/api/v1/pods?"+tc.query, nil)
		req.Header.Set("Accept", tc.accept)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		var got any
		if err := json.Unmarshal(body, &got); resp.StatusCode != http.StatusOK || err != nil {
			t.Fatalf("%q as %q: %d %v %s", tc.query, tc.accept, resp.StatusCode, err, body)
		}
		if want := whole(tc.q, tc.accept, tc.onlyMetadata, tc.includeObject); !reflect.DeepEqual(got, want) {
			t.Errorf("%q as %q:\n got %s\nwant %v", tc.query, tc.accept, body, want)
		}
	}
}

// discard is a ResponseWriter that keeps nothing.
type discard struct{ header http.Header }

func (d *discard) Header() http.Header         { return d.header }
func (d *discard) Write(p []byte) (int, error) { return len(p), nil }
func (d *discard) WriteHeader(int)             {}

// TestStreamListMemory: writing a list allocates about one item, not the
// answer.
func TestStreamListMemory(t *testing.T) {
	const n, size = 10000, 1000
	items := make([][]byte, n)
	for i := range items {
		items[i] = fmt.Appendf(nil, `{"metadata":{"name":"pod-%05d"},"data":%q}`, i, strings.Repeat("x", size))
	}
	r := httptest.NewRequest(http.MethodGet, "/api/v1/pods", nil)
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	streamList(&discard{header: http.Header{}}, r, "application/json", &listEnvelope{Kind: "PodList", APIVersion: "v1", Items: []json.RawMessage{}},
		n, func(i int) ([]byte, error) { return items[i], nil })
	runtime.ReadMemStats(&after)
	if allocated := after.TotalAlloc - before.TotalAlloc; allocated > 64<<10 {
		t.Fatalf("writing a list of %d KiB allocated %d KiB", n*size>>10, allocated>>10)
	}
}

// unboundedCounting is a store that counts the lists asked of it without
// a limit: answers it holds whole.
type unboundedCounting struct {
	storage.Interface
	unbounded atomic.Int32
}

func (s *unboundedCounting) List(ctx context.Context, q *storage.ListQuery) (*storage.ListResult, error) {
	if q.Limit == 0 {
		s.unbounded.Add(1)
	}
	return s.Interface.List(ctx, q)
}

// TestUnpagedListReadsPages: a list without a limit of more objects than
// a page, from the store (the cache holds nothing under a budget of a
// byte), is read a page at a time, never whole, and answers every
// object, at one revision, as one list of the store does.
func TestUnpagedListReadsPages(t *testing.T) {
	base := storagetest.Backends()[0].Open(t)
	var changes []storage.Change
	for i := range 2*unpagedPage + 3 {
		changes = append(changes, storage.Upsert(&unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "Pod",
			"metadata": map[string]any{"name": fmt.Sprintf("pod-%04d", i), "namespace": "ns", "resourceVersion": "1"}}}))
	}
	if _, err := base.ForCluster("east", storage.Unfenced).Apply(context.Background(), podsGVR, changes); err != nil {
		t.Fatal(err)
	}
	store := &unboundedCounting{Interface: base}
	h := testHandlerOver(t, store, watchcache.Options{MemoryBudget: 1})
	srv := httptest.NewServer(asUser(h))
	t.Cleanup(srv.Close)
	whole, err := base.List(context.Background(), &storage.ListQuery{GVR: podsGVR})
	if err != nil {
		t.Fatal(err)
	}
	var want []string
	for _, o := range whole.Objects {
		want = append(want, o.Name)
	}
	code, _, got := getJSON(t, srv.URL+searchv1alpha1.ViewPath("")+"/api/v1/pods", "")
	var names []string
	for _, it := range got["items"].([]any) {
		names = append(names, it.(map[string]any)["metadata"].(map[string]any)["name"].(string))
	}
	meta := got["metadata"].(map[string]any)
	if code != http.StatusOK || !slices.Equal(names, want) || meta["resourceVersion"] != strconv.FormatInt(whole.Revision, 10) || meta["continue"] != nil {
		t.Fatalf("%d, %d of %d items, metadata %v", code, len(names), len(want), meta)
	}
	if n := store.unbounded.Load(); n > 0 {
		t.Errorf("the store was asked %d lists without a limit", n)
	}
}
