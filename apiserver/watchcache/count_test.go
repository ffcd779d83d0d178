package watchcache_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/panorama-io/panorama/apiserver/watchcache"
	"github.com/panorama-io/panorama/storage"
	"github.com/panorama-io/panorama/storage/storagetest"
)

// countedPod is pod i of the counts' tests: some lack the app label or a
// phase, and some run the same image twice, which counts once.
func countedPod(rng *rand.Rand, i, round int) storage.Change {
	meta := map[string]any{"name": fmt.Sprintf("pod-%d", i), "namespace": fmt.Sprintf("ns-%d", i%3),
		"resourceVersion": fmt.Sprint(round)}
	lbls := map[string]any{"tier": []string{"front", "back"}[rng.IntN(2)]}
	if app := rng.IntN(4); app > 0 {
		lbls["app"] = fmt.Sprintf("app-%d", app)
	}
	meta["labels"] = lbls
	images := []any{map[string]any{"name": "app", "image": fmt.Sprintf("app:%d", rng.IntN(3))}}
	if rng.IntN(2) == 0 {
		images = append(images, map[string]any{"name": "web", "image": []string{"nginx", "app:0"}[rng.IntN(2)]})
	}
	status := map[string]any{}
	if phase := rng.IntN(3); phase > 0 {
		status["phase"] = []string{"", "Running", "Pending"}[phase]
	}
	return storage.Upsert(&unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "Pod", "metadata": meta,
		"spec": map[string]any{"containers": images}, "status": status}})
}

// firstPods returns the numbers of the first n countedPods.
func firstPods(n int) []int {
	out := make([]int, n)
	for i := range out {
		out[i] = i
	}
	return out
}

// writeCounted writes the countedPods keys (pod i in cluster east or west
// by its parity) at round, and deletes the pods deletes; it returns the
// revision of the last write.
func writeCounted(t *testing.T, s storage.Interface, rng *rand.Rand, round int, keys []int, deletes ...int) int64 {
	t.Helper()
	byCluster := map[string][]storage.Change{}
	for _, i := range keys {
		cluster := []string{"east", "west"}[i%2]
		byCluster[cluster] = append(byCluster[cluster], countedPod(rng, i, round))
	}
	for _, i := range deletes {
		cluster := []string{"east", "west"}[i%2]
		byCluster[cluster] = append(byCluster[cluster], storage.Delete(fmt.Sprintf("ns-%d", i%3), fmt.Sprintf("pod-%d", i)))
	}
	var rev int64
	for cluster, changes := range byCluster {
		var err error
		if rev, err = s.ForCluster(cluster, storage.Unfenced).Apply(context.Background(), pods, changes); err != nil {
			t.Fatal(err)
		}
	}
	return rev
}

func countQuery(t *testing.T, lq storage.ListQuery, limit int, terms ...string) *storage.CountQuery {
	t.Helper()
	q := &storage.CountQuery{Query: lq, Limit: limit}
	q.Query.GVR = pods
	for _, term := range terms {
		g, err := storage.ParseGroupBy(term)
		if err != nil {
			t.Fatal(err)
		}
		q.GroupBy = append(q.GroupBy, g)
	}
	return q
}

func requirements(t testing.TB, selector string) labels.Requirements {
	t.Helper()
	sel, err := labels.Parse(selector)
	if err != nil {
		t.Fatal(err)
	}
	reqs, _ := sel.Requirements()
	return reqs
}

// spell writes groups as "value/value=count ...", a missing value as <none>.
func spell(res *storage.CountResult) string {
	var out []string
	for _, g := range res.Groups {
		var values []string
		for _, v := range g.Values {
			if v == nil {
				values = append(values, "<none>")
			} else {
				values = append(values, *v)
			}
		}
		out = append(out, fmt.Sprintf("%s=%d", strings.Join(values, "/"), g.Count))
	}
	return fmt.Sprintf("%s +%d", strings.Join(out, " "), res.RemainingGroups)
}

// TestCount: the cache counts what the store counts, group for group, in
// the same order and at the same revision, under every kind of filter and
// grouping, before and after updates and deletes reach it; and leaves to
// the store what it has not loaded or cannot filter.
func TestCount(t *testing.T) {
	// Counted in parts, as large resources are.
	defer watchcache.CountInPartsOf(20)()
	storagetest.ForEach(t, func(t *testing.T, b storagetest.Backend) {
		s := b.Open(t)
		ctx := context.Background()
		rng := rand.New(rand.NewPCG(3, 3))
		write := func(round int, keys []int, deletes ...int) int64 {
			return writeCounted(t, s, rng, round, keys, deletes...)
		}
		all := firstPods(200)
		write(1, all)
		c := run(t, s, watchcache.Options{})
		if _, ok, err := c.Count(ctx, countQuery(t, storage.ListQuery{}, 0, "cluster"), 0); ok || err != nil {
			t.Fatalf("count of a resource not loaded: ok %v, %v; want the store to count", ok, err)
		}
		if _, _, err := c.List(ctx, &storage.ListQuery{GVR: pods}); err != nil {
			t.Fatal(err)
		}

		var compareOnce func(phase string, rev int64)
		queries := []*storage.CountQuery{
			countQuery(t, storage.ListQuery{}, 0, "cluster"),
			countQuery(t, storage.ListQuery{}, 0, "namespace", "label:app"),
			countQuery(t, storage.ListQuery{Labels: requirements(t, "tier=front")}, 0, "label:app"),
			countQuery(t, storage.ListQuery{Labels: requirements(t, "app notin (app-1)")}, 0, "cluster", "label:app"),
			countQuery(t, storage.ListQuery{Fields: fields.Requirements{{Field: "status.phase", Operator: "=", Value: "Running"}}}, 0, "field:images"),
			countQuery(t, storage.ListQuery{Namespaces: []string{"ns-1", "ns-2"}, Labels: requirements(t, "tier")}, 0, "field:status.phase", "field:images"),
			countQuery(t, storage.ListQuery{Clusters: []string{"west"}, Images: []string{"nginx"}}, 0, "namespace", "label:tier"),
			countQuery(t, storage.ListQuery{FuzzyName: "pod-1"}, 0, "cluster", "namespace", "label:app", "field:images"),
			countQuery(t, storage.ListQuery{Labels: requirements(t, "tier=back")}, 2, "label:app", "field:status.phase"),
			countQuery(t, storage.ListQuery{Labels: requirements(t, "tier=nowhere")}, 0, "cluster"),
			countQuery(t, storage.ListQuery{Labels: requirements(t, "app!=app-1,!absent")}, 0, "label:absent", "namespace"),
			countQuery(t, storage.ListQuery{Fields: fields.Requirements{{Field: "status.phase", Operator: "=", Value: ""}}}, 0, "label:app"),
			countQuery(t, storage.ListQuery{Fields: fields.Requirements{{Field: "status.phase", Operator: "!=", Value: "Running"},
				{Field: "metadata.namespace", Operator: "!=", Value: "ns-0"}}}, 0, "cluster", "field:images"),
			countQuery(t, storage.ListQuery{Fields: fields.Requirements{{Field: storage.ImagesField, Operator: "=", Value: "app:0"}}}, 0, "field:images"),
			countQuery(t, storage.ListQuery{Images: []string{"nginx", "app:1"}, Labels: requirements(t, "app in (app-2,app-3)")}, 0, "label:app", "cluster"),
		}
		// The cache counts some queries by intersecting sets of its index
		// and reads objects for the rest: each query is counted both ways.
		compare := func(phase string, rev int64) {
			t.Helper()
			compareOnce(phase, rev)
			defer watchcache.CountByReading()()
			compareOnce(phase+", reading every object", rev)
		}
		compareOnce = func(phase string, rev int64) {
			t.Helper()
			for _, q := range queries {
				want, err := s.Count(ctx, q)
				if err != nil {
					t.Fatal(err)
				}
				got, ok, err := c.Count(ctx, q, rev)
				if err != nil || !ok {
					t.Fatalf("%s: %v: ok %v, %v", phase, q.GroupBy, ok, err)
				}
				if got.Revision != rev || !reflect.DeepEqual(got, want) {
					t.Errorf("%s: %+v by %v:\ncache %s at %d\nstore %s at %d", phase, q.Query, q.GroupBy, spell(got), got.Revision, spell(want), want.Revision)
				}
			}
		}
		rev, _, err := s.Revision(ctx)
		if err != nil {
			t.Fatal(err)
		}
		compare("synced", rev)
		// Content, beyond agreeing: the limit leaves groups out, and pods
		// lacking the app label or a phase are a group of their own.
		got, _, err := c.Count(ctx, queries[8], rev)
		if err != nil || got.RemainingGroups == 0 || len(got.Groups) != 2 {
			t.Fatalf("limit 2: %s, %v", spell(got), err)
		}
		got, _, err = c.Count(ctx, queries[1], rev)
		if err != nil || !strings.Contains(spell(got), "ns-0/<none>=") {
			t.Fatalf("by namespace and app: %s, %v; want pods without app counted", spell(got), err)
		}

		// Half the pods change, a tenth go: the counts at the revision that
		// did it are the cache's as soon as it applied it.
		rev = write(2, all[:100], all[150:170]...)
		compare("changed", rev)
		// The gone come back, into the slots others left.
		rev = write(3, all[150:170], all[20:40]...)
		compare("recreated", rev)

		// The cache leaves owner filters, and revisions it does not reach
		// in time, to the store.
		if _, ok, err := c.Count(ctx, countQuery(t, storage.ListQuery{OwnerName: "rs"}, 0, "cluster"), 0); ok || err != nil {
			t.Errorf("owner filter: ok %v, %v; want the store to count", ok, err)
		}
		slow := run(t, s, watchcache.Options{FreshnessTimeout: time.Millisecond})
		if _, _, err := slow.List(ctx, &storage.ListQuery{GVR: pods}); err != nil {
			t.Fatal(err)
		}
		if _, ok, err := slow.Count(ctx, queries[0], rev+1); ok || err != nil {
			t.Errorf("count at a revision not reached: ok %v, %v; want the store to count", ok, err)
		}
	})
}

// TestCountStartsLoad: a count of a resource nobody listed or watched is
// left to the store, and loads the resource into the cache, which counts
// from then on.
func TestCountStartsLoad(t *testing.T) {
	s := storagetest.Backends()[0].Open(t)
	apply(t, s, pod("a", "1", "web"), pod("b", "1", "db"))
	c := run(t, s, watchcache.Options{})
	ctx := context.Background()
	q := countQuery(t, storage.ListQuery{Labels: requirements(t, "app=web")}, 0, "cluster")
	if _, ok, err := c.Count(ctx, q, 0); ok || err != nil {
		t.Fatalf("the first count: ok %v, %v; want the store to count", ok, err)
	}
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		res, ok, err := c.Count(ctx, q, 0)
		if err != nil {
			t.Fatal(err)
		}
		if ok {
			if got := spell(res); got != "east=1 +0" {
				t.Fatalf("counted %s, want east=1", got)
			}
			return
		}
		if time.Now().After(deadline) {
			t.Fatal("the cache did not load the counted resource within 10s")
		}
	}
}

// TestCountDoesNotWaitForLoad: a count of a resource still loading is
// left to the store at once.
func TestCountDoesNotWaitForLoad(t *testing.T) {
	s := &blockingStore{Interface: storagetest.Backends()[0].Open(t), gvr: pods, entered: make(chan struct{}, 1), release: make(chan struct{})}
	apply(t, s, pod("a", "1", "web"))
	c := run(t, s, watchcache.Options{})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() { _, _, _ = c.List(ctx, &storage.ListQuery{GVR: pods}) }()
	<-s.entered
	ok := within(t, "a count of a loading resource", func() bool {
		_, ok, err := c.Count(ctx, countQuery(t, storage.ListQuery{}, 0, "cluster"), 0)
		if err != nil {
			t.Error(err)
		}
		return ok
	})
	if ok {
		t.Fatal("a count of a loading resource was answered by the cache; want the store to count")
	}
	close(s.release)
}

// TestCountsWhileWriting: counts, lists and watches read the index while
// writes change it (run under -race: the index's bitmaps are read by many
// requests at once, and written only under the resource's lock).
func TestCountsWhileWriting(t *testing.T) {
	s := storagetest.Backends()[0].Open(t)
	ctx := context.Background()
	rng := rand.New(rand.NewPCG(5, 5))
	write := func(round int) int64 {
		changes := make([]storage.Change, 0, 50)
		for i := range 50 {
			changes = append(changes, countedPod(rng, i+50*(round%4), round))
		}
		rev, err := s.ForCluster("east", storage.Unfenced).Apply(ctx, pods, changes)
		if err != nil {
			t.Fatal(err)
		}
		return rev
	}
	rev := write(0)
	c := run(t, s, watchcache.Options{})
	if _, _, err := c.List(ctx, &storage.ListQuery{GVR: pods}); err != nil {
		t.Fatal(err)
	}
	q := countQuery(t, storage.ListQuery{Labels: requirements(t, "tier=front")}, 0, "label:app", "field:images")
	done := make(chan struct{})
	errs := make(chan error, 2)
	for range 2 {
		go func() {
			for {
				select {
				case <-done:
					errs <- nil
					return
				default:
				}
				if _, ok, err := c.Count(ctx, q, 0); err != nil || !ok {
					errs <- fmt.Errorf("count: ok %v, %v", ok, err)
					return
				}
				if _, _, err := c.List(ctx, &storage.ListQuery{GVR: pods, Labels: requirements(t, "app in (app-1,app-2)")}); err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	for round := 1; round <= 20; round++ {
		rev = write(round)
	}
	close(done)
	for range 2 {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	// Quiet again, the cache counts what the store does.
	want, err := s.Count(ctx, q)
	if err != nil {
		t.Fatal(err)
	}
	got, _, err := c.Count(ctx, q, rev)
	if err != nil || !reflect.DeepEqual(got, want) {
		t.Fatalf("after the writes: cache %s, %v; store %s", spell(got), err, spell(want))
	}
}
