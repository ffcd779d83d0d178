package watchcache

import (
	"strings"

	"github.com/RoaringBitmap/roaring/v2"
	"github.com/google/btree"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/selection"

	"github.com/panorama-io/panorama/storage"
)

// index holds a resource's cached objects in numbered slots, and the
// slots by cluster, namespace, name, label value and field value. A count or a
// selector list intersects these sets instead of reading every object's
// label and field maps, which grows with the objects cached while an
// intersection grows with the sets' sizes (BenchmarkCachedCount).
//
// It also keeps the objects in key order, so that a page of a list is a
// walk from the continue token's key rather than a sort of the selection.
//
// The owning resource's lock guards it.
type index struct {
	slots []*storage.Object // nil where free
	free  []uint32
	byKey map[storage.Key]uint32
	live  *roaring.Bitmap // the slots in use
	order *btree.BTreeG[keyed]

	clusters, namespaces, names postings
	labels, fields              map[string]*attribute
	// words are the slots by their words (storage.Object.Keywords), and
	// wordOrder the distinct words in order, so that a prefix reads the
	// words it begins and no other.
	words     postings
	wordOrder *btree.BTreeG[string]
}

// attribute is the slots of one label key or field.
type attribute struct {
	values postings
	// has holds the objects with the label, or with a value of the field.
	has *roaring.Bitmap
	// grouped holds those counted in a group of a value: for a field, the
	// objects with a value the store can keep (the store's count groups
	// by stored values only, fieldRows). It is has for a label.
	grouped *roaring.Bitmap
}

// postings maps values to their slots.
type postings map[string]posting

// posting is the slots of one value. A value held by one object (a
// StatefulSet pod's name label, say) keeps it inline: a bitmap each would
// cost a few hundred bytes per object for such labels.
type posting struct {
	one  uint32
	many *roaring.Bitmap // nil when the value is one's alone
}

// keyed is an object in the key order, with its slot, which tells
// whether a selection holds it.
type keyed struct {
	obj  *storage.Object
	slot uint32
}

func keyLess(a, b keyed) bool { return storage.CompareKeys(a.obj.Key, b.obj.Key) < 0 }

// treeDegree: nodes of up to 63 items, a few cache lines of pointers.
const treeDegree = 32

func newIndex() *index {
	return &index{
		byKey: map[storage.Key]uint32{}, live: roaring.New(), order: btree.NewG(treeDegree, keyLess),
		clusters: postings{}, namespaces: postings{}, names: postings{},
		labels: map[string]*attribute{}, fields: map[string]*attribute{},
		words: postings{}, wordOrder: btree.NewOrderedG[string](treeDegree),
	}
}

func (x *index) len() int { return len(x.byKey) }

// get returns the object of key, nil if none.
func (x *index) get(key storage.Key) *storage.Object {
	if s, ok := x.byKey[key]; ok {
		return x.slots[s]
	}
	return nil
}

// put adds o, or replaces the object of its key with it.
func (x *index) put(o *storage.Object) {
	s, ok := x.byKey[o.Key]
	if ok {
		x.unindex(x.slots[s], s)
	} else {
		if n := len(x.free); n > 0 {
			s, x.free = x.free[n-1], x.free[:n-1]
		} else {
			s = uint32(len(x.slots))
			x.slots = append(x.slots, nil)
		}
		x.byKey[o.Key] = s
		x.live.Add(s)
	}
	x.slots[s] = o
	x.order.ReplaceOrInsert(keyed{o, s})
	x.index(o, s)
}

// remove drops the object of key, if any.
func (x *index) remove(key storage.Key) {
	s, ok := x.byKey[key]
	if !ok {
		return
	}
	x.unindex(x.slots[s], s)
	x.order.Delete(keyed{x.slots[s], s})
	x.slots[s] = nil
	x.free = append(x.free, s)
	delete(x.byKey, key)
	x.live.Remove(s)
}

// objects returns the objects of the slots in sel.
func (x *index) objects(sel *roaring.Bitmap) []*storage.Object {
	out := make([]*storage.Object, 0, sel.GetCardinality())
	it := sel.Iterator()
	for it.HasNext() {
		out = append(out, x.slots[it.Next()])
	}
	return out
}

func (x *index) index(o *storage.Object, s uint32) {
	x.clusters.add(o.Cluster, s)
	x.namespaces.add(o.Namespace, s)
	x.names.add(o.Name, s)
	for k, v := range o.Labels {
		a := attributeOf(x.labels, k, false)
		a.values.add(v, s)
		a.has.Add(s)
	}
	for k, vs := range o.Fields {
		if len(vs) == 0 {
			continue
		}
		a := attributeOf(x.fields, k, true)
		for _, v := range vs { // distinct (storage.Describe)
			a.values.add(v, s)
			if storage.StorableText(v) {
				a.grouped.Add(s)
			}
		}
		a.has.Add(s)
	}
	for _, w := range o.Keywords {
		if _, ok := x.words[w]; !ok {
			x.wordOrder.ReplaceOrInsert(w)
		}
		x.words.add(w, s)
	}
}

func (x *index) unindex(o *storage.Object, s uint32) {
	x.clusters.remove(o.Cluster, s)
	x.namespaces.remove(o.Namespace, s)
	x.names.remove(o.Name, s)
	for k, v := range o.Labels {
		a := x.labels[k]
		a.values.remove(v, s)
		if a.drop(s) {
			delete(x.labels, k)
		}
	}
	for k, vs := range o.Fields {
		if len(vs) == 0 {
			continue
		}
		a := x.fields[k]
		for _, v := range vs {
			a.values.remove(v, s)
		}
		if a.drop(s) {
			delete(x.fields, k)
		}
	}
	for _, w := range o.Keywords {
		x.words.remove(w, s)
		if _, ok := x.words[w]; !ok {
			x.wordOrder.Delete(w)
		}
	}
}

// attributeOf returns the attribute of k in m, added if new; grouped is
// whether it tells the objects it groups apart (a field's).
func attributeOf(m map[string]*attribute, k string, grouped bool) *attribute {
	a := m[k]
	if a == nil {
		a = &attribute{values: postings{}, has: roaring.New()}
		if grouped {
			a.grouped = roaring.New()
		}
		m[k] = a
	}
	return a
}

// absent is the attribute of a label or field no cached object has; it
// is only read.
var absent = &attribute{values: postings{}, has: roaring.New()}

// attributeIn returns the attribute of k in m, absent if none.
func attributeIn(m map[string]*attribute, k string) *attribute {
	if a := m[k]; a != nil {
		return a
	}
	return absent
}

// drop removes slot s from a's sets, reporting whether a holds no object
// any more.
func (a *attribute) drop(s uint32) bool {
	a.has.Remove(s)
	if a.grouped != nil {
		a.grouped.Remove(s)
	}
	return a.has.IsEmpty()
}

// groupedSlots returns the slots counted in a's value groups.
func (a *attribute) groupedSlots() *roaring.Bitmap {
	if a.grouped != nil {
		return a.grouped
	}
	return a.has
}

func (p postings) add(v string, s uint32) {
	switch e, ok := p[v]; {
	case !ok:
		p[v] = posting{one: s}
	case e.many == nil:
		p[v] = posting{many: roaring.BitmapOf(e.one, s)}
	default:
		e.many.Add(s)
	}
}

func (p postings) remove(v string, s uint32) {
	e, ok := p[v]
	switch {
	case !ok:
	case e.many == nil:
		delete(p, v)
	default:
		e.many.Remove(s)
		if e.many.GetCardinality() == 1 {
			p[v] = posting{one: e.many.Minimum()}
		}
	}
}

// bitmap returns the slots of e, to read only.
func (e posting) bitmap() *roaring.Bitmap {
	if e.many == nil {
		return roaring.BitmapOf(e.one)
	}
	return e.many
}

// countIn returns how many of e's slots sel holds.
func (e posting) countIn(sel *roaring.Bitmap) int64 {
	if e.many == nil {
		if sel.Contains(e.one) {
			return 1
		}
		return 0
	}
	return int64(sel.AndCardinality(e.many))
}

// union returns the slots of the values of p that match accepts.
func (p postings) union(match func(string) bool) *roaring.Bitmap {
	var sets []*roaring.Bitmap
	for v, e := range p {
		if match(v) {
			sets = append(sets, e.bitmap())
		}
	}
	return roaring.FastOr(sets...)
}

// unionOf returns the slots of values.
func (p postings) unionOf(values ...string) *roaring.Bitmap {
	var sets []*roaring.Bitmap
	for _, v := range values {
		if e, ok := p[v]; ok {
			sets = append(sets, e.bitmap())
		}
	}
	return roaring.FastOr(sets...)
}

// selection returns the slots of the objects q selects as far as the
// index tells, and whether some of q's filters (creation times, label
// comparisons) are left for the objects to be matched against one by
// one. The owner filter is not considered: the cache serves no query
// with one.
func (x *index) selection(q *storage.ListQuery) (sel *roaring.Bitmap, residual bool) {
	var in, out []*roaring.Bitmap // sets the objects must be in, and not in
	if len(q.Clusters) > 0 {
		in = append(in, x.clusters.unionOf(q.Clusters...))
	}
	if len(q.Namespaces) > 0 {
		in = append(in, x.namespaces.unionOf(q.Namespaces...))
	}
	if len(q.Names) > 0 {
		in = append(in, x.names.unionOf(q.Names...))
	}
	if q.FuzzyName != "" {
		// Each distinct name is tested once, not each object's.
		in = append(in, x.names.union(func(name string) bool { return strings.Contains(name, q.FuzzyName) }))
	}
	for _, r := range q.Labels {
		a := attributeIn(x.labels, r.Key())
		switch r.Operator() {
		case selection.In, selection.Equals, selection.DoubleEquals:
			in = append(in, a.values.unionOf(r.ValuesUnsorted()...))
		case selection.NotIn, selection.NotEquals: // also objects without the label
			out = append(out, a.values.unionOf(r.ValuesUnsorted()...))
		case selection.Exists:
			in = append(in, a.has)
		case selection.DoesNotExist:
			out = append(out, a.has)
		default: // numeric comparisons
			residual = true
		}
	}
	for _, r := range q.Fields {
		// set is the objects with the value; = selects them, != the rest.
		var set *roaring.Bitmap
		selected := r.Operator != selection.NotEquals
		switch a := attributeIn(x.fields, r.Field); {
		case r.Field == "metadata.name":
			set = x.names.unionOf(r.Value)
		case r.Field == "metadata.namespace":
			set = x.namespaces.unionOf(r.Value)
		case r.Value == "": // the value of the objects without one
			set, selected = a.has, !selected
		default:
			set = a.values.unionOf(r.Value)
		}
		if selected {
			in = append(in, set)
		} else {
			out = append(out, set)
		}
	}
	if len(q.Images) > 0 {
		in = append(in, attributeIn(x.fields, storage.ImagesField).values.union(func(image string) bool {
			for _, sub := range q.Images {
				if strings.Contains(image, sub) {
					return true
				}
			}
			return false
		}))
	}
	if len(q.RefersTo) > 0 {
		in = append(in, x.referring(q.RefersTo))
	}
	if q.Objects != nil {
		in = append(in, x.slotsOf(q.GVR, q.Objects))
	}
	for _, k := range q.Keywords {
		if k.Prefix {
			in = append(in, x.wordsBeginning(k.Word))
		} else {
			in = append(in, x.words.unionOf(k.Word))
		}
	}
	if len(in) == 0 {
		sel = x.live.Clone()
	} else {
		sel = roaring.FastAnd(in...)
	}
	for _, set := range out {
		sel.AndNot(set)
	}
	residual = residual || q.CreatedSince != nil || q.CreatedBefore != nil
	return sel, residual
}

// referring returns the slots of the objects that refer to any of
// targets: a target in a namespace is one value, looked up; one in any
// namespace is every value that is its own less a namespace, so each
// value is looked up once, however many targets there are.
func (x *index) referring(targets []storage.Reference) *roaring.Bitmap {
	values := attributeIn(x.fields, storage.ReferencesField).values
	var exact []string
	anyNamespace := map[string]bool{}
	for _, r := range targets {
		if r.Namespace != "" {
			exact = append(exact, r.Value())
		} else {
			anyNamespace[r.Value()] = true
		}
	}
	out := values.unionOf(exact...)
	if len(anyNamespace) > 0 {
		out.Or(values.union(func(v string) bool { return anyNamespace[storage.WithoutNamespace(v)] }))
	}
	return out
}

// wordsBeginning returns the slots of the objects with a word that
// begins with prefix.
func (x *index) wordsBeginning(prefix string) *roaring.Bitmap {
	var sets []*roaring.Bitmap
	x.wordOrder.AscendGreaterOrEqual(prefix, func(w string) bool {
		if !strings.HasPrefix(w, prefix) {
			return false
		}
		sets = append(sets, x.words[w].bitmap())
		return true
	})
	return roaring.FastOr(sets...)
}

// slotsOf returns the slots of the objects of gvr named.
func (x *index) slotsOf(gvr schema.GroupVersionResource, objects []storage.ObjectName) *roaring.Bitmap {
	out := roaring.New()
	for _, o := range objects {
		if s, ok := x.byKey[storage.Key{Cluster: o.Cluster, GVR: gvr, Namespace: o.Namespace, Name: o.Name}]; ok {
			out.Add(s)
		}
	}
	return out
}
