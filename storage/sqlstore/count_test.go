package sqlstore_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/panorama-io/panorama/storage"
	"github.com/panorama-io/panorama/storage/storagetest"
)

// TestCountMatchesBruteForce checks counts grouped by every kind of term,
// alone and combined, under the list filters, against the objects
// ListQuery.Matches selects grouped in Go.
func TestCountMatchesBruteForce(t *testing.T) {
	storagetest.ForEach(t, func(t *testing.T, b storagetest.Backend) {
		s := b.Open(t)
		rng := rand.New(rand.NewPCG(3, 4))
		w := generate(t, s, rng, 40)
		// An empty label value is a group of its own, apart from objects
		// without the label.
		empty := object("Pod", "web", "empty-app", "1", func(u *unstructured.Unstructured) { u.SetLabels(map[string]string{"app": ""}) })
		if _, err := s.ForCluster("east", storage.Unfenced).Apply(context.Background(), podsGVR, []storage.Change{storage.Upsert(empty)}); err != nil {
			t.Fatal(err)
		}
		w.put("east", podsGVR, empty)
		terms := []string{"cluster", "namespace", "label:app", "label:tier", "label.example.com/canary", "field:status.phase", "field.spec.nodeName"}
		fixed := [][]string{
			{"cluster"}, {"namespace"}, {"label:app"}, {"field:status.phase"},
			{"cluster", "field:status.phase"}, {"field:spec.nodeName", "label:tier", "cluster", "namespace"},
		}
		for _, groupBy := range fixed {
			checkCount(t, s, w, storage.ListQuery{GVR: podsGVR}, groupBy, 0)
		}
		for i := range 60 {
			q := randomQuery(rng, w)
			q.OrderBy = nil
			var groupBy []string
			for _, j := range rng.Perm(len(terms))[:1+rng.IntN(storage.MaxGroupBy)] {
				groupBy = append(groupBy, terms[j])
			}
			limit := 0
			if i%3 == 0 {
				limit = 1 + rng.IntN(6)
			}
			checkCount(t, s, w, q, groupBy, limit)
		}
	})
}

func checkCount(t *testing.T, s storage.Interface, w *world, q storage.ListQuery, terms []string, limit int) {
	t.Helper()
	cq := storage.CountQuery{Query: q, Limit: limit}
	for _, term := range terms {
		g, err := storage.ParseGroupBy(term)
		if err != nil {
			t.Fatalf("%s: %v", term, err)
		}
		cq.GroupBy = append(cq.GroupBy, g)
	}
	want, wantRemaining := w.expectCounts(&cq)
	res, err := s.Count(context.Background(), &cq)
	if err != nil {
		t.Fatalf("count %v of %s: %v", terms, describe(q), err)
	}
	if got := formatGroups(res.Groups); got != formatGroups(want) || res.RemainingGroups != wantRemaining {
		t.Fatalf("count %v (limit %d) of %s:\n got %s (%d more)\nwant %s (%d more)", terms, limit, describe(q),
			got, res.RemainingGroups, formatGroups(want), wantRemaining)
	}
	if cur, _, _ := s.Revision(context.Background()); res.Revision != cur {
		t.Fatalf("counted at revision %d, current %d", res.Revision, cur)
	}
}

// expectCounts is the brute-force count of q: the objects q.Query selects
// (w.expect), grouped in Go.
func (w *world) expectCounts(q *storage.CountQuery) ([]storage.CountGroup, int64) {
	var objs []*storage.Object
	for _, key := range w.expect(&q.Query) {
		objs = append(objs, w.objects[key])
	}
	return groupInGo(objs, q)
}

// groupInGo counts objs by q's terms, largest first, cut at q's limit.
func groupInGo(objs []*storage.Object, q *storage.CountQuery) ([]storage.CountGroup, int64) {
	counts := map[string]*storage.CountGroup{}
	for _, o := range objs {
		// An object counts once in each group of the product of its
		// terms' values: a field may have several, a missing one is nil.
		groups := [][]*string{nil}
		for _, g := range q.GroupBy {
			var options []*string
			switch g.Kind {
			case storage.GroupCluster:
				options = []*string{&o.Cluster}
			case storage.GroupNamespace:
				options = []*string{&o.Namespace}
			case storage.GroupLabel:
				if v, ok := o.Labels[g.Key]; ok {
					options = []*string{&v}
				}
			case storage.GroupField:
				for _, v := range o.Fields[g.Key] {
					options = append(options, &v)
				}
			}
			if options == nil {
				options = []*string{nil}
			}
			var next [][]*string
			for _, values := range groups {
				for _, v := range options {
					next = append(next, append(slices.Clone(values), v))
				}
			}
			groups = next
		}
		for _, values := range groups {
			id := formatValues(values)
			if counts[id] == nil {
				counts[id] = &storage.CountGroup{Values: values}
			}
			counts[id].Count++
		}
	}
	var out []storage.CountGroup
	for _, g := range counts {
		out = append(out, *g)
	}
	slices.SortFunc(out, func(a, b storage.CountGroup) int { return storage.CompareGroups(&a, &b) })
	limit := q.Limit
	if limit == 0 {
		limit = storage.DefaultCountLimit
	}
	if len(out) > limit {
		return out[:limit], int64(len(out) - limit)
	}
	return out, 0
}

func formatValues(values []*string) string {
	parts := make([]string, len(values))
	for i, v := range values {
		parts[i] = "<none>"
		if v != nil {
			parts[i] = fmt.Sprintf("%q", *v)
		}
	}
	return strings.Join(parts, "/")
}

func formatGroups(groups []storage.CountGroup) string {
	parts := make([]string, len(groups))
	for i, g := range groups {
		parts[i] = fmt.Sprintf("%s=%d", formatValues(g.Values), g.Count)
	}
	return "[" + strings.Join(parts, " ") + "]"
}

// TestCountUnderConcurrentWrites: while pods change, each count equals
// the same grouping of the list at the revision the count reports.
func TestCountUnderConcurrentWrites(t *testing.T) {
	storagetest.ForEach(t, func(t *testing.T, b storagetest.Backend) {
		s := b.Open(t)
		rng := rand.New(rand.NewPCG(5, 6))
		generate(t, s, rng, 30)
		ctx, cancel := context.WithCancel(context.Background())
		writer := make(chan error, 1)
		go func() {
			wrng := rand.New(rand.NewPCG(7, 8))
			for i := 0; ctx.Err() == nil; i++ {
				var changes []storage.Change
				for j := range 10 {
					name := fmt.Sprintf("churn-%d", wrng.IntN(40))
					if j%4 == 0 {
						changes = append(changes, storage.Delete("web", name))
						continue
					}
					changes = append(changes, storage.Upsert(object("Pod", "web", name, fmt.Sprint(i*10+j+2), withLabels(wrng), withPodFields(wrng))))
				}
				if _, err := s.ForCluster(clusters[i%len(clusters)], storage.Unfenced).Apply(ctx, podsGVR, changes); err != nil && ctx.Err() == nil {
					writer <- err
					return
				}
			}
			writer <- nil
		}()
		var groupBy []storage.GroupBy
		for _, term := range []string{"cluster", "field:status.phase", "label:app"} {
			g, _ := storage.ParseGroupBy(term)
			groupBy = append(groupBy, g)
		}
		for range 15 {
			q := storage.CountQuery{Query: storage.ListQuery{GVR: podsGVR}, GroupBy: groupBy}
			res, err := s.Count(context.Background(), &q)
			if err != nil {
				t.Fatal(err)
			}
			_, listed, _ := listAll(t, s, storage.ListQuery{GVR: podsGVR, Revision: res.Revision}, nil)
			objs := make([]*storage.Object, len(listed))
			for i := range listed {
				o, err := storage.DecodeStored(listed[i].Data)
				if err != nil {
					t.Fatal(err)
				}
				o.Cluster = listed[i].Cluster
				objs[i] = &o
			}
			want, _ := groupInGo(objs, &q)
			if got := formatGroups(res.Groups); got != formatGroups(want) {
				t.Fatalf("count at revision %d:\n got %s\nwant %s (the list at that revision)", res.Revision, got, formatGroups(want))
			}
		}
		cancel()
		if err := <-writer; err != nil {
			t.Fatal(err)
		}
	})
}

// TestCountRefusesBadInput: what a count cannot mean is an Invalid error,
// before any SQL.
func TestCountRefusesBadInput(t *testing.T) {
	s := storagetest.Backends()[0].Open(t)
	for _, term := range []string{"name", "label:", "label:bad key", "field:metadata.name", "cluster:x", "owner:x"} {
		if _, err := storage.ParseGroupBy(term); !storage.IsInvalid(err) {
			t.Errorf("groupBy %q: %v, want Invalid", term, err)
		}
	}
	cluster := storage.GroupBy{Kind: storage.GroupCluster}
	for name, q := range map[string]storage.CountQuery{
		"no group":             {Query: storage.ListQuery{GVR: podsGVR}},
		"twice":                {Query: storage.ListQuery{GVR: podsGVR}, GroupBy: []storage.GroupBy{cluster, cluster}},
		"not indexed":          {Query: storage.ListQuery{GVR: podsGVR}, GroupBy: []storage.GroupBy{{Kind: storage.GroupField, Key: "spec.unknown"}}},
		"too many":             {Query: storage.ListQuery{GVR: podsGVR}, GroupBy: slices.Repeat([]storage.GroupBy{cluster}, storage.MaxGroupBy+1)},
		"continue":             {Query: storage.ListQuery{GVR: podsGVR, Continue: "x"}, GroupBy: []storage.GroupBy{cluster}},
		"revision":             {Query: storage.ListQuery{GVR: podsGVR, Revision: 1}, GroupBy: []storage.GroupBy{cluster}},
		"limit":                {Query: storage.ListQuery{GVR: podsGVR}, GroupBy: []storage.GroupBy{cluster}, Limit: storage.MaxLimit + 1},
		"NUL label key":        {Query: storage.ListQuery{GVR: podsGVR}, GroupBy: []storage.GroupBy{{Kind: storage.GroupLabel, Key: "a\x00"}}},
		"unknown kind":         {Query: storage.ListQuery{GVR: podsGVR}, GroupBy: []storage.GroupBy{{Kind: "owner"}}},
		"query invalid":        {Query: storage.ListQuery{GVR: podsGVR, Names: []string{"\x00"}}, GroupBy: []storage.GroupBy{cluster}},
		"no resource":          {GroupBy: []storage.GroupBy{cluster}},
		"cluster keyed":        {Query: storage.ListQuery{GVR: podsGVR}, GroupBy: []storage.GroupBy{{Kind: storage.GroupCluster, Key: "x"}}},
		"negative limit":       {Query: storage.ListQuery{GVR: podsGVR}, GroupBy: []storage.GroupBy{cluster}, Limit: -1},
		"held since, selector": {Query: storage.ListQuery{GVR: podsGVR, FuzzyName: "web"}, GroupBy: []storage.GroupBy{cluster}, HeldSince: true},
		"held since, two keys": {Query: storage.ListQuery{GVR: podsGVR}, HeldSince: true,
			GroupBy: []storage.GroupBy{{Kind: storage.GroupLabel, Key: "app"}, {Kind: storage.GroupField, Key: "images"}}},
		"held since, per object": {Query: storage.ListQuery{GVR: podsGVR}, HeldSince: true,
			GroupBy: []storage.GroupBy{{Kind: storage.GroupField, Key: "status.podIP"}}},
	} {
		if _, err := s.Count(context.Background(), &q); !storage.IsInvalid(err) {
			t.Errorf("%s: %v, want Invalid", name, err)
		}
	}
}
