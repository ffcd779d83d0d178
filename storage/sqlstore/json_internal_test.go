package sqlstore

import (
	"bytes"
	"math"
	"math/rand/v2"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// TestObjectJSONAsUnstructured compares objectJSON with
// Unstructured.MarshalJSON, byte for byte, over objects of what a member
// may send: keys and strings of any bytes (invalid UTF-8, control
// characters, HTML's, U+2028), integers of any size, floats, nested maps
// and lists, empty ones, nulls.
func TestObjectJSONAsUnstructured(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for i := range 20_000 {
		u := &unstructured.Unstructured{Object: map[string]any{"kind": "Pod", "metadata": randomValue(rng, 0), randomText(rng): randomValue(rng, 0)}}
		want, err := u.MarshalJSON()
		if err != nil {
			t.Fatal(err)
		}
		got, err := objectJSON(u.Object)
		if err != nil {
			t.Fatalf("object %d: %v", i, err)
		}
		if !bytes.Equal(got, want) {
			t.Fatalf("object %d:\n got %q\nwant %q", i, got, want)
		}
	}
}

func randomText(rng *rand.Rand) string {
	var b []byte
	for range rng.IntN(12) {
		switch rng.IntN(6) {
		case 0:
			b = append(b, byte(rng.IntN(256)))
		case 1:
			b = append(b, byte(rng.IntN(32)))
		case 2:
			b = append(b, string(rune(rng.IntN(0x110000)))...)
		case 3:
			b = append(b, []string{"\u2028", "\u2029", "<", ">", "&", `"`, `\`, "/"}[rng.IntN(8)]...)
		default:
			b = append(b, byte('a'+rng.IntN(26)))
		}
	}
	return string(b)
}

// randomValue is a value as an Unstructured holds it: JSON's integers as
// int64, other numbers as float64.
func randomValue(rng *rand.Rand, depth int) any {
	switch k := rng.IntN(9); {
	case k == 0 && depth < 4:
		m := map[string]any{}
		for range rng.IntN(6) {
			m[randomText(rng)] = randomValue(rng, depth+1)
		}
		return m
	case k == 1 && depth < 4:
		l := []any{}
		for range rng.IntN(4) {
			l = append(l, randomValue(rng, depth+1))
		}
		return l
	case k == 2:
		return rng.Int64() >> rng.IntN(64)
	case k == 3:
		if f := math.Float64frombits(rng.Uint64()); !math.IsNaN(f) && !math.IsInf(f, 0) {
			return f
		}
		return 0.5
	case k == 4:
		return []float64{1e21, 1e20, 1e-6, 1e-7, 0.1, 123456789.125, math.Copysign(0, -1)}[rng.IntN(7)]
	case k == 5:
		return nil
	case k == 6:
		return rng.IntN(2) == 0
	default:
		return randomText(rng)
	}
}
