package sqlstore

import (
	"bytes"
	"fmt"
	"runtime"

	"github.com/klauspost/compress/zstd"
)

// Objects are stored compressed, by the store rather than the database:
// SQLite and InnoDB's default row format compress nothing, and
// PostgreSQL's TOAST only values over 2 KB, with a weaker codec. A blob
// that begins with zstd's frame magic is a zstd frame; any other is the
// JSON itself, as every version before this one wrote it (JSON objects
// begin with '{'), so rows written before stay readable as they are.
//
// Kubernetes objects repeat their own keys and values (managed fields
// name every field the object has), so even a small one compresses to
// about a third.

var zstdMagic = []byte{0x28, 0xb5, 0x2f, 0xfd}

// encodeWorkers is how many goroutines of the store's one writer encode a
// batch's objects (newRows), and encodeShare the fewest objects each gets.
var encodeWorkers = min(runtime.GOMAXPROCS(0), 4)

const encodeShare = 64

var (
	// encoder serves the writer's encodeWorkers. The fastest level: the
	// default one compresses a pod barely smaller for about twice the
	// time, and its setup for an object of a few hundred bytes costs
	// several times encoding the object's JSON (BenchmarkBytesPerObject).
	encoder = must(zstd.NewWriter(nil, zstd.WithEncoderLevel(zstd.SpeedFastest), zstd.WithEncoderConcurrency(encodeWorkers),
		zstd.WithEncoderCRC(false), zstd.WithZeroFrames(true)))
	// decoder serves concurrent reads, each with a decoder of the pool.
	decoder = must(zstd.NewReader(nil, zstd.WithDecoderConcurrency(0)))
)

func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}

// encodeBlob is the stored form of an object's JSON.
func encodeBlob(data []byte) []byte {
	return encoder.EncodeAll(data, make([]byte, 0, len(data)/2))
}

// decodeBlob is the JSON of a stored object, compressed or not.
func decodeBlob(stored []byte) ([]byte, error) {
	if !bytes.HasPrefix(stored, zstdMagic) {
		return stored, nil
	}
	data, err := decoder.DecodeAll(stored, nil)
	if err != nil {
		return nil, fmt.Errorf("decompressing a stored object: %w", err)
	}
	return data, nil
}
