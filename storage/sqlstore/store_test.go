package sqlstore_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/panorama-io/panorama/storage"
	"github.com/panorama-io/panorama/storage/storagetest"
)

func TestApplyGetAndEvents(t *testing.T) {
	storagetest.ForEach(t, func(t *testing.T, b storagetest.Backend) {
		s := b.Open(t)
		ctx := context.Background()
		changed := s.Changed()
		rev, err := s.ForCluster("east", storage.Unfenced).Apply(ctx, podsGVR, []storage.Change{
			storage.Upsert(object("Pod", "default", "a", "10", func(u *unstructured.Unstructured) { u.SetLabels(map[string]string{"app": "web"}) })),
			storage.Upsert(object("Pod", "default", "b", "11")),
		})
		if err != nil || rev != 2 {
			t.Fatalf("apply: rev %d, err %v; want 2", rev, err)
		}
		select {
		case <-changed:
		default:
			t.Fatal("Changed() not closed by a write")
		}
		got, err := s.Get(ctx, storage.Key{Cluster: "east", GVR: podsGVR, Namespace: "default", Name: "a"})
		if err != nil {
			t.Fatal(err)
		}
		var served map[string]any
		if err := json.Unmarshal(got.Data, &served); err != nil {
			t.Fatal(err)
		}
		u := unstructured.Unstructured{Object: served}
		if u.GetResourceVersion() != "1" || u.GetAnnotations()[storage.ClusterAnnotation] != "east" ||
			u.GetAnnotations()[storage.MemberResourceVersionAnnotation] != "10" || u.GetLabels()["app"] != "web" {
			t.Fatalf("served object: rv %q annotations %v labels %v", u.GetResourceVersion(), u.GetAnnotations(), u.GetLabels())
		}
		if got.Revision != 1 || got.MemberResourceVersion != "10" || got.UID != uidOf("Pod", "default", "a") {
			t.Fatalf("row: %+v", got)
		}

		// Same member resourceVersion: nothing is written.
		if rev, err = s.ForCluster("east", storage.Unfenced).Apply(ctx, podsGVR, []storage.Change{storage.Upsert(object("Pod", "default", "a", "10"))}); err != nil || rev != 2 {
			t.Fatalf("unchanged apply: rev %d err %v; want 2", rev, err)
		}
		// A modify, a delete, a delete of an absent object, and a key written
		// twice in one batch (the last wins).
		rev, err = s.ForCluster("east", storage.Unfenced).Apply(ctx, podsGVR, []storage.Change{
			storage.Upsert(object("Pod", "default", "a", "12")),
			storage.Delete("default", "b"),
			storage.Delete("default", "nope"),
			storage.Upsert(object("Pod", "default", "c", "13")),
			storage.Upsert(object("Pod", "default", "c", "14")),
		})
		if err != nil || rev != 5 {
			t.Fatalf("apply: rev %d err %v; want 5", rev, err)
		}
		if _, err := s.Get(ctx, storage.Key{Cluster: "east", GVR: podsGVR, Namespace: "default", Name: "b"}); !errors.Is(err, storage.ErrNotFound) {
			t.Fatalf("deleted object: %v", err)
		}
		events, _, err := s.Changes(ctx, 0, 100)
		if err != nil {
			t.Fatal(err)
		}
		var summary []string
		for _, e := range events {
			o, err := storage.DecodeStored(e.Object)
			if err != nil {
				t.Fatal(err)
			}
			if o.Revision != e.Revision {
				t.Fatalf("event %d carries resourceVersion %d", e.Revision, o.Revision)
			}
			summary = append(summary, fmt.Sprintf("%d %s %s %s", e.Revision, e.Type, e.Key.Name, o.MemberResourceVersion))
		}
		want := []string{"1 ADDED a 10", "2 ADDED b 11", "3 MODIFIED a 12", "4 DELETED b 11", "5 ADDED c 14"}
		if !slices.Equal(summary, want) {
			t.Fatalf("events:\n%s\nwant:\n%s", strings.Join(summary, "\n"), strings.Join(want, "\n"))
		}
		if ev, _, _ := s.Changes(ctx, 3, 1); len(ev) != 1 || ev[0].Revision != 4 {
			t.Fatalf("events after 3, limit 1: %+v", ev)
		}
		// The last two changes up to 5, with the state before each.
		hist, compacted, err := s.History(ctx, podsGVR, 5, 2)
		if err != nil || compacted != 0 || len(hist) != 2 || hist[0].Revision != 4 || hist[1].Revision != 5 {
			t.Fatalf("history: %+v, %d, %v", hist, compacted, err)
		}
		if prev, err := storage.DecodeStored(hist[0].Prev); err != nil || prev.Name != "b" || prev.Revision != 2 || hist[1].Prev != nil {
			t.Fatalf("history prev: %+v %v; created entry prev %q", prev, err, hist[1].Prev)
		}
		versions, err := s.MemberVersions(ctx, "east", podsGVR)
		if err != nil {
			t.Fatal(err)
		}
		if len(versions) != 2 || versions[storage.NamespacedName{Namespace: "default", Name: "a"}] != "12" {
			t.Fatalf("member versions: %v", versions)
		}

		// Removing a resource of a cluster logs a delete per object.
		if _, err := s.ForCluster("west", storage.Unfenced).Apply(ctx, podsGVR, []storage.Change{storage.Upsert(object("Pod", "x", "w", "1"))}); err != nil {
			t.Fatal(err)
		}
		if rev, err = s.ForCluster("east", storage.Unfenced).DeleteResource(ctx, podsGVR); err != nil || rev != 8 {
			t.Fatalf("delete resource: rev %d err %v; want 8", rev, err)
		}
		res, err := s.List(ctx, &storage.ListQuery{GVR: podsGVR})
		if err != nil {
			t.Fatal(err)
		}
		if len(res.Objects) != 1 || res.Objects[0].Cluster != "west" || res.Revision != 8 {
			t.Fatalf("after delete resource: %d objects at %d", len(res.Objects), res.Revision)
		}
		if events, _, _ = s.Changes(ctx, 6, 10); len(events) != 2 || events[0].Type != watch.Deleted || events[1].Type != watch.Deleted {
			t.Fatalf("delete events: %+v", events)
		}
		if rev, err = s.ForCluster("west", storage.Unfenced).DeleteResource(ctx, schema.GroupVersionResource{}); err != nil || rev != 9 {
			t.Fatalf("delete cluster: rev %d err %v", rev, err)
		}
	})
}

// TestListMatchesBruteForce checks every filter, alone and combined, with
// every ordering and page size, against the same query evaluated in Go.
func TestListMatchesBruteForce(t *testing.T) {
	storagetest.ForEach(t, func(t *testing.T, b storagetest.Backend) {
		s := b.Open(t)
		rng := rand.New(rand.NewPCG(1, 2))
		w := generate(t, s, rng, 40)
		ctx := context.Background()
		for _, q := range fixedQueries(w) {
			checkQuery(t, s, w, q)
		}
		for i := range 150 {
			q := randomQuery(rng, w)
			if i%3 == 0 {
				q.Limit = int64(1 + rng.IntN(40))
			}
			checkQuery(t, s, w, q)
		}
		// Remaining count on a first page.
		q := storage.ListQuery{GVR: podsGVR, Limit: 10, WithRemainingCount: true}
		res, err := s.List(ctx, &q)
		if err != nil {
			t.Fatal(err)
		}
		all := w.expect(&q)
		if res.RemainingCount == nil || *res.RemainingCount != int64(len(all)-10) {
			t.Fatalf("remaining count %v, want %d", res.RemainingCount, len(all)-10)
		}
	})
}

func checkQuery(t *testing.T, s storage.Interface, w *world, q storage.ListQuery) {
	t.Helper()
	want := w.expect(&q)
	got, _, _ := listAll(t, s, q, nil)
	if !slices.Equal(got, want) {
		t.Fatalf("query %s:\n got %d objects %v\nwant %d objects %v", describe(q), len(got), head(got), len(want), head(want))
	}
}

func fixedQueries(w *world) []storage.ListQuery {
	sel := func(s string) labels.Requirements {
		r, err := labels.Parse(s)
		if err != nil {
			panic(err)
		}
		reqs, _ := r.Requirements()
		return reqs
	}
	fsel := func(s string) fields.Requirements { return fields.ParseSelectorOrDie(s).Requirements() }
	since, before := baseTime.Add(100*time.Hour), baseTime.Add(500*time.Hour)
	var anyRS *storage.Object
	for _, o := range w.objects {
		if o.GVR == replicaSetsGVR && (anyRS == nil || o.Name < anyRS.Name) {
			anyRS = o
		}
	}
	apps := schema.GroupResource{Group: "apps", Resource: "deployments"}
	return []storage.ListQuery{
		{GVR: podsGVR},
		{GVR: podsGVR, Labels: sel("app=web")},
		{GVR: podsGVR, Labels: sel("app==o.hara")},
		{GVR: podsGVR, Labels: sel("app!=web")},
		{GVR: podsGVR, Labels: sel("app in (web,db),tier notin (front)")},
		{GVR: podsGVR, Labels: sel("example.com/canary")},
		{GVR: podsGVR, Labels: sel("!tier")},
		{GVR: podsGVR, Fields: fsel("status.phase=Running")},
		{GVR: podsGVR, Fields: fsel("status.phase!=Running,spec.nodeName=node-a")},
		{GVR: podsGVR, Fields: fsel("status.phase=")},
		{GVR: podsGVR, Fields: fsel("spec.nodeName!=")},
		{GVR: podsGVR, Fields: fsel("metadata.namespace=web,metadata.name!=app-1-rs-0")},
		{GVR: podsGVR, Fields: fsel("images=nginx:1.27")},
		{GVR: podsGVR, Fields: fsel("images!=busybox")},
		{GVR: podsGVR, Fields: fsel("images=,spec.nodeName=node-a")},
		{GVR: deploymentsGVR, Fields: fsel("images=redis:7,images=busybox")},
		{GVR: replicaSetsGVR, Fields: fsel("ownerKind=Deployment")},
		{GVR: podsGVR, Fields: fsel("ownerKind!=ReplicaSet")},
		{GVR: podsGVR, Images: []string{"nginx"}},
		{GVR: deploymentsGVR, Images: []string{"sha256:", "busybox"}, Limit: 5},
		{GVR: podsGVR, Images: []string{"%"}},
		{GVR: podsGVR, Clusters: []string{"east", "north"}, Namespaces: []string{"web"}},
		{GVR: podsGVR, Names: []string{"app-3-rs-0", "app-4-rs-1"}},
		{GVR: podsGVR, FuzzyName: "-1-rs"},
		{GVR: podsGVR, FuzzyName: "%"},
		{GVR: podsGVR, CreatedSince: &since, CreatedBefore: &before},
		{GVR: podsGVR, OwnerUID: anyRS.UID},
		{GVR: podsGVR, OwnerName: "app-2", OwnerSeniority: 1},
		{GVR: podsGVR, OwnerName: "app-2", OwnerGroupResource: &apps, OwnerSeniority: 1, Clusters: []string{"west"}},
		{GVR: replicaSetsGVR, OwnerName: "app-5"},
		{GVR: podsGVR, OrderBy: []storage.OrderBy{{Field: storage.OrderCreated, Desc: true}}, Limit: 7},
		{GVR: podsGVR, OrderBy: []storage.OrderBy{{Field: storage.OrderName}, {Field: storage.OrderCluster, Desc: true}}, Limit: 13},
		{GVR: podsGVR, OrderBy: []storage.OrderBy{{Field: storage.OrderNamespace, Desc: true}}, Limit: 1},
		{GVR: podsGVR, Keywords: keywords("web")},
		{GVR: podsGVR, Keywords: keywords("O'Hara"), Limit: 3},
		{GVR: podsGVR, Keywords: keywords("nginx", "sha256*")},
		{GVR: deploymentsGVR, Keywords: keywords("redis-exp*")},
		{GVR: podsGVR, Keywords: keywords("node*", "kube"), Clusters: []string{"west"}, Limit: 4},
		{GVR: replicaSetsGVR, Keywords: keywords("example.com/canary", "app-1")},
		{GVR: podsGVR, Keywords: keywords("ngin")},
		{GVR: podsGVR, Keywords: keywords("absent*")},
	}
}

// keywords parses a keyword query's terms.
func keywords(terms ...string) []storage.Keyword {
	ks, err := storage.ParseKeywords(terms)
	if err != nil {
		panic(err)
	}
	return ks
}

func randomQuery(rng *rand.Rand, w *world) storage.ListQuery {
	pick := func(vs []string) []string {
		var out []string
		for _, v := range vs {
			if rng.IntN(2) == 0 {
				out = append(out, v)
			}
		}
		return out
	}
	gvrs := []schema.GroupVersionResource{podsGVR, deploymentsGVR, replicaSetsGVR}
	q := storage.ListQuery{GVR: gvrs[rng.IntN(len(gvrs))]}
	if rng.IntN(3) == 0 {
		q.Clusters = pick(clusters)
	}
	if rng.IntN(3) == 0 {
		q.Namespaces = pick(namespaces)
	}
	exprs := []string{"app=web", "app!=db", "app in (web,cache)", "app notin (web)", "tier", "!tier", "example.com/canary=true", "app=o.hara"}
	var sel []string
	for range rng.IntN(3) {
		sel = append(sel, exprs[rng.IntN(len(exprs))])
	}
	if len(sel) > 0 {
		r, _ := labels.Parse(strings.Join(sel, ","))
		q.Labels, _ = r.Requirements()
	}
	fexprs := []string{"status.phase=Running", "status.phase!=Failed", "spec.nodeName=node-b", "metadata.namespace=db", "status.phase=",
		"images=busybox", "images!=nginx:1.27", "images!=", "ownerKind=ReplicaSet"}
	if rng.IntN(3) == 0 {
		q.Fields = fields.ParseSelectorOrDie(fexprs[rng.IntN(len(fexprs))]).Requirements()
	}
	if rng.IntN(5) == 0 {
		q.FuzzyName = strconv.Itoa(rng.IntN(10))
	}
	if rng.IntN(4) == 0 {
		q.Images = pick([]string{"nginx", "redis", "1", "@sha256:"})
	}
	if rng.IntN(4) == 0 {
		t := baseTime.Add(time.Duration(rng.IntN(1000)) * time.Hour)
		if rng.IntN(2) == 0 {
			q.CreatedSince = &t
		} else {
			q.CreatedBefore = &t
		}
	}
	if rng.IntN(5) == 0 {
		q.OwnerName = fmt.Sprintf("app-%d", rng.IntN(40))
		q.OwnerSeniority = rng.IntN(3)
	}
	fieldsOrder := []storage.OrderField{storage.OrderCluster, storage.OrderNamespace, storage.OrderName, storage.OrderCreated}
	rng.Shuffle(len(fieldsOrder), func(i, j int) { fieldsOrder[i], fieldsOrder[j] = fieldsOrder[j], fieldsOrder[i] })
	for _, f := range fieldsOrder[:rng.IntN(3)] {
		q.OrderBy = append(q.OrderBy, storage.OrderBy{Field: f, Desc: rng.IntN(2) == 0})
	}
	if rng.IntN(4) == 0 {
		q.Keywords = keywords(pick([]string{"web", "def*", "nginx", "rs", "kub*", "node-b", "running", "canary", "redis", "ghcr.io"})...)
	}
	return q
}

// TestPagingUnderConcurrentWrites pages through a list while objects are
// modified, deleted and created between pages; the pages together must be
// exactly the state at the first page's revision.
func TestPagingUnderConcurrentWrites(t *testing.T) {
	storagetest.ForEach(t, func(t *testing.T, b storagetest.Backend) {
		s := b.Open(t)
		rng := rand.New(rand.NewPCG(3, 4))
		w := generate(t, s, rng, 60)
		ctx := context.Background()
		for _, q := range []storage.ListQuery{
			{GVR: podsGVR, Limit: 17},
			{GVR: podsGVR, Limit: 9, Labels: mustReqs("app in (web,db)"), OrderBy: []storage.OrderBy{{Field: storage.OrderCreated, Desc: true}}},
		} {
			want := w.expect(&q)
			wantRV := map[storage.Key]int64{}
			for _, k := range want {
				wantRV[k] = w.objects[k].Revision
			}
			n := 0
			got, objs, _ := listAll(t, s, q, func() {
				// Change objects on both sides of the cursor, and add new ones.
				var changes []storage.Change
				for _, k := range want {
					if k.Cluster != "east" || rng.IntN(4) > 0 {
						continue
					}
					n++
					if rng.IntN(2) == 0 {
						changes = append(changes, storage.Delete(k.Namespace, k.Name))
					} else {
						changes = append(changes, storage.Upsert(object("Pod", k.Namespace, k.Name, fmt.Sprint(1000+n),
							func(u *unstructured.Unstructured) { u.SetLabels(map[string]string{"app": "web"}) })))
					}
				}
				changes = append(changes, storage.Upsert(object("Pod", "default", fmt.Sprintf("new-%d", n), "1",
					func(u *unstructured.Unstructured) { u.SetLabels(map[string]string{"app": "web"}) })))
				if _, err := s.ForCluster("east", storage.Unfenced).Apply(ctx, podsGVR, changes); err != nil {
					t.Fatal(err)
				}
			})
			if !slices.Equal(got, want) {
				t.Fatalf("pages under writes (%s):\n got %d %v\nwant %d %v", describe(q), len(got), head(got), len(want), head(want))
			}
			for _, o := range objs {
				if o.Revision != wantRV[o.Key] {
					t.Fatalf("%v served at revision %d, want its state at the first page (%d)", o.Key, o.Revision, wantRV[o.Key])
				}
			}
			// Bring the brute-force world up to date for the next query.
			w = reload(t, s)
		}
	})
}

func reload(t testing.TB, s storage.Interface) *world {
	w := &world{objects: map[storage.Key]*storage.Object{}}
	for _, gvr := range []schema.GroupVersionResource{podsGVR, deploymentsGVR, replicaSetsGVR} {
		_, objs, _ := listAll(t, s, storage.ListQuery{GVR: gvr}, nil)
		for i := range objs {
			o, err := storage.DecodeStored(objs[i].Data)
			if err != nil {
				t.Fatal(err)
			}
			o.Cluster, o.GVR = objs[i].Cluster, gvr
			w.objects[o.Key] = &o
		}
	}
	return w
}

func TestCompaction(t *testing.T) {
	storagetest.ForEach(t, func(t *testing.T, b storagetest.Backend) {
		s := b.Open(t)
		ctx := context.Background()
		for i := range 10 {
			if _, err := s.ForCluster("east", storage.Unfenced).Apply(ctx, podsGVR, []storage.Change{storage.Upsert(object("Pod", "ns", fmt.Sprint("p", i), "1"))}); err != nil {
				t.Fatal(err)
			}
		}
		first, err := s.List(ctx, &storage.ListQuery{GVR: podsGVR, Limit: 3})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := s.ForCluster("east", storage.Unfenced).Apply(ctx, podsGVR, []storage.Change{storage.Delete("ns", "p9")}); err != nil {
			t.Fatal(err)
		}
		if err := s.Compact(ctx, 12, false); err == nil {
			t.Fatal("compacting past the current revision should fail")
		}
		if err := s.Compact(ctx, 8, false); err != nil {
			t.Fatal(err)
		}
		if cur, compacted, _ := s.Revision(ctx); cur != 11 || compacted != 8 {
			t.Fatalf("revision %d compacted %d", cur, compacted)
		}
		if _, _, err := s.Changes(ctx, 7, 10); !storage.IsTooOld(err) {
			t.Fatalf("events below compaction: %v", err)
		}
		if ev, compacted, err := s.Changes(ctx, 8, 10); err != nil || len(ev) != 3 || compacted != 8 {
			t.Fatalf("events from the compacted revision: %d, compacted %d, %v", len(ev), compacted, err)
		}
		// The first page was at revision 10 > 8: its continuation still works
		// and still shows p9, deleted after it.
		keys, _, _ := listAll(t, s, storage.ListQuery{GVR: podsGVR, Limit: 3, Continue: first.Continue}, nil)
		if len(keys) != 7 || keys[len(keys)-1].Name != "p9" {
			t.Fatalf("continuation after compaction: %v", keys)
		}
		if _, err := s.List(ctx, &storage.ListQuery{GVR: podsGVR, Revision: 5}); !storage.IsTooOld(err) {
			t.Fatalf("list at a compacted revision: %v", err)
		}
		// Compaction at 10 keeps revision 10 readable; at 11 it is gone.
		if err := s.Compact(ctx, 10, false); err != nil {
			t.Fatal(err)
		}
		if _, err := s.List(ctx, &storage.ListQuery{GVR: podsGVR, Limit: 3, Continue: first.Continue}); err != nil {
			t.Fatalf("continue at the compacted revision itself: %v", err)
		}
		if err := s.Compact(ctx, 11, false); err != nil {
			t.Fatal(err)
		}
		if _, err := s.List(ctx, &storage.ListQuery{GVR: podsGVR, Limit: 3, Continue: first.Continue}); !storage.IsTooOld(err) {
			t.Fatalf("continue at a compacted revision: %v", err)
		}
		var tooLarge *storage.TooLargeError
		if _, err := s.List(ctx, &storage.ListQuery{GVR: podsGVR, Revision: 99}); !errors.As(err, &tooLarge) {
			t.Fatalf("list at a future revision: %v", err)
		}
	})
}

// TestHostileInput stores and queries values meant to break SQL: they must
// come back byte for byte, and bad tokens must be typed errors.
func TestHostileInput(t *testing.T) {
	hostile := []string{
		`'; DROP TABLE resources; --`, `" OR 1=1 --`, `\`, `%_%`, "名前-ünï", `a'b"c`, strings.Repeat("x", 250),
	}
	storagetest.ForEach(t, func(t *testing.T, b storagetest.Backend) {
		s := b.Open(t)
		ctx := context.Background()
		var changes []storage.Change
		for i, h := range hostile {
			changes = append(changes, storage.Upsert(object("Pod", "ns", h, "1", func(u *unstructured.Unstructured) {
				_ = unstructured.SetNestedField(u.Object, h, "spec", "nodeName")
				u.SetLabels(map[string]string{"i": strconv.Itoa(i)})
			})))
		}
		if _, err := s.ForCluster("east", storage.Unfenced).Apply(ctx, podsGVR, changes); err != nil {
			t.Fatal(err)
		}
		for i, h := range hostile {
			for _, q := range []storage.ListQuery{
				{GVR: podsGVR, Names: []string{h}},
				{GVR: podsGVR, FuzzyName: h},
				{GVR: podsGVR, Fields: fields.Requirements{{Field: "spec.nodeName", Operator: "=", Value: h}}},
				{GVR: podsGVR, Fields: fields.Requirements{{Field: "metadata.name", Operator: "=", Value: h}}},
			} {
				res, err := s.List(ctx, &q)
				if err != nil {
					t.Fatalf("%q: %v", h, err)
				}
				if len(res.Objects) != 1 || res.Objects[0].Name != h {
					t.Fatalf("query for %q (%s): %d objects", h, describe(q), len(res.Objects))
				}
				o, _ := storage.DecodeStored(res.Objects[0].Data)
				if o.Labels["i"] != strconv.Itoa(i) {
					t.Fatalf("%q came back as %+v", h, o)
				}
			}
		}
		// Values that match nothing, and one far larger than any column.
		for _, q := range []storage.ListQuery{
			{GVR: podsGVR, Names: []string{strings.Repeat("z", 100000)}},
			{GVR: podsGVR, FuzzyName: strings.Repeat("'", 10000)},
			{GVR: podsGVR, Clusters: []string{"' OR '1'='1"}},
			{GVR: schema.GroupVersionResource{Group: "x'; --", Version: "v1", Resource: "pods"}},
		} {
			if res, err := s.List(ctx, &q); err != nil || len(res.Objects) != 0 {
				t.Fatalf("%s: %v objects, err %v", describe(q), res, err)
			}
		}
		if res, _ := s.List(ctx, &storage.ListQuery{GVR: podsGVR}); len(res.Objects) != len(hostile) {
			t.Fatalf("table damaged: %d objects", len(res.Objects))
		}
		for _, token := range []string{"garbage", "eyJ2IjoibWV0YS5rOHMuaW8vdjEiLCJydiI6LTEsInN0YXJ0IjoiIn0", "%%%", strings.Repeat("A", 5000)} {
			if _, err := s.List(ctx, &storage.ListQuery{GVR: podsGVR, Continue: token}); !storage.IsInvalid(err) {
				t.Fatalf("continue %q: %v, want an invalid-input error", token[:min(len(token), 20)], err)
			}
		}
		page, _ := s.List(ctx, &storage.ListQuery{GVR: podsGVR, Limit: 2})
		if _, err := s.List(ctx, &storage.ListQuery{GVR: podsGVR, Limit: 2, Continue: page.Continue,
			OrderBy: []storage.OrderBy{{Field: storage.OrderCreated}}}); !storage.IsInvalid(err) {
			t.Fatalf("continue with another order: %v", err)
		}
		for _, q := range []storage.ListQuery{
			{GVR: podsGVR, Fields: fields.Requirements{{Field: "status.secret", Operator: "=", Value: "x"}}},
			{GVR: podsGVR, OwnerSeniority: 99, OwnerName: "x"},
			{GVR: podsGVR, Limit: -1},
			{GVR: podsGVR, Labels: mustReqs("x>1")},
			{GVR: podsGVR, Names: []string{"a\x00b"}},
			{GVR: podsGVR, Fields: fields.Requirements{{Field: "spec.nodeName", Operator: "=", Value: "\x00"}}},
			{GVR: schema.GroupVersionResource{Resource: "pods"}},
		} {
			if _, err := s.List(ctx, &q); !storage.IsInvalid(err) {
				t.Fatalf("%s: %v, want an invalid-input error", describe(q), err)
			}
		}
		if _, err := s.ForCluster(strings.Repeat("c", 300), storage.Unfenced).Apply(ctx, podsGVR, nil); !storage.IsInvalid(err) {
			t.Fatalf("overlong cluster name: %v", err)
		}
	})
}

func mustReqs(s string) labels.Requirements {
	sel, err := labels.Parse(s)
	if err != nil {
		panic(err)
	}
	r, _ := sel.Requirements()
	return r
}

func describe(q storage.ListQuery) string {
	q.Continue = ""
	b, _ := json.Marshal(q)
	return string(b)
}

func head(keys []storage.Key) []string {
	var out []string
	for i, k := range keys {
		if i == 8 {
			out = append(out, "...")
			break
		}
		out = append(out, k.Cluster+"/"+k.Namespace+"/"+k.Name)
	}
	return out
}
