package watchcache

import (
	"fmt"
	"maps"
	"slices"

	"github.com/panorama-io/panorama/storage"
	"github.com/panorama-io/panorama/storage/delta"
)

// preImage is an object as it was before a change, kept for what the ring
// needs of it: watches with a selector test its description (an object
// leaving the selection is sent as DELETED), and a page at a revision
// before the change serves its JSON, which nothing else reads.
//
// Kept whole, the pre-images of a ring of changes cost as much again as
// the objects themselves. So the JSON is kept against the JSON of the
// object that replaced it, which the change holds anyway (package delta):
// a pod's pre-image takes about a hundred bytes rather than five thousand.
type preImage struct {
	// described is the object without its JSON. Whatever of its
	// description is the same as the next object's is the next object's
	// in memory too.
	described storage.Object
	deflated  []byte
}

// newPreImage keeps was, the object that next replaced (or deleted).
func newPreImage(was, next *storage.Object) *preImage {
	p := &preImage{described: *was, deflated: delta.Encode(was.Data, next.Data)}
	p.described.Data = nil
	shareDescription(&p.described, next)
	return p
}

// object returns the pre-image with its JSON, from that of next, the
// object it was kept with.
func (p *preImage) object(next *storage.Object) (*storage.Object, error) {
	data, err := delta.Decode(p.deflated, next.Data)
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
