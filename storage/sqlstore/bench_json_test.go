package sqlstore_test

import (
	"math/rand/v2"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/panorama-io/panorama/storage/sqlstore"
	"github.com/panorama-io/panorama/storage/storagetest"
)

// BenchmarkObjectJSON times writing the JSON of realistic pods (managed
// fields, status) as the store does, into a buffer used again, as a ratio
// to Unstructured.MarshalJSON (encoding/json), which the store used
// before, writing the same bytes, measured in the same run.
func BenchmarkObjectJSON(b *testing.B) {
	const pods, runs = 2_000, 5
	rng := rand.New(rand.NewPCG(3, 3))
	objs := make([]map[string]any, pods)
	for i := range objs {
		// Decoded as a member's are, integers as int64.
		data, err := storagetest.RealisticPod(rng, i, 0).MarshalJSON()
		if err != nil {
			b.Fatal(err)
		}
		var u unstructured.Unstructured
		if err := u.UnmarshalJSON(data); err != nil {
			b.Fatal(err)
		}
		objs[i] = u.Object
	}
	timed := func(encode func(map[string]any) ([]byte, error)) time.Duration {
		fastest := time.Duration(1 << 62)
		for range runs {
			t0 := time.Now()
			for _, o := range objs {
				if _, err := encode(o); err != nil {
					b.Fatal(err)
				}
			}
			fastest = min(fastest, time.Since(t0))
		}
		return fastest / pods
	}
	baseline := timed(func(o map[string]any) ([]byte, error) {
		return (&unstructured.Unstructured{Object: o}).MarshalJSON()
	})
	var buf []byte // reused, as storedObject does
	store := timed(func(o map[string]any) (data []byte, err error) {
		buf, err = sqlstore.AppendObjectJSON(buf[:0], o)
		return buf, err
	})
	b.ReportMetric(float64(store)/float64(baseline), "x-encoding/json")
	b.Logf("JSON of a realistic pod: %v, %.2fx Unstructured.MarshalJSON's %v (the fastest of %d runs of %d pods)", store, float64(store)/float64(baseline), baseline, runs, pods)
}
