package storagetest

import (
	"context"
	"crypto/sha256"
	"database/sql"
	"encoding/hex"
	"fmt"
	"math/rand/v2"
	"os"
	"strconv"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/panorama-io/panorama/storage"
	"github.com/panorama-io/panorama/storage/sqlstore"
)

// BenchBatch is how many pods IngestPods writes at once, as a
// synchronizer does.
const BenchBatch = 500

// Pods is the resource of BenchPod.
var Pods = schema.GroupVersionResource{Version: "v1", Resource: "pods"}

var benchClusters = []string{"east", "west", "north"}

// BenchCluster is where IngestPods puts pod i: its batch's cluster.
func BenchCluster(i int) string { return benchClusters[(i/BenchBatch)%len(benchClusters)] }

// BenchPod is pod i of the benchmarks, a small pod of one of 4 apps and 2
// tiers, one of 3 phases and nodes, with an image of one of 200 teams'
// apps, half of them beside a common nginx sidecar.
func BenchPod(rng *rand.Rand, i int, memberRV string) *unstructured.Unstructured {
	ns, name := fmt.Sprintf("ns-%d", i%50), fmt.Sprintf("pod-%d", i)
	uid := sha256.Sum256([]byte("Pod/" + ns + "/" + name))
	u := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "Pod",
		"metadata": map[string]any{"name": name, "namespace": ns, "resourceVersion": memberRV, "uid": hex.EncodeToString(uid[:16]),
			"creationTimestamp": time.Date(2026, 1, 1, 0, 0, i, 0, time.UTC).Format(time.RFC3339),
			"labels": map[string]any{
				"app":   []string{"web", "db", "cache", "o.hara"}[rng.IntN(4)],
				"shard": fmt.Sprintf("s%d", rng.IntN(1000)),
				"tier":  []string{"front", "back"}[rng.IntN(2)],
			}},
		"status": map[string]any{"phase": []string{"Running", "Pending", "Failed"}[rng.IntN(3)]},
	}}
	node := []string{"node-a", "node-b", "node-c"}[rng.IntN(3)]
	containers := []any{map[string]any{"name": "app", "image": fmt.Sprintf("registry.example/team-%d/app:1.%d", rng.IntN(200), i%3)}}
	if rng.IntN(2) == 0 {
		containers = append(containers, map[string]any{"name": "web", "image": "nginx:1.27"})
	}
	u.Object["spec"] = map[string]any{"nodeName": node, "containers": containers}
	return u
}

// IngestPods stores n BenchPods in batches as a synchronizer writes them,
// reports the rate, and returns what it stored.
func IngestPods(b *testing.B, backend string, s storage.Interface, n int) []*storage.Object {
	ctx := context.Background()
	rng := rand.New(rand.NewPCG(7, 7))
	mem := make([]*storage.Object, 0, n)
	start := time.Now()
	for i := 0; i < n; i += BenchBatch {
		changes := make([]storage.Change, 0, BenchBatch)
		for j := i; j < i+BenchBatch; j++ {
			changes = append(changes, storage.Upsert(BenchPod(rng, j, "1")))
		}
		cluster := BenchCluster(i)
		if _, err := s.ForCluster(cluster, storage.Unfenced).Apply(ctx, Pods, changes); err != nil {
			b.Fatal(err)
		}
		for _, c := range changes {
			o := storage.Describe(c.Object)
			o.Cluster, o.GVR = cluster, Pods
			mem = append(mem, &o)
		}
	}
	ingest := time.Since(start)
	b.ReportMetric(float64(n)/ingest.Seconds(), "ingest-objects/s")
	b.Logf("%s: ingested %d objects in %v (%.0f objects/s)", backend, n, ingest.Round(time.Millisecond), float64(n)/ingest.Seconds())
	return mem
}

// StoreRealisticPods stores RealisticPods 0..n-1 of round, drawn from
// rng, under gvr, BenchBatch at a time as a synchronizer writes them: the
// batch that begins with pod i in the cluster that cluster(i) names.
func StoreRealisticPods(tb testing.TB, s storage.Interface, gvr schema.GroupVersionResource, rng *rand.Rand, n, round int, cluster func(i int) string) {
	tb.Helper()
	for i := 0; i < n; i += BenchBatch {
		changes := make([]storage.Change, 0, BenchBatch)
		for j := i; j < min(i+BenchBatch, n); j++ {
			changes = append(changes, storage.Upsert(RealisticPod(rng, j, round)))
		}
		if _, err := s.ForCluster(cluster(i), storage.Unfenced).Apply(context.Background(), gvr, changes); err != nil {
			tb.Fatal(err)
		}
	}
}

// InCluster is a cluster function of StoreRealisticPods that puts every
// batch in the one cluster named.
func InCluster(name string) func(int) string { return func(int) string { return name } }

// BenchCountObjects is how many pods the count benchmarks count:
// PANORAMA_BENCH_COUNT_OBJECTS when set (make bench-count-1m), else def.
func BenchCountObjects(b *testing.B, def int) int {
	return EnvInt(b, "PANORAMA_BENCH_COUNT_OBJECTS", def, BenchBatch)
}

// EnvInt is the integer the environment variable name sets, at least
// least, for a benchmark's size; def when it is unset.
func EnvInt(b *testing.B, name string, def, least int) int {
	v := os.Getenv(name)
	if v == "" {
		return def
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < least {
		b.Fatalf("%s=%q: want an integer of at least %d", name, v, least)
	}
	return n
}

// BenchCount is a count the benchmarks time.
type BenchCount struct {
	Name  string
	Query storage.CountQuery
}

// BenchCounts are the counts of BenchPods the benchmarks time: grouped by
// cluster, namespace, label, field (the multi-valued images among them)
// and cluster with phase, which the store's summary answers, and by a
// label under a label selector, which it does not.
func BenchCounts(b *testing.B) []BenchCount {
	count := func(name string, q storage.ListQuery, terms ...string) BenchCount {
		q.GVR = Pods
		c := BenchCount{Name: name, Query: storage.CountQuery{Query: q}}
		for _, t := range terms {
			g, err := storage.ParseGroupBy(t)
			if err != nil {
				b.Fatal(err)
			}
			c.Query.GroupBy = append(c.Query.GroupBy, g)
		}
		return c
	}
	front, err := labels.NewRequirement("tier", "=", []string{"front"})
	if err != nil {
		b.Fatal(err)
	}
	return []BenchCount{
		count("cluster", storage.ListQuery{}, "cluster"),
		count("namespace", storage.ListQuery{}, "namespace"),
		count("label:app", storage.ListQuery{}, "label:app"),
		count("field:images", storage.ListQuery{}, "field:images"),
		count("namespace,field:images", storage.ListQuery{}, "namespace", "field:images"),
		count("cluster,field:status.phase,ns=ns-1", storage.ListQuery{Namespaces: []string{"ns-1"}}, "cluster", "field:status.phase"),
		count("field:status.phase", storage.ListQuery{}, "field:status.phase"),
		count("cluster,field:status.phase", storage.ListQuery{}, "cluster", "field:status.phase"),
		count("label:app,label-tier=front", storage.ListQuery{Labels: labels.Requirements{*front}}, "label:app"),
	}
}

// PlainCount returns a timer of a plain SELECT COUNT(*) of the objects'
// table in the database opts reach, from a connection of its own: the
// baseline the benchmarks of counts are ratios to. It fails unless the
// table holds want rows.
func PlainCount(b *testing.B, opts sqlstore.Options, want int) func() time.Duration {
	db, err := sql.Open(map[string]string{"sqlite": "sqlite", "mysql": "mysql", "postgres": "pgx"}[opts.Driver], opts.DSN)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = db.Close() })
	return func() time.Duration {
		start := time.Now()
		var total int
		if err := db.QueryRow("SELECT COUNT(*) FROM resources").Scan(&total); err != nil {
			b.Fatal(err)
		}
		if total != want {
			b.Fatalf("COUNT(*) %d, want %d", total, want)
		}
		return time.Since(start)
	}
}
