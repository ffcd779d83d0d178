package delta

import (
	"bytes"
	"fmt"
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

// TestAnotherBase: data decoded against a base other than its own, or
// from bytes that are not what Encode made, is an error, not other data.
func TestAnotherBase(t *testing.T) {
	var b strings.Builder
	b.WriteString(`{"kind":"Pod","status":{"phase":"Running","conditions":[`)
	for i := range 40 {
		fmt.Fprintf(&b, `{"type":"Condition%d","status":"True","lastTransitionTime":"2026-12-04T10:%02d:00Z"},`, i, i)
	}
	b.WriteString(`{}]}}`)
	base := []byte(b.String())
	data := bytes.Replace(base, []byte("Running"), []byte("Failed"), 1)
	kept := Encode(data, base)
	other := bytes.ToUpper(base) // as long, other bytes wherever data refers
	if Encode(data, other) == nil || bytes.Equal(Encode(data, base), Encode(data, other)) {
		t.Fatal("the data does not refer to its base: the test proves nothing")
	}
	if got, err := Decode(kept, other); err == nil {
		t.Errorf("decoded against another base: %d bytes, want an error", len(got))
	}
	for _, bad := range [][]byte{nil, kept[:3], kept[:len(kept)-1], append([]byte{0, 0, 0, 0}, kept[4:]...)} {
		if got, err := Decode(bad, base); err == nil {
			t.Errorf("decoded %d bytes that Encode did not make: %d bytes, want an error", len(bad), len(got))
		}
	}
}
