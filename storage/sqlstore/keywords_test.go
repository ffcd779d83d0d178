package sqlstore_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/panorama-io/panorama/storage"
	"github.com/panorama-io/panorama/storage/storagetest"
)

// What annotations carry: hostnames, ticket ids, environment values,
// words that are prefixes of each other, words past MaxKeywordLength
// that share their first 64 characters, or not.
var (
	keywordHosts   = []string{"db.example.com", "db-replica.example.com", "cache.internal.example.org", "webhook.example.com"}
	keywordTickets = []string{"TICKET-1234", "TICKET-12345", "OPS-77"}
	keywordEnv     = []string{"LOG_LEVEL=debug", "DATABASE_URL=postgres://app@db.example.com:5432/app", "FEATURE_FLAGS=beta,canary", "REGION=eu_west_1"}
	keywordNotes   = []string{"we", "web", "webhook", "webhooks", "straße", "Über-Cache"}
	keywordLong    = []string{strings.Repeat("z", 60) + "abcdefghij", strings.Repeat("z", 60) + "abcdXYZXYZ", strings.Repeat("z", 60) + "abceZZZZZZ"}
	keywordNames   = []string{"api", "web", "webhook", "worker"}
	keywordDigests = []string{digestOf("a"), digestOf("b"), digestOf("c")}
)

// prefixOf is a prefix term of word, as long as a query takes or longer,
// or word itself when too short for one.
func prefixOf(rng *rand.Rand, word string) string {
	if len(word) < storage.MinKeywordPrefix {
		return word
	}
	return word[:storage.MinKeywordPrefix+rng.IntN(len(word)-storage.MinKeywordPrefix+1)] + "*"
}

// lastAppliedOnly is a word of last-applied annotations alone, which no
// object is found by.
const lastAppliedOnly = "lastappliedonly"

func digestOf(s string) string {
	sum := sha256.Sum256([]byte(s))
	return hex.EncodeToString(sum[:])
}

// withKeywordAnnotations gives an object annotations drawn from the
// pools above, a last-applied copy at times, and a container image by
// digest at path.
func withKeywordAnnotations(rng *rand.Rand, path ...string) func(*unstructured.Unstructured) {
	return func(u *unstructured.Unstructured) {
		pick := func(vs []string) string { return vs[rng.IntN(len(vs))] }
		ann := map[string]string{}
		for key, pool := range map[string][]string{"host": keywordHosts, "ticket": keywordTickets, "env": keywordEnv, "note": keywordNotes} {
			if rng.IntN(2) == 0 {
				ann[key] = pick(pool)
			}
		}
		if rng.IntN(4) == 0 {
			ann["long"] = pick(keywordLong)
		}
		if rng.IntN(4) == 0 {
			ann[storage.LastAppliedAnnotation] = `{"metadata":{"annotations":{"secret":"` + lastAppliedOnly + `"}}}`
		}
		u.SetAnnotations(ann)
		image := "registry.example/" + pick(keywordNames) + "@sha256:" + pick(keywordDigests)
		_ = unstructured.SetNestedSlice(u.Object, []any{map[string]any{"name": "c", "image": image}}, append(path, "containers")...)
	}
}

// withBulkWords gives an object an annotation of n distinct words from
// first on, more than MaxObjectKeywords: those past the bound are not
// the object's.
func withBulkWords(first, n int) func(*unstructured.Unstructured) {
	return func(u *unstructured.Unstructured) {
		words := make([]string, n)
		for i := range words {
			words[i] = fmt.Sprintf("bulk%04d", first+i)
		}
		ann := u.GetAnnotations()
		ann["zz-bulk"] = strings.Join(words, " ")
		u.SetAnnotations(ann)
	}
}

// TestKeywordsMatchBruteForce: pods and deployments in several clusters
// whose annotations carry hostnames, ticket ids, digests, environment
// values, prefixes of each other, words past the length bound, objects
// past the words bound and last-applied copies list exactly what
// ListQuery.Matches accepts of them, by words and prefixes alone and
// with clusters, namespaces and labels, paged or not; again after updates
// that change words and deletes, both at the latest revision and at the
// first one, which the log answers.
func TestKeywordsMatchBruteForce(t *testing.T) {
	storagetest.ForEach(t, func(t *testing.T, b storagetest.Backend) {
		s := b.Open(t)
		ctx := context.Background()
		rng := rand.New(rand.NewPCG(37, 1))
		w := &world{objects: map[storage.Key]*storage.Object{}}
		apply := func(cluster string, gvr schema.GroupVersionResource, changes []storage.Change) {
			t.Helper()
			w.apply(t, s, cluster, gvr, changes)
		}
		pod := func(ns, name, rv string) *unstructured.Unstructured {
			return object("Pod", ns, name, rv, withLabels(rng), withKeywordAnnotations(rng, "spec"))
		}
		deployment := func(ns, name, rv string) *unstructured.Unstructured {
			u := object("Deployment", ns, name, rv, withLabels(rng), withKeywordAnnotations(rng, "spec", "template", "spec"))
			u.SetAPIVersion("apps/v1")
			return u
		}
		for _, c := range clusters {
			var pods, deps []storage.Change
			for i := range 25 {
				name := fmt.Sprintf("%s-%d", keywordNames[rng.IntN(len(keywordNames))], i)
				pods = append(pods, storage.Upsert(pod(namespaces[rng.IntN(len(namespaces))], name, "1")))
			}
			for i := range 10 {
				name := fmt.Sprintf("%s-%d", keywordNames[rng.IntN(len(keywordNames))], i)
				deps = append(deps, storage.Upsert(deployment(namespaces[rng.IntN(len(namespaces))], name, "1")))
			}
			bulk := pod("web", "bulk", "1")
			withBulkWords(0, 400)(bulk)
			pods = append(pods, storage.Upsert(bulk))
			apply(c, podsGVR, pods)
			apply(c, deploymentsGVR, deps)
		}
		if n := len(w.objects[storage.Key{Cluster: "east", GVR: podsGVR, Namespace: "web", Name: "bulk"}].Keywords); n != storage.MaxObjectKeywords {
			t.Fatalf("the bulk object has %d words, want the bound, %d", n, storage.MaxObjectKeywords)
		}
		queries := func() []storage.ListQuery {
			terms := [][]string{
				{"db.example.com"}, {"TICKET-1234"}, {"ticket-12345"}, {"ops", "77"}, {"sha256:" + keywordDigests[0]},
				{"sha256:" + keywordDigests[1][:12] + "*"}, {"we"}, {"web"}, {"web*"}, {"webhook"}, {"webhook*"}, {"webhooks"},
				{"eu_west_1"}, {"postgres://app@db.example.com"}, {"stra"}, {"straße"}, {"ber-cache"},
				{lastAppliedOnly}, {"kubectl"}, {"last-applied-configuration"},
				{keywordLong[0]}, {keywordLong[1]}, {keywordLong[2]}, {keywordLong[0][:storage.MaxKeywordLength]}, {keywordLong[0][:62] + "*"},
				{"bulk0000"}, {"bulk0100"}, {"bulk0399"}, {"bulk01*"}, {"bulk03*"}, {"zz"}, {"bulk"},
				{"absent"}, {"absent*"}, {"db", "absent"},
			}
			vocabulary := map[string]bool{}
			var objs []*storage.Object
			for _, o := range w.objects {
				objs = append(objs, o)
				for _, word := range o.Keywords {
					vocabulary[word] = true
				}
			}
			slices.SortFunc(objs, func(a, b *storage.Object) int { return storage.CompareKeys(a.Key, b.Key) })
			words := slices.Sorted(maps.Keys(vocabulary))
			for range 12 {
				word := words[rng.IntN(len(words))]
				terms = append(terms, []string{word}, []string{prefixOf(rng, word)})
			}
			for range 6 {
				o := objs[rng.IntN(len(objs))]
				terms = append(terms, []string{o.Keywords[rng.IntN(len(o.Keywords))], o.Keywords[rng.IntN(len(o.Keywords))]})
				other := objs[rng.IntN(len(objs))]
				terms = append(terms, []string{o.Keywords[rng.IntN(len(o.Keywords))], prefixOf(rng, other.Keywords[rng.IntN(len(other.Keywords))])})
			}
			selectors := []string{"app=web", "app!=db", "tier", "!tier", "example.com/canary=true"}
			gvrs := []schema.GroupVersionResource{podsGVR, deploymentsGVR}
			anyGVR := func() schema.GroupVersionResource { return gvrs[rng.IntN(len(gvrs))] }
			var out []storage.ListQuery
			for _, term := range terms {
				ks := keywords(term...)
				out = append(out,
					storage.ListQuery{GVR: podsGVR, Keywords: ks},
					storage.ListQuery{GVR: deploymentsGVR, Keywords: ks},
					storage.ListQuery{GVR: anyGVR(), Keywords: ks, Limit: int64(1 + rng.IntN(5))},
					storage.ListQuery{GVR: anyGVR(), Keywords: ks, Clusters: []string{clusters[rng.IntN(len(clusters))]},
						Namespaces: []string{namespaces[rng.IntN(len(namespaces))], namespaces[rng.IntN(len(namespaces))]}},
					storage.ListQuery{GVR: anyGVR(), Keywords: ks, Labels: mustReqs(selectors[rng.IntN(len(selectors))]), Limit: int64(1 + rng.IntN(5)),
						OrderBy: []storage.OrderBy{{Field: storage.OrderName, Desc: true}}},
				)
			}
			return out
		}
		first := queries()
		found := 0
		for _, q := range first {
			if len(w.expect(&q)) > 0 {
				found++
			}
			checkQuery(t, s, w, q)
		}
		if found < len(first)/3 {
			t.Fatalf("only %d of %d queries find an object: the words drawn are not the objects'", found, len(first))
		}
		checkCount(t, s, w, storage.ListQuery{GVR: podsGVR, Keywords: keywords("db.example.com")}, []string{"cluster", "label:app"}, 0)
		checkCount(t, s, w, storage.ListQuery{GVR: deploymentsGVR, Keywords: keywords("web*", "ticket")}, []string{"namespace"}, 0)

		before := &world{objects: maps.Clone(w.objects)}
		rev, _, err := s.Revision(ctx)
		if err != nil {
			t.Fatal(err)
		}
		build := map[schema.GroupVersionResource]func(ns, name, rv string) *unstructured.Unstructured{podsGVR: pod, deploymentsGVR: deployment}
		for _, c := range clusters {
			for _, gvr := range []schema.GroupVersionResource{podsGVR, deploymentsGVR} {
				var changes []storage.Change
				for k, o := range w.objects {
					switch {
					case k.Cluster != c || k.GVR != gvr:
					case o.Name == "bulk":
						moved := pod(o.Namespace, o.Name, "2")
						withBulkWords(100, 400)(moved)
						changes = append(changes, storage.Upsert(moved))
					case rng.IntN(3) == 0:
						changes = append(changes, storage.Change{Namespace: o.Namespace, Name: o.Name})
					case rng.IntN(2) == 0:
						changes = append(changes, storage.Upsert(build[gvr](o.Namespace, o.Name, "2")))
					}
				}
				apply(c, gvr, changes)
			}
		}
		for _, q := range append(first, queries()...) {
			checkQuery(t, s, w, q)
			q.Revision = rev
			checkQuery(t, s, before, q)
		}
		checkCount(t, s, w, storage.ListQuery{GVR: podsGVR, Keywords: keywords("bulk02*")}, []string{"cluster"}, 0)
	})
}

// TestKeywordsOfDeclaredFields: a declared field's values are words of
// the objects that have it, those stored before the declaration once
// they are reindexed, and no more once it is dropped.
func TestKeywordsOfDeclaredFields(t *testing.T) {
	storagetest.ForEach(t, func(t *testing.T, b storagetest.Backend) {
		s := b.Open(t)
		ctx := context.Background()
		rng := rand.New(rand.NewPCG(37, 2))
		tenants := []string{"acme-corp", "globex", "initech"}
		w := &world{objects: map[storage.Key]*storage.Object{}}
		write := func(n int, prefix string) {
			var changes []storage.Change
			for i := range n {
				pod := object("Pod", "web", fmt.Sprint(prefix, i), "1", withLabels(rng), func(u *unstructured.Unstructured) {
					if rng.IntN(4) > 0 {
						_ = unstructured.SetNestedField(u.Object, tenants[rng.IntN(len(tenants))], "spec", "tenant")
					}
				})
				changes = append(changes, storage.Upsert(pod))
			}
			if _, err := s.ForCluster("east", storage.Unfenced).Apply(ctx, podsGVR, changes); err != nil {
				t.Fatal(err)
			}
			for _, c := range changes {
				w.put("east", podsGVR, c.Object)
			}
		}
		write(40, "old-")
		queries := []storage.ListQuery{
			{GVR: podsGVR, Keywords: keywords("acme")},
			{GVR: podsGVR, Keywords: keywords("acme-corp"), Limit: 3},
			{GVR: podsGVR, Keywords: keywords("glo*")},
			{GVR: podsGVR, Keywords: keywords("initech", "old*"), Labels: mustReqs("app!=web")},
		}
		for _, q := range queries {
			checkQuery(t, s, w, q)
		}
		if n := len(w.expect(&queries[0])); n != 0 {
			t.Fatalf("%d objects found by a word of an undeclared field", n)
		}

		tenant := storage.FieldDeclaration{Name: "tenant", Paths: []string{"spec.tenant"}}
		if err := s.DeclareFields(ctx, []storage.FieldDeclaration{tenant}); err != nil {
			t.Fatal(err)
		}
		write(10, "new-") // indexed as written
		fs, err := s.Fields(ctx)
		if err != nil {
			t.Fatal(err)
		}
		declared := describeAll(t, w, fs)
		for _, q := range queries {
			if len(declared.expect(&q)) == 0 {
				t.Fatalf("%s finds nothing once tenant is declared", describe(q))
			}
			checkQuery(t, s, declared, q)
		}

		if err := s.DeclareFields(ctx, nil); err != nil {
			t.Fatal(err)
		}
		if fs, err = s.Fields(ctx); err != nil {
			t.Fatal(err)
		}
		dropped := describeAll(t, w, fs)
		for _, q := range queries {
			checkQuery(t, s, dropped, q)
		}
		if n := len(dropped.expect(&queries[0])); n != 0 {
			t.Fatalf("%d objects found by a word of a dropped field", n)
		}
	})
}

// TestKeywordsLeaveStampsOut: an object is found by the same words
// however it is read: as written, from the log at an older revision, and
// as reindexed, which read the stored object, stamped with its cluster
// and member resourceVersion: those are Panorama's, not the object's.
func TestKeywordsLeaveStampsOut(t *testing.T) {
	storagetest.ForEach(t, func(t *testing.T, b storagetest.Backend) {
		s := b.Open(t)
		ctx := context.Background()
		w := &world{objects: map[storage.Key]*storage.Object{}}
		write := func(rv string) {
			t.Helper()
			pod := object("Pod", "web", "x", rv)
			if _, err := s.ForCluster("west", storage.Unfenced).Apply(ctx, podsGVR, []storage.Change{storage.Upsert(pod)}); err != nil {
				t.Fatal(err)
			}
			w.put("west", podsGVR, pod)
		}
		write("1")
		rev, _, err := s.Revision(ctx)
		if err != nil {
			t.Fatal(err)
		}
		queries := []storage.ListQuery{
			{GVR: podsGVR, Keywords: keywords("x")},
			{GVR: podsGVR, Keywords: keywords("west")},
			{GVR: podsGVR, Keywords: keywords("panorama.io")},
			{GVR: podsGVR, Keywords: keywords("member-resource-version")},
		}
		before := &world{objects: maps.Clone(w.objects)}
		write("2")
		if err := s.DeclareFields(ctx, []storage.FieldDeclaration{teamField}); err != nil {
			t.Fatal(err) // reindexes
		}
		for _, q := range queries {
			checkQuery(t, s, w, q)
			q.Revision = rev
			checkQuery(t, s, before, q)
		}
	})
}
