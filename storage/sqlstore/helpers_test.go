package sqlstore_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"gorm.io/gorm"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/panorama-io/panorama/storage"
)

var (
	podsGVR        = schema.GroupVersionResource{Version: "v1", Resource: "pods"}
	deploymentsGVR = schema.GroupVersionResource{Group: "apps", Version: "v1", Resource: "deployments"}
	replicaSetsGVR = schema.GroupVersionResource{Group: "apps", Version: "v1", Resource: "replicasets"}
	baseTime       = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
)

// execAll runs stmts on db in order: a test's setup of a database as an
// older version left it.
func execAll(t testing.TB, db *gorm.DB, stmts ...string) {
	t.Helper()
	for _, stmt := range stmts {
		if err := db.Exec(stmt).Error; err != nil {
			t.Fatalf("%s: %v", stmt, err)
		}
	}
}

// object builds a member object the way a synchronizer hands it over.
func object(kind, ns, name, memberRV string, mutate ...func(u *unstructured.Unstructured)) *unstructured.Unstructured {
	u := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "v1", "kind": kind,
		"metadata": map[string]any{
			"name": name, "namespace": ns, "resourceVersion": memberRV,
			"uid": uidOf(kind, ns, name), "creationTimestamp": baseTime.Format(time.RFC3339),
		},
	}}
	for _, m := range mutate {
		m(u)
	}
	return u
}

func uidOf(kind, ns, name string) string {
	sum := sha256.Sum256([]byte(kind + "/" + ns + "/" + name))
	return hex.EncodeToString(sum[:16])
}

// world is a generated set of objects in several clusters: deployments own
// replicasets own pods, so owner queries have depth.
type world struct {
	objects map[storage.Key]*storage.Object // as stored, kept by the test independently of the store
}

var (
	clusters   = []string{"east", "west", "north"}
	namespaces = []string{"default", "kube-system", "web", "db"}
	appValues  = []string{"web", "db", "cache", "o.hara"}
	tierValues = []string{"front", "back"}
	phases     = []string{"Running", "Pending", "Failed"}
	nodes      = []string{"node-a", "node-b", "node-c"}
	images     = []string{"nginx:1.27", "registry.example/library/nginx@sha256:0f1e", "busybox", "redis:7", "ghcr.io/x/redis-exporter:v1"}
)

func generate(t testing.TB, s storage.Interface, rng *rand.Rand, perCluster int) *world {
	t.Helper()
	ctx := context.Background()
	w := &world{objects: map[storage.Key]*storage.Object{}}
	for _, c := range clusters {
		byGVR := map[schema.GroupVersionResource][]storage.Change{}
		for i := range perCluster {
			ns := namespaces[rng.IntN(len(namespaces))]
			created := baseTime.Add(time.Duration(rng.IntN(1000)) * time.Hour)
			dep := object("Deployment", ns, fmt.Sprintf("app-%d", i), "1", withLabels(rng), withCreated(created), withImages(rng, "spec", "template", "spec"))
			byGVR[deploymentsGVR] = append(byGVR[deploymentsGVR], storage.Upsert(dep))
			rs := object("ReplicaSet", ns, fmt.Sprintf("app-%d-rs", i), "1", withLabels(rng), withOwner(dep), withCreated(created.Add(time.Minute)))
			byGVR[replicaSetsGVR] = append(byGVR[replicaSetsGVR], storage.Upsert(rs))
			for j := range 1 + rng.IntN(3) {
				pod := object("Pod", ns, fmt.Sprintf("app-%d-rs-%d", i, j), "1", withLabels(rng), withOwner(rs), withPodFields(rng),
					withCreated(created.Add(time.Duration(j+2)*time.Minute)))
				byGVR[podsGVR] = append(byGVR[podsGVR], storage.Upsert(pod))
			}
		}
		for gvr, changes := range byGVR {
			keep := make([]*unstructured.Unstructured, len(changes))
			for i := range changes {
				keep[i] = changes[i].Object
			}
			rev, err := s.ForCluster(c, storage.Unfenced).Apply(ctx, gvr, changes)
			if err != nil {
				t.Fatalf("apply: %v", err)
			}
			for i, u := range keep {
				// Each object, new, took the batch's next revision.
				w.put(c, gvr, u).Revision = rev - int64(len(keep)-1-i)
			}
		}
	}
	return w
}

func (w *world) put(cluster string, gvr schema.GroupVersionResource, u *unstructured.Unstructured) *storage.Object {
	data, _ := u.MarshalJSON()
	o, err := storage.BuiltinFields.DecodeStored(gvr.GroupResource(), data) // as the store describes it
	if err != nil {
		panic(err)
	}
	o.Cluster, o.GVR = cluster, gvr
	w.objects[o.Key] = &o
	return &o
}

// apply writes changes of cluster's gvr to s, and to w alike.
func (w *world) apply(t testing.TB, s storage.Interface, cluster string, gvr schema.GroupVersionResource, changes []storage.Change) {
	t.Helper()
	if _, err := s.ForCluster(cluster, storage.Unfenced).Apply(context.Background(), gvr, changes); err != nil {
		t.Fatalf("apply: %v", err)
	}
	for _, c := range changes {
		if c.Object == nil {
			delete(w.objects, storage.Key{Cluster: cluster, GVR: gvr, Namespace: c.Namespace, Name: c.Name})
		} else {
			w.put(cluster, gvr, c.Object)
		}
	}
}

// expect is the brute-force answer to q: every object, filtered in Go,
// owners resolved by walking the generated objects.
func (w *world) expect(q *storage.ListQuery) []storage.Key {
	var owners storage.OwnerSet
	if q.HasOwnerFilter() {
		owners = storage.OwnerSet{}
		inScope := func(o *storage.Object) bool { return len(q.Clusters) == 0 || slices.Contains(q.Clusters, o.Cluster) }
		for _, o := range w.objects {
			if !inScope(o) {
				continue
			}
			if q.OwnerUID == o.UID || (q.OwnerName != "" && q.OwnerName == o.Name &&
				(q.OwnerGroupResource == nil || (o.GVR.Group == q.OwnerGroupResource.Group && o.GVR.Resource == q.OwnerGroupResource.Resource))) {
				owners[o.UID] = struct{}{}
			}
		}
		for range q.OwnerSeniority {
			next := storage.OwnerSet{}
			for _, o := range w.objects {
				if _, ok := owners[o.OwnerUID]; ok && inScope(o) {
					next[o.UID] = struct{}{}
				}
			}
			owners = next
		}
	}
	var out []*storage.Object
	for _, o := range w.objects {
		if q.Matches(o, owners) {
			out = append(out, o)
		}
	}
	order := q.Order()
	slices.SortFunc(out, func(a, b *storage.Object) int { return storage.Compare(order, a, b) })
	keys := make([]storage.Key, len(out))
	for i, o := range out {
		keys[i] = o.Key
	}
	return keys
}

// listAll pages through q and returns the keys in order and the revision of
// the first page.
func listAll(t testing.TB, s storage.Interface, q storage.ListQuery, between func()) ([]storage.Key, []storage.Object, int64) {
	t.Helper()
	var keys []storage.Key
	var objs []storage.Object
	var rev int64
	for page := 0; ; page++ {
		res, err := s.List(context.Background(), &q)
		if err != nil {
			t.Fatalf("list page %d of %+v: %v", page, q, err)
		}
		if page == 0 {
			rev = res.Revision
		} else if res.Revision != rev {
			t.Fatalf("page %d at revision %d, first page at %d", page, res.Revision, rev)
		}
		if q.Limit > 0 && int64(len(res.Objects)) > q.Limit {
			t.Fatalf("page of %d objects over limit %d", len(res.Objects), q.Limit)
		}
		for _, o := range res.Objects {
			keys = append(keys, o.Key)
			objs = append(objs, o)
		}
		if res.Continue == "" {
			return keys, objs, rev
		}
		if page > 10000 {
			t.Fatal("paging does not end")
		}
		q.Continue = res.Continue
		if between != nil {
			between()
		}
	}
}

func withLabels(rng *rand.Rand) func(*unstructured.Unstructured) {
	return func(u *unstructured.Unstructured) {
		l := map[string]string{}
		if rng.IntN(5) > 0 {
			l["app"] = appValues[rng.IntN(len(appValues))]
		}
		if rng.IntN(2) == 0 {
			l["tier"] = tierValues[rng.IntN(len(tierValues))]
		}
		if rng.IntN(4) == 0 {
			l["example.com/canary"] = "true"
		}
		u.SetLabels(l)
	}
}

func withOwner(owner *unstructured.Unstructured) func(*unstructured.Unstructured) {
	return func(u *unstructured.Unstructured) {
		yes := true
		u.SetOwnerReferences([]metav1.OwnerReference{{APIVersion: "apps/v1", Kind: owner.GetKind(), Name: owner.GetName(), UID: owner.GetUID(), Controller: &yes}})
	}
}

func withCreated(t time.Time) func(*unstructured.Unstructured) {
	return func(u *unstructured.Unstructured) { u.SetCreationTimestamp(metav1.NewTime(t)) }
}

func withPodFields(rng *rand.Rand) func(*unstructured.Unstructured) {
	return func(u *unstructured.Unstructured) {
		if rng.IntN(6) > 0 {
			_ = unstructured.SetNestedField(u.Object, phases[rng.IntN(len(phases))], "status", "phase")
		}
		if rng.IntN(6) > 0 {
			_ = unstructured.SetNestedField(u.Object, nodes[rng.IntN(len(nodes))], "spec", "nodeName")
		}
		withImages(rng, "spec")(u)
	}
}

// withImages gives the pod spec at path 0 to 3 containers and sometimes an
// init container, whose images may repeat: a multi-valued field.
func withImages(rng *rand.Rand, path ...string) func(*unstructured.Unstructured) {
	return func(u *unstructured.Unstructured) {
		containers := func(n int) []any {
			var out []any
			for i := range n {
				out = append(out, map[string]any{"name": fmt.Sprint("c", i), "image": images[rng.IntN(len(images))]})
			}
			return out
		}
		_ = unstructured.SetNestedSlice(u.Object, containers(rng.IntN(4)), append(path, "containers")...)
		if rng.IntN(3) == 0 {
			_ = unstructured.SetNestedSlice(u.Object, containers(1), append(path, "initContainers")...)
		}
	}
}

// toRevisionKeyed takes the rows back to keys of the revision that wrote
// them, as they were before schema version 19, and forgets version 19: a
// store opened next migrates them again.
func toRevisionKeyed(t testing.TB, backend string, db *gorm.DB) {
	t.Helper()
	stmts := []string{
		"UPDATE object_attributes SET object_id = (SELECT revision FROM resources r WHERE r.object_id = object_attributes.object_id)",
		"UPDATE object_keywords SET object_id = (SELECT revision FROM resources r WHERE r.object_id = object_keywords.object_id)",
	}
	switch backend {
	case "mysql":
		stmts = append(stmts,
			"ALTER TABLE object_attributes CHANGE object_id resource_revision BIGINT NOT NULL",
			"ALTER TABLE object_keywords CHANGE object_id resource_revision BIGINT NOT NULL",
			"ALTER TABLE resources DROP PRIMARY KEY, ADD PRIMARY KEY (revision), DROP INDEX resources_revision, DROP COLUMN object_id")
	case "postgres":
		stmts = append(stmts,
			"ALTER TABLE object_attributes RENAME COLUMN object_id TO resource_revision",
			"ALTER TABLE object_keywords RENAME COLUMN object_id TO resource_revision",
			"ALTER TABLE resources DROP CONSTRAINT resources_pkey, ADD PRIMARY KEY (revision)",
			"DROP INDEX resources_revision",
			"ALTER TABLE resources DROP COLUMN object_id")
	default:
		// SQLite changes a key by copying the table.
		columns := "revision, cluster, api_group, version, resource, namespace, name, kind, uid, owner_uid, created_at, member_resource_version, object, delta_chain"
		stmts = append(stmts,
			// The text index has the documents by rowid, which moved.
			"INSERT INTO object_keywords_words (object_keywords_words) VALUES ('rebuild')",
			"ALTER TABLE object_attributes RENAME COLUMN object_id TO resource_revision",
			"ALTER TABLE object_keywords RENAME COLUMN object_id TO resource_revision",
			"ALTER TABLE resources RENAME TO resources_by_object",
			"DROP INDEX resources_key", "DROP INDEX resources_namespace_name", "DROP INDEX resources_created",
			"DROP INDEX resources_name", "DROP INDEX resources_owner", "DROP INDEX resources_revision",
			"CREATE TABLE resources (revision INTEGER NOT NULL, cluster TEXT NOT NULL, api_group TEXT NOT NULL, version TEXT NOT NULL, "+
				"resource TEXT NOT NULL, namespace TEXT NOT NULL, name TEXT NOT NULL, kind TEXT NOT NULL, uid TEXT NOT NULL, owner_uid TEXT NOT NULL, "+
				"created_at INTEGER NOT NULL, member_resource_version TEXT NOT NULL, object BLOB NOT NULL, delta_chain INTEGER NULL, PRIMARY KEY (revision))",
			"CREATE UNIQUE INDEX resources_key ON resources (api_group, version, resource, cluster, namespace, name)",
			"CREATE INDEX resources_namespace_name ON resources (api_group, version, resource, namespace, name)",
			"CREATE INDEX resources_created ON resources (api_group, version, resource, created_at, cluster, namespace, name)",
			"CREATE INDEX resources_name ON resources (name)",
			"CREATE INDEX resources_owner ON resources (owner_uid)",
			"INSERT INTO resources ("+columns+") SELECT "+columns+" FROM resources_by_object",
			"DROP TABLE resources_by_object")
	}
	execAll(t, db, append(stmts, "DELETE FROM panorama_schema_migrations WHERE version = 19")...)
}

// toLegacyAttributes takes the rows back to keys of their revision
// (toRevisionKeyed) and the attribute rows to the table they were in
// before the dictionary (schema version 15), with or without seq, its
// text in collation where given (MySQL), and forgets version 15 and
// forget: a store opened next migrates them again.
func toLegacyAttributes(t testing.TB, backend string, db *gorm.DB, withSeq bool, collation string, forget ...int) {
	t.Helper()
	toRevisionKeyed(t, backend, db)
	columns := "resource_revision BIGINT NOT NULL, kind VARCHAR(1) NOT NULL, attr_key VARCHAR(317) NOT NULL, attr_value VARCHAR(512) NOT NULL"
	key, from, selected := "resource_revision, kind, attr_key", "", "a.resource_revision, k.kind, k.name, v.value"
	if withSeq {
		columns += ", seq INT NOT NULL DEFAULT 0"
		key, selected = key+", seq", selected+", a.seq"
	} else {
		from = " WHERE k.name <> 'images'" // multi-valued: the schema before seq had none
	}
	table := "CREATE TABLE attributes (" + columns + ", PRIMARY KEY (" + key + ")"
	var stmts []string
	if backend == "mysql" {
		table += ", KEY attributes_lookup (kind, attr_key(190), attr_value(190)))"
		if collation != "" {
			table += " CHARACTER SET utf8mb4 COLLATE " + collation
		}
		stmts = append(stmts, table)
	} else {
		stmts = append(stmts, table+")", "CREATE INDEX attributes_lookup ON attributes (kind, attr_key, attr_value)")
	}
	insert := "INSERT INTO attributes (resource_revision, kind, attr_key, attr_value"
	if withSeq {
		insert += ", seq"
	}
	stmts = append(stmts,
		insert+") SELECT "+selected+" FROM object_attributes a JOIN attribute_keys k ON k.id = a.key_id JOIN attribute_values v ON v.id = a.value_id"+from,
		"DROP TABLE object_attributes", "DROP TABLE attribute_values", "DROP TABLE attribute_keys",
		"DELETE FROM panorama_schema_migrations WHERE version = 15")
	for _, v := range forget {
		stmts = append(stmts, fmt.Sprintf("DELETE FROM panorama_schema_migrations WHERE version = %d", v))
	}
	execAll(t, db, stmts...)
}
