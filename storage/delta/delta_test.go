package delta

import (
	"bytes"
	"strings"
	"sync"
	"testing"
)

// FuzzRoundTrip: whatever the data and the base, the data comes back byte
// for byte from what it was kept as against that base.
func FuzzRoundTrip(f *testing.F) {
	pod := `{"kind":"Pod","metadata":{"name":"web-1","resourceVersion":"7"},"status":{"phase":"Running"}}`
	f.Add([]byte(pod), []byte(strings.Replace(pod, "Running", "Failed", 1)))
	f.Add([]byte(pod), []byte(nil))
	f.Add([]byte(nil), []byte(pod))
	f.Add([]byte(strings.Repeat(pod, 500)), []byte(strings.Repeat(pod, 499)))
	f.Fuzz(func(t *testing.T, data, base []byte) {
		got, err := Decode(Encode(data, base), base)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, data) {
			t.Fatalf("got %q back, want %q", got, data)
		}
	})
}

// TestConcurrentUse: the pooled deflaters and inflaters serve concurrent
// callers (run under -race), each its own data.
func TestConcurrentUse(t *testing.T) {
	base := []byte(strings.Repeat(`{"a":"b"},`, 1000))
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Go(func() {
			data := append(bytes.Clone(base), byte('0'+i))
			for range 100 {
				got, err := Decode(Encode(data, base), base)
				if err != nil || !bytes.Equal(got, data) {
					t.Errorf("caller %d: got %d bytes back (%v), want %d", i, len(got), err, len(data))
					return
				}
			}
		})
	}
	wg.Wait()
}
