package sqlstore_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/fields"

	"github.com/panorama-io/panorama/storage"
	"github.com/panorama-io/panorama/storage/storagetest"
)

// benchObjects is the size of the store the searches run against.
const benchObjects = 100_000

// BenchmarkStore ingests benchObjects pods per backend in batches as a
// synchronizer writes them, then times typical searches. Each search is
// also reported as a ratio to the same query answered by a full scan in
// memory, measured in the same run (what a cache-less server would do).
func BenchmarkStore(b *testing.B) {
	for _, be := range storagetest.Backends() {
		b.Run(be.Name, func(b *testing.B) {
			s := be.Open(b)
			ctx := context.Background()
			rng := rand.New(rand.NewPCG(7, 7))
			mem := make([]*storage.Object, 0, benchObjects)
			start := time.Now()
			const batch = 500
			for i := 0; i < benchObjects; i += batch {
				changes := make([]storage.Change, 0, batch)
				for j := i; j < i+batch; j++ {
					u := benchPod(rng, j)
					changes = append(changes, storage.Upsert(u))
				}
				cluster := clusters[(i/batch)%len(clusters)]
				if _, err := s.Apply(ctx, cluster, podsGVR, changes); err != nil {
					b.Fatal(err)
				}
				for _, c := range changes {
					o := storage.Describe(c.Object)
					o.Cluster, o.GVR = cluster, podsGVR
					mem = append(mem, &o)
				}
			}
			ingest := time.Since(start)
			b.ReportMetric(float64(benchObjects)/ingest.Seconds(), "ingest-objects/s")
			b.Logf("%s: ingested %d objects in %v (%.0f objects/s)", be.Name, benchObjects, ingest.Round(time.Millisecond), float64(benchObjects)/ingest.Seconds())

			for _, bq := range benchQueries() {
				q := bq.q
				var res *storage.ListResult
				const runs = 5
				t0 := time.Now()
				for range runs {
					var err error
					if res, err = s.List(ctx, &q); err != nil {
						b.Fatal(err)
					}
				}
				perQuery := time.Since(t0) / runs
				t1 := time.Now()
				var n int
				for range runs {
					n = 0
					for _, o := range mem {
						if q.Matches(o, nil) {
							n++
						}
					}
				}
				scan := time.Since(t1) / runs
				b.ReportMetric(float64(perQuery.Microseconds()), bq.name+"-µs")
				b.Logf("%s %-28s %8v  (%d objects; in-memory scan %v, ratio %.2fx)", be.Name, bq.name, perQuery.Round(time.Microsecond),
					len(res.Objects), scan.Round(time.Microsecond), float64(perQuery)/float64(scan))
			}
		})
	}
}

type benchQuery struct {
	name string
	q    storage.ListQuery
}

func benchQueries() []benchQuery {
	return []benchQuery{
		{"page-500", storage.ListQuery{GVR: podsGVR, Limit: 500}},
		{"label-app=web,limit-500", storage.ListQuery{GVR: podsGVR, Labels: mustReqs("app=web"), Limit: 500}},
		{"label-rare", storage.ListQuery{GVR: podsGVR, Labels: mustReqs("shard=s7")}},
		{"field-phase=Failed,limit-100", storage.ListQuery{GVR: podsGVR, Fields: fields.ParseSelectorOrDie("status.phase=Failed").Requirements(), Limit: 100}},
		{"cluster+namespace", storage.ListQuery{GVR: podsGVR, Clusters: []string{"west"}, Namespaces: []string{"ns-3"}}},
		{"name", storage.ListQuery{GVR: podsGVR, Names: []string{"pod-4242"}}},
		{"orderby-created-desc,limit-50", storage.ListQuery{GVR: podsGVR, Limit: 50, OrderBy: []storage.OrderBy{{Field: storage.OrderCreated, Desc: true}}}},
	}
}

func benchPod(rng *rand.Rand, i int) *unstructured.Unstructured {
	return object("Pod", fmt.Sprintf("ns-%d", i%50), fmt.Sprintf("pod-%d", i), "1", func(u *unstructured.Unstructured) {
		u.SetLabels(map[string]string{
			"app":   appValues[rng.IntN(len(appValues))],
			"shard": fmt.Sprintf("s%d", rng.IntN(1000)),
			"tier":  tierValues[rng.IntN(len(tierValues))],
		})
		u.SetCreationTimestamp(metav1.NewTime(baseTime.Add(time.Duration(i) * time.Second)))
		_ = unstructured.SetNestedField(u.Object, phases[rng.IntN(len(phases))], "status", "phase")
		_ = unstructured.SetNestedField(u.Object, nodes[rng.IntN(len(nodes))], "spec", "nodeName")
		_ = unstructured.SetNestedStringMap(u.Object, map[string]string{"image": "nginx:1.27", "name": "web"}, "spec", "containers0")
	})
}
