// Package delta keeps one version of a JSON document as what it adds to
// another: deflated with the other as the preset dictionary. Most changes
// of a Kubernetes object rewrite a few of its fields (a pod's status), so
// a version kept against the one that replaced it takes a small fraction
// of the whole object (BenchmarkHistoryBytes), and comes back byte for
// byte. Deflate's window is 32 KB, so a bigger document compresses about
// as plain deflate does.
package delta

import (
	"bytes"
	"encoding/binary"
	"errors"
	"hash/crc32"
	"io"
	"sync"

	"github.com/klauspost/compress/flate"
)

// Deflaters and inflaters are reused: a deflater sets up tables of a few
// hundred KB, an inflater its window.
var (
	deflaters = sync.Pool{New: func() any {
		w, err := flate.NewWriter(nil, flate.BestSpeed)
		if err != nil {
			panic(err) // BestSpeed is a valid level
		}
		return &deflater{w: w}
	}}
	inflaters = sync.Pool{New: func() any { return flate.NewReader(bytes.NewReader(nil)) }}
)

// deflater is a writer and the buffer it writes to: what is kept is a
// copy of exactly the deflated bytes.
type deflater struct {
	w   *flate.Writer
	out bytes.Buffer
}

// Deflate carries no checksum, and data decoded against a base other than
// the one it was encoded against comes out as other bytes of the same
// length; so what Encode keeps begins with the CRC-32C of the data, which
// Decode checks.
var (
	castagnoli = crc32.MakeTable(crc32.Castagnoli)
	errBase    = errors.New("decoded against another base than it was encoded against")
)

// Encode returns data kept against base, at the fastest level: slower
// levels save little of what is left (BenchmarkHistoryBytes).
func Encode(data, base []byte) []byte {
	d := deflaters.Get().(*deflater)
	defer deflaters.Put(d)
	d.out.Reset()
	d.out.Write(binary.BigEndian.AppendUint32(nil, crc32.Checksum(data, castagnoli)))
	d.w.ResetDict(&d.out, base)
	// Writing to a bytes.Buffer does not fail.
	_, _ = d.w.Write(data)
	_ = d.w.Close()
	return bytes.Clone(d.out.Bytes())
}

// Decode returns the data that Encode kept as encoded against base, or an
// error if encoded is not that, or base is not the one it was kept against.
func Decode(encoded, base []byte) ([]byte, error) {
	if len(encoded) < crc32.Size {
		return nil, errors.New("too short to be kept against a base")
	}
	sum := binary.BigEndian.Uint32(encoded)
	r := inflaters.Get().(io.ReadCloser)
	defer inflaters.Put(r)
	if err := r.(flate.Resetter).Reset(bytes.NewReader(encoded[crc32.Size:]), base); err != nil {
		return nil, err
	}
	// Most versions are about as long as the one that replaced them.
	out := bytes.NewBuffer(make([]byte, 0, len(base)+bytes.MinRead))
	if _, err := out.ReadFrom(r); err != nil {
		return nil, err
	}
	if crc32.Checksum(out.Bytes(), castagnoli) != sum {
		return nil, errBase
	}
	return out.Bytes(), nil
}
