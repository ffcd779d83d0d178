package sqlstore_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/panorama-io/panorama/storage"
	"github.com/panorama-io/panorama/storage/storagetest"
)

// heldPod is what a period depends on of a pod in TestHeldSinceMatchesHistory.
type heldPod struct {
	cluster, namespace, app string
	images                  []string
}

// heldState is the pods at one revision, by cluster, namespace and name.
type heldState map[[3]string]heldPod

// heldSnapshot is the state after the write at rev, committed between
// from and to.
type heldSnapshot struct {
	rev      int64
	from, to time.Time
	pods     heldState
}

// TestHeldSinceMatchesHistory writes random creates, updates and deletes
// of pods one at a time, keeping every state, and checks each group's
// period (CountGroup.HeldSince) against the states: the write after which
// the group had objects at every revision, exactly for a cluster's or a
// namespace's cells, the earliest of theirs for a count that sums them.
func TestHeldSinceMatchesHistory(t *testing.T) {
	storagetest.ForEach(t, func(t *testing.T, b storagetest.Backend) {
		s := b.Open(t)
		ctx := context.Background()
		rng := rand.New(rand.NewPCG(7, 11))
		clusters, namespaces := []string{"east", "west"}, []string{"web", "db", "ops"}
		images := []string{"nginx:1.27", "redis:7", "busybox", "envoy:v1"}
		state := heldState{}
		var history []heldSnapshot
		for step := range 160 {
			cluster := clusters[rng.IntN(len(clusters))]
			ns := namespaces[rng.IntN(len(namespaces))]
			name := fmt.Sprint("p", rng.IntN(6))
			key := [3]string{cluster, ns, name}
			var change storage.Change
			if _, ok := state[key]; ok && rng.IntN(3) == 0 {
				delete(state, key)
				change = storage.Delete(ns, name)
			} else {
				p := heldPod{cluster: cluster, namespace: ns}
				if rng.IntN(3) > 0 {
					p.app = []string{"web", "db"}[rng.IntN(2)]
				}
				for range rng.IntN(3) {
					if img := images[rng.IntN(len(images))]; !slices.Contains(p.images, img) {
						p.images = append(p.images, img)
					}
				}
				state[key] = p
				change = storage.Upsert(object("Pod", ns, name, fmt.Sprint(step), withHeldPod(p)))
			}
			from := time.Now()
			rev, err := s.ForCluster(cluster, storage.Unfenced).Apply(ctx, podsGVR, []storage.Change{change})
			if err != nil {
				t.Fatal(err)
			}
			history = append(history, heldSnapshot{rev: rev, from: from, to: time.Now(), pods: clone(state)})
			if step%40 == 39 {
				checkHeldSince(t, s, history)
			}
		}
	})
}

func withHeldPod(p heldPod) func(*unstructured.Unstructured) {
	return func(u *unstructured.Unstructured) {
		if p.app != "" {
			u.SetLabels(map[string]string{"app": p.app})
		}
		var containers []any
		for i, img := range p.images {
			containers = append(containers, map[string]any{"name": fmt.Sprint("c", i), "image": img})
		}
		_ = unstructured.SetNestedSlice(u.Object, containers, "spec", "containers")
	}
}

func clone(s heldState) heldState {
	out := make(heldState, len(s))
	for k, v := range s {
		out[k] = v
	}
	return out
}

// checkHeldSince counts by several groupings, as the whole fleet, one
// cluster and a namespace-limited reader would, and checks every group's
// period against history.
func checkHeldSince(t *testing.T, s storage.Interface, history []heldSnapshot) {
	t.Helper()
	cases := []struct {
		terms      []string
		clusters   []string
		namespaces []string
	}{
		{terms: []string{"cluster", "field:images"}},
		{terms: []string{"field:images"}, clusters: []string{"west"}},
		{terms: []string{"cluster", "namespace", "label:app"}},
		{terms: []string{"label:app"}},
		{terms: []string{"cluster"}},
		{terms: []string{"cluster", "field:images"}, namespaces: []string{"web", "db"}},
		{terms: []string{"namespace"}, clusters: []string{"east"}, namespaces: []string{"ops"}},
	}
	for _, c := range cases {
		q := storage.CountQuery{Query: storage.ListQuery{GVR: podsGVR, Clusters: c.clusters, Namespaces: c.namespaces},
			HeldSince: true, Limit: storage.MaxLimit}
		for _, term := range c.terms {
			g, err := storage.ParseGroupBy(term)
			if err != nil {
				t.Fatal(err)
			}
			q.GroupBy = append(q.GroupBy, g)
		}
		res, err := s.Count(context.Background(), &q)
		if err != nil {
			t.Fatalf("%v: %v", c.terms, err)
		}
		want := expectPeriods(history, &q)
		got := map[string]storage.HeldSince{}
		for _, g := range res.Groups {
			k := formatValues(g.Values)
			if lacks := slices.Contains(g.Values, nil) && slices.ContainsFunc(q.GroupBy, isAttribute); lacks {
				if g.HeldSince != nil {
					t.Errorf("%v %s: the group lacking the key has a period %+v", c.terms, k, *g.HeldSince)
				}
				continue
			}
			if g.HeldSince == nil {
				t.Errorf("%v %s: no period", c.terms, k)
				continue
			}
			got[k] = *g.HeldSince
		}
		for k, w := range want {
			g, ok := got[k]
			switch {
			case !ok:
				t.Errorf("%v %s: missing, want the period from %d", c.terms, k, w.rev)
			case g.Revision != w.rev:
				t.Errorf("%v %s: held since %d, want %d", c.terms, k, g.Revision, w.rev)
			case g.Time.Before(w.from.Truncate(time.Microsecond)) || g.Time.After(w.to):
				t.Errorf("%v %s: held since %s, want a time of its write, between %s and %s", c.terms, k, g.Time, w.from, w.to)
			}
		}
		for k := range got {
			if _, ok := want[k]; !ok {
				t.Errorf("%v %s: a group no object is in", c.terms, k)
			}
		}
	}
}

func isAttribute(g storage.GroupBy) bool {
	return g.Kind == storage.GroupLabel || g.Kind == storage.GroupField
}

// expectPeriods is the period of each group of q with objects at the last
// state, from history: for each scope whose cells the store keeps (a
// cluster's namespace, or the whole cluster for a label or field unless
// namespaces matter), the first write after which the group had objects in
// it at every state; summed over scopes, the earliest of theirs.
func expectPeriods(history []heldSnapshot, q *storage.CountQuery) map[string]heldSnapshot {
	byNamespace := len(q.Query.Namespaces) > 0 || !slices.ContainsFunc(q.GroupBy, isAttribute) ||
		slices.ContainsFunc(q.GroupBy, func(g storage.GroupBy) bool { return g.Kind == storage.GroupNamespace })
	// groups maps each scope of each group to the group.
	groupsAt := func(s heldState) map[[2]string]string {
		out := map[[2]string]string{}
		for _, p := range s {
			if len(q.Query.Clusters) > 0 && !slices.Contains(q.Query.Clusters, p.cluster) ||
				len(q.Query.Namespaces) > 0 && !slices.Contains(q.Query.Namespaces, p.namespace) {
				continue
			}
			for _, values := range groupValues(p, q.GroupBy) {
				scope := p.cluster
				if byNamespace {
					scope += "/" + p.namespace
				}
				out[[2]string{values, scope}] = values
			}
		}
		return out
	}
	last := groupsAt(history[len(history)-1].pods)
	want := map[string]heldSnapshot{}
	for cell, group := range last {
		start := len(history) - 1
		for start > 0 {
			if _, held := groupsAt(history[start-1].pods)[cell]; !held {
				break
			}
			start--
		}
		if w, ok := want[group]; !ok || history[start].rev < w.rev {
			want[group] = history[start]
		}
	}
	return want
}

// groupValues are the groups p is in, as formatValues spells them (one
// per image when grouped by images), but those lacking the key, which have
// no period.
func groupValues(p heldPod, groupBy []storage.GroupBy) []string {
	out := [][]*string{nil}
	for _, g := range groupBy {
		var values []string
		switch {
		case g.Kind == storage.GroupCluster:
			values = []string{p.cluster}
		case g.Kind == storage.GroupNamespace:
			values = []string{p.namespace}
		case g.Kind == storage.GroupLabel && p.app != "":
			values = []string{p.app}
		case g.Kind == storage.GroupField && len(p.images) > 0:
			values = p.images
		default:
			return nil
		}
		var next [][]*string
		for _, prefix := range out {
			for _, v := range values {
				next = append(next, append(slices.Clone(prefix), &v))
			}
		}
		out = next
	}
	formatted := make([]string, len(out))
	for i, values := range out {
		formatted[i] = formatValues(values)
	}
	return formatted
}

// TestHeldSinceUnknown: a period whose start the writes cannot know is
// unknown (zero), never a write that found it under way: values of
// objects a list found, which may have been held before, and of a field
// declared after its objects were stored; a watched write begins a known
// one.
func TestHeldSinceUnknown(t *testing.T) {
	storagetest.ForEach(t, func(t *testing.T, b storagetest.Backend) {
		s := b.Open(t)
		ctx := context.Background()
		memberRV := 0
		write := func(listed bool, name, image, tenant string) int64 {
			t.Helper()
			memberRV++
			pod := object("Pod", "web", name, fmt.Sprint(memberRV), withHeldPod(heldPod{images: []string{image}}), func(u *unstructured.Unstructured) {
				_ = unstructured.SetNestedField(u.Object, tenant, "spec", "tenant")
			})
			c := storage.Upsert(pod)
			c.Listed = listed
			rev, err := s.ForCluster("east", storage.Unfenced).Apply(ctx, podsGVR, []storage.Change{c})
			if err != nil {
				t.Fatal(err)
			}
			return rev
		}
		periods := func(term string) map[string]int64 {
			t.Helper()
			g, err := storage.ParseGroupBy(term)
			if err != nil {
				t.Fatal(err)
			}
			res, err := s.Count(ctx, &storage.CountQuery{Query: storage.ListQuery{GVR: podsGVR}, GroupBy: []storage.GroupBy{g}, HeldSince: true})
			if err != nil {
				t.Fatal(err)
			}
			out := map[string]int64{}
			for _, g := range res.Groups {
				if g.HeldSince != nil {
					out[formatValues(g.Values)] = g.HeldSince.Revision
				}
			}
			return out
		}
		write(true, "listed", "nginx", "acme")
		watched := write(false, "watched", "redis", "acme")
		write(true, "listed-too", "redis", "acme") // a period under way goes on
		want := map[string]int64{`"nginx"`: 0, `"redis"`: watched}
		if got := periods("field:images"); fmt.Sprint(got) != fmt.Sprint(want) {
			t.Errorf("images: %v, want %v", got, want)
		}

		// Declared after the pods: the reindex finds tenant's value on rows
		// written before, some batches of them, while a pod is written
		// again and again, indexed with the field as soon as it is
		// declared: whichever comes first, the period is unknown.
		var before []storage.Change
		for i := range 1200 {
			before = append(before, storage.Upsert(object("Pod", "web", fmt.Sprint("old-", i), "1", func(u *unstructured.Unstructured) {
				_ = unstructured.SetNestedField(u.Object, "acme", "spec", "tenant")
			})))
		}
		if _, err := s.ForCluster("east", storage.Unfenced).Apply(ctx, podsGVR, before); err != nil {
			t.Fatal(err)
		}
		done := make(chan error)
		go func() {
			done <- s.DeclareFields(ctx, []storage.FieldDeclaration{{Name: "tenant", Paths: []string{"spec.tenant"}}})
		}()
		for declaring := true; declaring; {
			select {
			case err := <-done:
				if err != nil {
					t.Fatal(err)
				}
				declaring = false
			default:
				write(false, "after", "redis", "acme")
			}
		}
		if got, want := periods("field:tenant"), map[string]int64{`"acme"`: 0}; fmt.Sprint(got) != fmt.Sprint(want) {
			t.Errorf("a declared field: %v, want %v", got, want)
		}
	})
}
