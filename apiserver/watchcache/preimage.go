package watchcache

import (
	"bytes"
	"fmt"
	"io"
	"maps"
	"slices"
	"sync"

	"github.com/klauspost/compress/flate"

	"github.com/panorama-io/panorama/storage"
)

// preImage is an object as it was before a change, kept for what the ring
// needs of it: watches with a selector test its description (an object
// leaving the selection is sent as DELETED), and a page at a revision
// before the change serves its JSON, which nothing else reads.
//
// Kept whole, the pre-images of a ring of changes cost as much again as
// the objects themselves. Most changes rewrite a few fields of an object
// (a pod's status), so the JSON is kept deflated with the JSON of the
// object that replaced it, which the change holds anyway, as the preset
// dictionary: a pod's pre-image takes about a hundred bytes rather than
// five thousand. Deflate reaches back 32 KB, so the JSON of a bigger
// object compresses about as plain deflate does, to a third or so.
type preImage struct {
	// described is the object without its JSON. Whatever of its
	// description is the same as the next object's is the next object's
	// in memory too.
	described storage.Object
	deflated  []byte
}

// newPreImage keeps was, the object that next replaced (or deleted).
func newPreImage(was, next *storage.Object) *preImage {
	p := &preImage{described: *was, deflated: deflate(was.Data, next.Data)}
	p.described.Data = nil
	shareDescription(&p.described, next)
	return p
}

// object returns the pre-image with its JSON, from that of next, the
// object it was kept with.
func (p *preImage) object(next *storage.Object) (*storage.Object, error) {
	data, err := inflate(p.deflated, next.Data)
	if err != nil {
		return nil, fmt.Errorf("inflating the pre-image of %s/%s at revision %d: %w", p.described.Namespace, p.described.Name, p.described.Revision, err)
	}
	o := p.described
	o.Data = data
	return &o, nil
}

// shareDescription points o's strings, labels and fields at next's where
// they are equal, so that a pre-image holds only what the change changed.
func shareDescription(o *storage.Object, next *storage.Object) {
	if o.Key == next.Key {
		o.Key = next.Key
	}
	share(&o.Kind, next.Kind)
	share(&o.UID, next.UID)
	share(&o.OwnerUID, next.OwnerUID)
	if maps.Equal(o.Labels, next.Labels) {
		o.Labels = next.Labels
	}
	if maps.EqualFunc(o.Fields, next.Fields, slices.Equal) {
		o.Fields = next.Fields
	}
}

func share(s *string, next string) {
	if *s == next {
		*s = next
	}
}

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

// deflate compresses data with dict as the preset dictionary. The
// fastest level: a pod's pre-image is deflated in about 20 µs, a fraction
// of decoding its change, and slower levels save a few bytes of a hundred.
func deflate(data, dict []byte) []byte {
	d := deflaters.Get().(*deflater)
	defer deflaters.Put(d)
	d.out.Reset()
	d.w.ResetDict(&d.out, dict)
	// Writing to a bytes.Buffer does not fail.
	_, _ = d.w.Write(data)
	_ = d.w.Close()
	return bytes.Clone(d.out.Bytes())
}

// inflate decompresses what deflate made of data with dict.
func inflate(deflated, dict []byte) ([]byte, error) {
	r := inflaters.Get().(io.ReadCloser)
	defer inflaters.Put(r)
	if err := r.(flate.Resetter).Reset(bytes.NewReader(deflated), dict); err != nil {
		return nil, err
	}
	// Most pre-images are about as long as the JSON that replaced them.
	out := bytes.NewBuffer(make([]byte, 0, len(dict)+bytes.MinRead))
	if _, err := out.ReadFrom(r); err != nil {
		return nil, err
	}
	return out.Bytes(), nil
}
