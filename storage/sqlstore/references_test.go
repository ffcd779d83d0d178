package sqlstore_test

import (
	"context"
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

// Targets drawn from names that are prefixes of each other, so that a
// reference to one never matches another's.
var (
	secretNames = []string{"db", "db-pass", "db-pass-old", "db-pass.v2"}
	configNames = []string{"cfg", "cfg-1", "cfg-10"}
	accounts    = []string{"default", "builder"}
)

// withReferences gives a pod volumes, env and an account that refer to
// secrets and config maps drawn at random, and a node.
func withReferences(rng *rand.Rand) func(*unstructured.Unstructured) {
	return func(u *unstructured.Unstructured) {
		pick := func(vs []string) string { return vs[rng.IntN(len(vs))] }
		var volumes []any
		for i := range rng.IntN(3) {
			volumes = append(volumes, map[string]any{"name": fmt.Sprint("s", i), "secret": map[string]any{"secretName": pick(secretNames)}})
		}
		if rng.IntN(2) == 0 {
			volumes = append(volumes, map[string]any{"name": "cfg", "configMap": map[string]any{"name": pick(configNames)}})
		}
		spec := map[string]any{
			"volumes":            volumes,
			"serviceAccountName": pick(accounts),
			"containers": []any{map[string]any{"name": "app", "image": "nginx",
				"envFrom": []any{map[string]any{"configMapRef": map[string]any{"name": pick(configNames)}}}}},
		}
		if rng.IntN(4) > 0 {
			spec["nodeName"] = pick(nodes)
		}
		u.Object["spec"] = spec
	}
}

// TestReferencesMatchBruteForce: pods that refer to secrets, config maps,
// accounts and nodes, and role bindings that refer to accounts of other
// namespaces, list exactly what ListQuery.Matches accepts of them, by
// what they refer to (in a namespace or any) and by name, paged or not;
// again after updates that move references and deletes, both at the
// latest revision and at the first one, which the log answers.
func TestReferencesMatchBruteForce(t *testing.T) {
	storagetest.ForEach(t, func(t *testing.T, b storagetest.Backend) {
		s := b.Open(t)
		ctx := context.Background()
		rng := rand.New(rand.NewPCG(37, 37))
		w := &world{objects: map[storage.Key]*storage.Object{}}
		apply := func(cluster string, gvr schema.GroupVersionResource, changes []storage.Change) {
			t.Helper()
			w.apply(t, s, cluster, gvr, changes)
		}
		rolesGVR := schema.GroupVersionResource{Group: "rbac.authorization.k8s.io", Version: "v1", Resource: "rolebindings"}
		pod := func(ns string, i int, rv string) *unstructured.Unstructured {
			return object("Pod", ns, fmt.Sprint("pod-", i), rv, withLabels(rng), withReferences(rng))
		}
		for _, c := range clusters {
			var pods, bindings []storage.Change
			for i := range 30 {
				pods = append(pods, storage.Upsert(pod(namespaces[rng.IntN(len(namespaces))], i, "1")))
			}
			for i := range 4 {
				ns := namespaces[i]
				rb := object("RoleBinding", ns, "deployers", "1", func(u *unstructured.Unstructured) {
					u.Object["apiVersion"] = "rbac.authorization.k8s.io/v1"
					u.Object["roleRef"] = map[string]any{"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "edit"}
					u.Object["subjects"] = []any{
						map[string]any{"kind": "ServiceAccount", "namespace": namespaces[rng.IntN(len(namespaces))], "name": "builder"},
						map[string]any{"kind": "User", "apiGroup": "rbac.authorization.k8s.io", "name": "alice"},
					}
				})
				bindings = append(bindings, storage.Upsert(rb))
			}
			apply(c, podsGVR, pods)
			apply(c, rolesGVR, bindings)
		}
		queries := func() []storage.ListQuery {
			var targets []storage.Reference
			for _, o := range w.objects {
				for _, v := range o.Fields[storage.ReferencesField] {
					r, ok := storage.ParseReferenceValue(v)
					if !ok {
						t.Fatalf("stored reference %q does not parse", v)
					}
					targets = append(targets, r)
				}
			}
			slices.SortFunc(targets, func(a, b storage.Reference) int { return strings.Compare(a.Value(), b.Value()) })
			targets = slices.Compact(targets)
			var out []storage.ListQuery
			for _, r := range targets {
				anyNamespace := r
				anyNamespace.Namespace = ""
				for _, gvr := range []schema.GroupVersionResource{podsGVR, rolesGVR} {
					out = append(out,
						storage.ListQuery{GVR: gvr, RefersTo: []storage.Reference{r}},
						storage.ListQuery{GVR: gvr, RefersTo: []storage.Reference{anyNamespace}, Limit: int64(1 + rng.IntN(5))},
						storage.ListQuery{GVR: gvr, RefersTo: []storage.Reference{anyNamespace}, Clusters: []string{clusters[rng.IntN(3)]}, Labels: mustReqs("app!=db")},
					)
				}
			}
			absent := []storage.Reference{{Kind: "Secret", Name: "nowhere"}, {Kind: "Secret", Name: "db-pass", Namespace: "nowhere"}, {Kind: "Secret", Name: "db-"}}
			out = append(out, storage.ListQuery{GVR: podsGVR, RefersTo: absent},
				storage.ListQuery{GVR: podsGVR, RefersTo: append(absent, storage.Reference{Kind: "ConfigMap", Name: "cfg-1"}, storage.Reference{Kind: "Secret", Namespace: "web", Name: "db-pass"})})
			keys := slices.Collect(maps.Keys(w.objects))
			for range 10 {
				var named []storage.ObjectName
				for range rng.IntN(8) {
					k := keys[rng.IntN(len(keys))]
					named = append(named, storage.ObjectName{Cluster: k.Cluster, Namespace: k.Namespace, Name: k.Name})
				}
				named = append(named, storage.ObjectName{Cluster: "east", Namespace: "web", Name: "absent"})
				out = append(out, storage.ListQuery{GVR: podsGVR, Objects: named, Limit: int64(rng.IntN(3))},
					storage.ListQuery{GVR: podsGVR, Objects: named, RefersTo: []storage.Reference{{Kind: "Secret", Name: "db-pass"}}})
			}
			return append(out, storage.ListQuery{GVR: podsGVR, Objects: []storage.ObjectName{}})
		}
		first := queries()
		for _, q := range first {
			checkQuery(t, s, w, q)
		}
		before := &world{objects: maps.Clone(w.objects)}
		res, err := s.List(ctx, &storage.ListQuery{GVR: podsGVR, Limit: 1})
		if err != nil {
			t.Fatal(err)
		}
		for _, c := range clusters {
			var changes []storage.Change
			for k, o := range w.objects {
				switch {
				case k.Cluster != c || k.GVR != podsGVR:
				case rng.IntN(3) == 0:
					changes = append(changes, storage.Change{Namespace: o.Namespace, Name: o.Name})
				case rng.IntN(2) == 0:
					var i int
					fmt.Sscanf(o.Name, "pod-%d", &i)
					changes = append(changes, storage.Upsert(pod(o.Namespace, i, "2")))
				}
			}
			apply(c, podsGVR, changes)
		}
		for _, q := range append(first, queries()...) {
			checkQuery(t, s, w, q)
			q.Revision = res.Revision
			checkQuery(t, s, before, q)
		}
	})
}

// TestReferencesInManyNamespaces: a target in any namespace that has more
// values than a page resolves (one a namespace) is tested as a range of
// the dictionary instead, with the same answer.
func TestReferencesInManyNamespaces(t *testing.T) {
	storagetest.ForEach(t, func(t *testing.T, b storagetest.Backend) {
		s := b.Open(t)
		w := &world{objects: map[storage.Key]*storage.Object{}}
		var changes []storage.Change
		for i := range 1250 { // "shared" in 1,071 namespaces: past maxImageValues
			secret := "shared"
			if i%7 == 0 {
				secret = "shared-old"
			}
			pod := object("Pod", fmt.Sprintf("ns-%04d", i), "p", "1", func(u *unstructured.Unstructured) {
				u.Object["spec"] = map[string]any{"volumes": []any{map[string]any{"name": "s", "secret": map[string]any{"secretName": secret}}}}
			})
			changes = append(changes, storage.Upsert(pod))
			w.put("east", podsGVR, pod)
		}
		if _, err := s.ForCluster("east", storage.Unfenced).Apply(context.Background(), podsGVR, changes); err != nil {
			t.Fatal(err)
		}
		for _, q := range []storage.ListQuery{
			{GVR: podsGVR, RefersTo: []storage.Reference{{Kind: "Secret", Name: "shared"}}, Limit: 300},
			{GVR: podsGVR, RefersTo: []storage.Reference{{Kind: "Secret", Name: "shared"}, {Kind: "Secret", Namespace: "ns-0007", Name: "shared-old"}}},
			{GVR: podsGVR, RefersTo: []storage.Reference{{Kind: "Secret", Name: "shared-old"}}, Limit: 50},
		} {
			checkQuery(t, s, w, q)
		}
	})
}
