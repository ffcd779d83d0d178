package sqlstore

import (
	"slices"
	"sync"

	"github.com/segmentio/encoding/json"

	"github.com/panorama-io/panorama/storage/delta"
)

// appendObjectJSON appends the JSON of an object as stored: the bytes
// Unstructured.MarshalJSON writes (encoding/json's: keys sorted, <, > and
// & escaped, invalid UTF-8 replaced, and a newline), written by
// segmentio's encoder, which makes the same bytes in under half the time
// (BenchmarkObjectJSON). encoding/json was a large share of the CPU of a
// sync's writes (pprof of BenchmarkInitialSync into PostgreSQL), spent
// while the write holds the revision counter.
func appendObjectJSON(b []byte, obj map[string]any) ([]byte, error) {
	b, err := json.Append(b, obj, json.EscapeHTML|json.SortMapKeys)
	if err != nil {
		return nil, err
	}
	return append(b, '\n'), nil
}

// objectJSON is the JSON of an object as stored.
func objectJSON(obj map[string]any) ([]byte, error) { return appendObjectJSON(nil, obj) }

// jsonBuffers hold the JSON of objects on their way to being compressed;
// a buffer that grew past maxPooledJSON (an object of megabytes) is left
// to the collector rather than kept.
var jsonBuffers = sync.Pool{New: func() any { return new([]byte) }}

const maxPooledJSON = 1 << 20

// storedObject is the stored form of an object: its JSON, compressed;
// with preImage, the JSON of the object it replaces, also that kept
// against it (log.go). The JSON is written to a buffer used again: a new
// one for each was a tenth of what a sync's writes allocate.
func storedObject(obj map[string]any, preImage []byte) (blob, keptPreImage []byte, err error) {
	buf := jsonBuffers.Get().(*[]byte)
	defer func() {
		if cap(*buf) <= maxPooledJSON {
			jsonBuffers.Put(buf)
		}
	}()
	data, err := appendObjectJSON((*buf)[:0], obj)
	if err != nil {
		return nil, nil, err
	}
	*buf = data
	if preImage != nil {
		keptPreImage = append(slices.Clip(keptAgainstNext), delta.Encode(preImage, data)...)
	}
	return encodeBlob(data), keptPreImage, nil
}
