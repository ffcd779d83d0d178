package v1alpha1

import (
	"encoding/json"
	"testing"
	"time"

	apiequality "k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
)

// The JSON of Counts and History is what the API server has always served
// (test/e2e's counts and history tests read it): these spell it out, field
// name by field name, so that a change of a tag or of an embedding shows.
func TestWireJSON(t *testing.T) {
	remaining := int64(3)
	at := metav1.NewMicroTime(time.Date(2026, 12, 3, 14, 5, 0, 0, time.UTC))
	for name, tc := range map[string]struct {
		obj  runtime.Object
		want string
	}{
		"counts": {
			obj: &Counts{
				TypeMeta: metav1.TypeMeta{Kind: "Counts", APIVersion: SchemeGroupVersion.String()},
				ListMeta: metav1.ListMeta{ResourceVersion: "42", RemainingItemCount: &remaining},
				GroupBy:  []string{"cluster", "label:app"},
				Items: []CountsGroup{
					{Group: map[string]string{"cluster": "east", "label:app": "web"}, Count: 2},
					{Group: map[string]string{"cluster": "west"}, Count: 1},
				},
			},
			want: `{"kind":"Counts","apiVersion":"search.panorama.io/v1alpha1",` +
				`"metadata":{"resourceVersion":"42","remainingItemCount":3},"groupBy":["cluster","label:app"],` +
				`"items":[{"group":{"cluster":"east","label:app":"web"},"count":2},{"group":{"cluster":"west"},"count":1}]}`,
		},
		"empty counts": {
			obj:  &Counts{TypeMeta: metav1.TypeMeta{Kind: "Counts", APIVersion: SchemeGroupVersion.String()}, GroupBy: []string{}, Items: []CountsGroup{}},
			want: `{"kind":"Counts","apiVersion":"search.panorama.io/v1alpha1","metadata":{},"groupBy":[],"items":[]}`,
		},
		"history": {
			obj: &History{
				TypeMeta: metav1.TypeMeta{Kind: "History", APIVersion: SchemeGroupVersion.String()},
				Items: []HistoryItem{
					{Revision: 7, Time: &at, MemberResourceVersion: "100", Type: watch.Added, Patch: json.RawMessage(`{"metadata":{"name":"web"}}`)},
					{Revision: 9, Type: watch.Deleted, Patch: json.RawMessage(`null`)},
				},
			},
			want: `{"kind":"History","apiVersion":"search.panorama.io/v1alpha1","metadata":{},"items":[` +
				`{"revision":7,"time":"2026-12-03T14:05:00.000000Z","memberResourceVersion":"100","type":"ADDED","patch":{"metadata":{"name":"web"}}},` +
				`{"revision":9,"type":"DELETED","patch":null}]}`,
		},
	} {
		t.Run(name, func(t *testing.T) {
			got, err := json.Marshal(tc.obj)
			if err != nil {
				t.Fatal(err)
			}
			if string(got) != tc.want {
				t.Fatalf("JSON:\n got %s\nwant %s", got, tc.want)
			}
			back := tc.obj.DeepCopyObject()
			if err := json.Unmarshal(got, back); err != nil {
				t.Fatal(err)
			}
			if !apiequality.Semantic.DeepEqual(back, tc.obj) {
				t.Errorf("round trip: got %#v, want %#v", back, tc.obj)
			}
		})
	}
}

// TestScheme checks that every kind served is registered, so that a scheme
// with the group decodes it.
func TestScheme(t *testing.T) {
	scheme := runtime.NewScheme()
	if err := AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	for _, kind := range []string{"CollectionResource", "CollectionResourceList", "Counts", "History"} {
		if !scheme.Recognizes(SchemeGroupVersion.WithKind(kind)) {
			t.Errorf("kind %s is not registered", kind)
		}
	}
}

func TestViewPath(t *testing.T) {
	for cluster, want := range map[string]string{
		"":           "/apis/search.panorama.io/v1alpha1/clusters/_all/proxy",
		"east":       "/apis/search.panorama.io/v1alpha1/clusters/east/proxy",
		FlatClusters: "/apis/search.panorama.io/v1alpha1/clusters/_flat/proxy",
	} {
		if got := ViewPath(cluster); got != want {
			t.Errorf("ViewPath(%q) = %q, want %q", cluster, got, want)
		}
	}
}
