package watchcache

import (
	"fmt"
	"maps"
	"math/rand/v2"
	"reflect"
	"slices"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/panorama-io/panorama/storage"
)

var indexedPods = schema.GroupVersionResource{Version: "v1", Resource: "pods"}

// randomObject is object i with labels and fields drawn from small sets,
// so that queries hit: some lack a label or field, some have a field
// value no database can store, some a label value shared by no other.
func randomObject(rng *rand.Rand, i int) *storage.Object {
	o := &storage.Object{Key: storage.Key{Cluster: []string{"east", "west", "north"}[rng.IntN(3)], GVR: indexedPods,
		Namespace: []string{"", "ns-1", "ns-2"}[rng.IntN(3)], Name: fmt.Sprintf("pod-%d", i)},
		Labels: map[string]string{}, Fields: map[string][]string{}, CreatedAt: int64(rng.IntN(100))}
	if n := rng.IntN(4); n > 0 {
		o.Labels["app"] = []string{"", "web", "db"}[n-1]
	}
	if rng.IntN(2) == 0 {
		o.Labels["tier"] = []string{"front", "back"}[rng.IntN(2)]
	}
	if rng.IntN(5) == 0 {
		o.Labels["pod-name"] = fmt.Sprintf("unique-%d", i)
	}
	if rng.IntN(4) > 0 {
		o.Labels["rank"] = fmt.Sprint(rng.IntN(5))
	}
	if n := rng.IntN(4); n > 0 {
		o.Fields["status.phase"] = []string{[]string{"Running", "Pending", "bad\xff"}[n-1]}
	}
	var images []string
	for range rng.IntN(4) {
		images = append(images, []string{"nginx:1.27", "registry.example/app:1", "app:2", "bad\x00"}[rng.IntN(4)])
	}
	if slices.Sort(images); len(images) > 0 {
		o.Fields[storage.ImagesField] = slices.Compact(images)
	}
	var refs []string
	for range rng.IntN(4) {
		refs = append(refs, referenceValues[rng.IntN(len(referenceValues))])
	}
	if slices.Sort(refs); len(refs) > 0 {
		o.Fields[storage.ReferencesField] = slices.Compact(refs)
	}
	for range rng.IntN(5) {
		o.Keywords = append(o.Keywords, keywordWords[rng.IntN(len(keywordWords))])
	}
	slices.Sort(o.Keywords)
	o.Keywords = slices.Compact(o.Keywords)
	return o
}

// keywordWords are words that are prefixes of each other.
var keywordWords = []string{"web", "webhook", "web1", "db", "db10", "nginx", "1", "10"}

// referenceValues are references of names that are prefixes of each
// other, in two namespaces and cluster-scoped.
var referenceValues = []string{"Secret/db/ns-1", "Secret/db-pass/ns-1", "Secret/db-pass/ns-2", "Secret/db-pass-old/ns-1",
	"Node/node-1", "Node/node-10", "ReplicaSet.apps/web/ns-1"}

func parsedLabels(t *testing.T, s string) labels.Requirements {
	t.Helper()
	sel, err := labels.Parse(s)
	if err != nil {
		t.Fatal(err)
	}
	reqs, _ := sel.Requirements()
	return reqs
}

func parsedFields(t *testing.T, s string) fields.Requirements {
	t.Helper()
	sel, err := fields.ParseSelector(s)
	if err != nil {
		t.Fatal(err)
	}
	return sel.Requirements()
}

// TestIndexSelectsAndCountsAsReading: for random objects put, replaced
// and removed at random, the index selects exactly the objects that
// ListQuery.Matches accepts, under every kind of filter, and counting by
// intersecting its sets groups exactly as reading the objects does. When
// every object is gone, it holds no set any more.
func TestIndexSelectsAndCountsAsReading(t *testing.T) {
	since := time.Unix(50, 0)
	queries := []storage.ListQuery{
		{},
		{Clusters: []string{"east", "nowhere"}},
		{Namespaces: []string{""}},
		{Namespaces: []string{"ns-1", "ns-2"}, Clusters: []string{"west"}},
		{Labels: parsedLabels(t, "app=web")},
		{Labels: parsedLabels(t, "app=")},
		{Labels: parsedLabels(t, "app!=web")},
		{Labels: parsedLabels(t, "app in (web,db),tier notin (back)")},
		{Labels: parsedLabels(t, "tier,!app")},
		{Labels: parsedLabels(t, "absent=x")},
		{Labels: parsedLabels(t, "absent!=x")},
		{Labels: parsedLabels(t, "!absent")},
		{Labels: parsedLabels(t, "rank>2")},
		{Labels: parsedLabels(t, "pod-name=unique-3")},
		{Fields: parsedFields(t, "status.phase=Running")},
		{Fields: parsedFields(t, "status.phase!=Running")},
		{Fields: parsedFields(t, "status.phase=")},
		{Fields: parsedFields(t, "status.phase!=")},
		{Fields: parsedFields(t, "metadata.namespace=ns-1")},
		{Fields: parsedFields(t, "metadata.namespace!=")},
		{Fields: parsedFields(t, "metadata.name=pod-7")},
		{Fields: parsedFields(t, "spec.nodeName=")},
		{Fields: parsedFields(t, "spec.nodeName=a")},
		{Fields: parsedFields(t, storage.ImagesField+"=app:2")},
		{Images: []string{"nginx", "example/"}},
		{Images: []string{"nothing"}},
		{FuzzyName: "1", Labels: parsedLabels(t, "tier=front")},
		{Names: []string{"pod-1", "pod-2"}},
		{FuzzyName: "d-1"},
		{Fields: parsedFields(t, "metadata.name!=pod-3")},
		{CreatedSince: &since},
		{RefersTo: []storage.Reference{{Kind: "Secret", Name: "db-pass"}}},
		{RefersTo: []storage.Reference{{Kind: "Secret", Namespace: "ns-2", Name: "db-pass"}}},
		{RefersTo: []storage.Reference{{Kind: "Secret", Name: "db"}, {Kind: "Node", Name: "node-1"}}},
		{RefersTo: []storage.Reference{{Group: "apps", Kind: "ReplicaSet", Name: "web"}}, Labels: parsedLabels(t, "app=web")},
		{RefersTo: []storage.Reference{{Kind: "Secret", Name: "db-"}}},
		{Objects: []storage.ObjectName{{Cluster: "east", Namespace: "ns-1", Name: "pod-1"}, {Cluster: "west", Name: "pod-2"}, {Cluster: "north", Namespace: "ns-2", Name: "pod-3"}}},
		{Objects: []storage.ObjectName{}},
		{Keywords: []storage.Keyword{{Word: "web"}}},
		{Keywords: []storage.Keyword{{Word: "web", Prefix: true}, {Word: "1"}}},
		{Keywords: []storage.Keyword{{Word: "db1", Prefix: true}}, Labels: parsedLabels(t, "app=web")},
		{Keywords: []storage.Keyword{{Word: "absent", Prefix: true}}},
	}
	terms := [][]string{
		{"cluster"}, {"namespace"}, {"label:app"}, {"label:absent"}, {"label:pod-name"},
		{"field:status.phase"}, {"field:" + storage.ImagesField},
		{"cluster", "label:app"}, {"field:" + storage.ImagesField, "label:tier", "namespace"},
		{"label:app", "field:status.phase", "cluster", "label:tier"},
	}
	rng := rand.New(rand.NewPCG(11, 11))
	x := newIndex()
	live := map[storage.Key]*storage.Object{}
	for round := range 6 {
		for range 300 {
			i := rng.IntN(400)
			o := randomObject(rng, i)
			// Remove by the key the object of that name has, whatever its
			// cluster and namespace now.
			var old *storage.Object
			for k, v := range live {
				if k.Name == o.Name {
					old = v
				}
			}
			switch {
			case old != nil && rng.IntN(3) == 0:
				x.remove(old.Key)
				delete(live, old.Key)
			case old != nil:
				o.Key = old.Key
				fallthrough
			default:
				x.put(o)
				live[o.Key] = o
			}
		}
		if x.len() != len(live) || int(x.live.GetCardinality()) != len(live) {
			t.Fatalf("round %d: the index holds %d objects (%d live slots), want %d", round, x.len(), x.live.GetCardinality(), len(live))
		}
		for _, q := range queries {
			q.GVR = indexedPods
			var want []string
			for _, o := range live {
				if q.Matches(o, nil) {
					want = append(want, o.Name)
				}
			}
			sel, residual := x.selection(&q)
			var got []string
			for _, o := range x.objects(sel) {
				if !residual || q.Matches(o, nil) {
					got = append(got, o.Name)
				}
			}
			slices.Sort(want)
			slices.Sort(got)
			if !slices.Equal(got, want) {
				t.Fatalf("round %d: %+v selected %d objects, want %d:\n%v\n%v", round, q, len(got), len(want), got, want)
			}
			if residual {
				continue
			}
			for _, spelled := range terms {
				var groupBy []storage.GroupBy
				for _, s := range spelled {
					g, err := storage.ParseGroupBy(s)
					if err != nil {
						t.Fatal(err)
					}
					groupBy = append(groupBy, g)
				}
				intersected := map[groupKey]int64{}
				x.countGroups(intersected, groupBy, sel, groupKey{}, 0)
				read := scanCount(&q, groupBy, slices.Collect(maps.Values(live)))
				if !reflect.DeepEqual(intersected, read) {
					t.Fatalf("round %d: %+v by %v: intersecting counted\n%v\nreading\n%v", round, q, spelled, intersected, read)
				}
			}
		}
	}
	for k := range live {
		x.remove(k)
	}
	if len(x.labels)+len(x.fields)+len(x.clusters)+len(x.namespaces)+len(x.names)+len(x.words)+x.wordOrder.Len() != 0 || !x.live.IsEmpty() {
		t.Errorf("with every object removed the index still holds labels %d, fields %d, clusters %d, namespaces %d, names %d, words %d, live %d",
			len(x.labels), len(x.fields), len(x.clusters), len(x.namespaces), len(x.names), len(x.words), x.live.GetCardinality())
	}
}

// TestWalkSeeksOverOtherNamespaces: a walk of some namespaces, across all
// clusters or some, returns the page a sort of the selection would, and
// visits about the objects of its page and one more a range it seeks
// over, not the other namespaces' objects between them.
func TestWalkSeeksOverOtherNamespaces(t *testing.T) {
	clusters := []string{"east", "north", "west"}
	r := newResource(indexedPods, 16, nil)
	var all []*storage.Object
	for _, c := range clusters {
		for ns := range 30 {
			for i := range 20 {
				o := &storage.Object{Key: storage.Key{Cluster: c, GVR: indexedPods, Namespace: fmt.Sprintf("ns-%02d", ns), Name: fmt.Sprintf("pod-%02d", i)}}
				r.objects.put(o)
				all = append(all, o)
			}
		}
	}
	slices.SortFunc(all, func(a, b *storage.Object) int { return storage.CompareKeys(a.Key, b.Key) })
	const want = 25
	for _, q := range []storage.ListQuery{
		{Namespaces: []string{"ns-17"}},
		{Namespaces: []string{"ns-29", "ns-03", "ns-17"}},
		{Clusters: []string{"west", "east"}, Namespaces: []string{"ns-17", "ns-00"}},
		{Clusters: []string{"north"}},
		{Clusters: []string{"north", "south"}, Namespaces: []string{"ns-05"}},
	} {
		selected := slices.DeleteFunc(slices.Clone(all), func(o *storage.Object) bool {
			return len(q.Clusters) > 0 && !slices.Contains(q.Clusters, o.Cluster) || len(q.Namespaces) > 0 && !slices.Contains(q.Namespaces, o.Namespace)
		})
		sel, residual := r.objects.selection(&q)
		// Pages from the start and from within the selection.
		for _, from := range []int{-1, 10, len(selected) - want/2} {
			var after *storage.Key
			if from >= 0 {
				after = &selected[from].Key
			}
			current := func(o *storage.Object) bool { return after == nil || storage.CompareKeys(o.Key, *after) > 0 }
			wantPage := selected[from+1 : min(from+1+want, len(selected))]
			// Each range is sought once and its end visited once more.
			budget := uint64(want + 2*len(clusters)*(len(q.Namespaces)+1) + 2)
			got := r.walk(&q, after, sel, residual, current, want, budget)
			if got == nil {
				t.Fatalf("clusters %v namespaces %v after %v: the walk visited more than %d objects", q.Clusters, q.Namespaces, after, budget)
			}
			if !slices.Equal(got, wantPage) {
				t.Errorf("clusters %v namespaces %v after %v: the walk found %d objects, want %d", q.Clusters, q.Namespaces, after, len(got), len(wantPage))
			}
		}
	}
}
