package storage

import (
	"fmt"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/selection"
)

// Limits on query input, so that no request can build an unbounded statement.
const (
	MaxListValues = 1000
	// MaxQueryValues bounds the values of a query's lists and selectors
	// together, a selector's requirement counting one beside its values:
	// each is a parameter of the statements that serve the query, and
	// SQLite binds at most 32,766 parameters a statement, PostgreSQL 65,535.
	MaxQueryValues    = 5000
	MaxOwnerSeniority = 10
	// MaxLimit caps a page; a larger limit gets pages of this size, which
	// the API allows (a server may return fewer items, with a continue token).
	MaxLimit = 10000
)

// OrderField is a column a list can be ordered by.
type OrderField string

// Order fields.
const (
	OrderCluster   OrderField = "cluster"
	OrderNamespace OrderField = "namespace"
	OrderName      OrderField = "name"
	OrderCreated   OrderField = "created_at"
)

// keyOrder makes any ordering total: an object is unique by these.
var keyOrder = []OrderField{OrderCluster, OrderNamespace, OrderName}

// ParseOrderField accepts the names users write.
func ParseOrderField(s string) (OrderField, bool) {
	switch s {
	case "cluster":
		return OrderCluster, true
	case "namespace":
		return OrderNamespace, true
	case "name":
		return OrderName, true
	case "created_at", "creationTimestamp", "metadata.creationTimestamp":
		return OrderCreated, true
	}
	return "", false
}

// OrderBy is one ordering term.
type OrderBy struct {
	Field OrderField
	Desc  bool
}

func (o OrderBy) String() string {
	if o.Desc {
		return string(o.Field) + " desc"
	}
	return string(o.Field)
}

// ListQuery selects objects of one resource. Zero fields select everything.
type ListQuery struct {
	GVR        schema.GroupVersionResource
	Clusters   []string
	Namespaces []string
	Names      []string
	// FuzzyName selects names containing it (case-sensitive).
	FuzzyName string
	Labels    labels.Requirements
	// Fields are field selector requirements: on a multi-valued field, =
	// selects objects with the value among theirs, != those without it.
	Fields fields.Requirements
	// Images selects objects with an image (ImagesField) containing any of
	// them (case-sensitive).
	Images []string
	// RefersTo selects objects with a reference (ReferencesOf) to any of
	// them; a target without a namespace is its name in any namespace, or
	// cluster-scoped.
	RefersTo []Reference
	// Objects selects exactly these objects, when not nil: none when empty.
	Objects []ObjectName
	// Keywords selects objects that have every one of them (Keyword.Matches).
	Keywords []Keyword
	// OwnerUID or OwnerName (optionally with OwnerGroupResource) select objects
	// owned by that object; OwnerSeniority 1 selects the owner's grandchildren
	// instead of its children, and so on.
	OwnerUID           string
	OwnerName          string
	OwnerGroupResource *schema.GroupResource
	OwnerSeniority     int
	// CreatedSince and CreatedBefore bound creationTimestamp: since <= t < before.
	CreatedSince  *time.Time
	CreatedBefore *time.Time
	OrderBy       []OrderBy
	// Limit bounds a page; 0 means all.
	Limit int64
	// Continue resumes a previous page; it fixes the revision.
	Continue string
	// Revision lists the state at that revision; 0 means the latest.
	Revision int64
	// History lets Revision (or the continue token's) be older than the
	// compacted revision, as far back as the history reaches.
	History            bool
	WithRemainingCount bool
}

// ObjectName names one object of a query's resource.
type ObjectName struct {
	Cluster, Namespace, Name string
}

// ListResult is one page.
type ListResult struct {
	Objects []Object
	// Revision the page shows the state at.
	Revision int64
	// Continue is set when more objects follow.
	Continue       string
	RemainingCount *int64
}

// StorableText reports whether s can be a text value in every database:
// valid UTF-8 without NUL.
func StorableText(s string) bool {
	return utf8.ValidString(s) && !strings.ContainsRune(s, 0)
}

// Validate checks the query before any of it reaches a database.
func (q *ListQuery) Validate() error {
	if q.GVR.Resource == "" || q.GVR.Version == "" {
		return Invalid("resource", "a version and resource are required")
	}
	// No database stores NUL or invalid UTF-8 in text, and PostgreSQL
	// refuses either as a parameter of a text comparison.
	texts := append(append(append([]string{q.FuzzyName, q.OwnerUID, q.OwnerName}, q.Clusters...), q.Namespaces...), q.Names...)
	for _, r := range q.Fields {
		texts = append(texts, r.Field, r.Value)
	}
	texts = append(texts, q.Images...)
	for _, r := range q.RefersTo {
		texts = append(texts, r.Value())
	}
	for _, o := range q.Objects {
		texts = append(texts, o.Cluster, o.Namespace, o.Name)
	}
	for _, k := range q.Keywords {
		texts = append(texts, k.Word)
	}
	for _, r := range q.Labels {
		texts = append(append(texts, r.Key()), r.Values().UnsortedList()...)
	}
	if q.OwnerGroupResource != nil {
		texts = append(texts, q.OwnerGroupResource.Group, q.OwnerGroupResource.Resource)
	}
	if slices.ContainsFunc(texts, func(s string) bool { return !StorableText(s) }) {
		return Invalid("query", "values must be UTF-8 without NUL characters")
	}
	if slices.Contains(q.Images, "") {
		return Invalid("images", "values must not be empty")
	}
	for name, vs := range map[string][]string{"clusters": q.Clusters, "namespaces": q.Namespaces, "names": q.Names, "images": q.Images} {
		if len(vs) > MaxListValues {
			return Invalid(name, "at most %d values", MaxListValues)
		}
	}
	if len(q.RefersTo) > MaxListValues {
		return Invalid("refersTo", "at most %d values", MaxListValues)
	}
	for _, r := range q.RefersTo {
		if !r.valid() {
			return Invalid("refersTo", "%q: a kind and name are required, without '/'", r.Value())
		}
	}
	if len(q.Keywords) > MaxQueryKeywords {
		return Invalid("q", "%d words, more than the %d allowed", len(q.Keywords), MaxQueryKeywords)
	}
	for _, k := range q.Keywords {
		if !k.valid() {
			return Invalid("q", "%q: a word is lower-case ASCII letters and digits, at most %d", k.Word, MaxKeywordLength)
		}
	}
	if n := q.values(); n > MaxQueryValues {
		return Invalid("query", "%d values and requirements, more than the %d allowed together", n, MaxQueryValues)
	}
	for _, r := range q.Labels {
		switch r.Operator() {
		case selection.Equals, selection.DoubleEquals, selection.NotEquals, selection.In, selection.NotIn,
			selection.Exists, selection.DoesNotExist:
		default:
			return Invalid("labelSelector", "operator %q is not supported", r.Operator())
		}
		if r.Values().Len() > MaxListValues {
			return Invalid("labelSelector", "at most %d values", MaxListValues)
		}
	}
	for _, r := range q.Fields {
		switch r.Operator {
		case selection.Equals, selection.DoubleEquals, selection.NotEquals:
		default:
			return Invalid("fieldSelector", "operator %q is not supported", r.Operator)
		}
	}
	if q.OwnerSeniority < 0 || q.OwnerSeniority > MaxOwnerSeniority {
		return Invalid("ownerSeniority", "must be between 0 and %d", MaxOwnerSeniority)
	}
	if q.OwnerUID != "" && q.OwnerName != "" {
		return Invalid("ownerUID", "ownerUID and ownerName are exclusive")
	}
	if q.OwnerGroupResource != nil && q.OwnerName == "" {
		return Invalid("ownerGR", "ownerGR needs ownerName")
	}
	if q.Limit < 0 {
		return Invalid("limit", "must not be negative")
	}
	if q.Revision < 0 {
		return Invalid("resourceVersion", "must not be negative")
	}
	seen := map[OrderField]bool{}
	for _, o := range q.OrderBy {
		if _, ok := ParseOrderField(string(o.Field)); !ok {
			return Invalid("orderby", "unknown field %q", o.Field)
		}
		if seen[o.Field] {
			return Invalid("orderby", "field %q given twice", o.Field)
		}
		seen[o.Field] = true
	}
	return nil
}

// values counts what MaxQueryValues bounds.
func (q *ListQuery) values() int {
	n := len(q.Clusters) + len(q.Namespaces) + len(q.Names) + len(q.Images) + len(q.Fields) + len(q.RefersTo) + 3*len(q.Objects) + len(q.Keywords)
	for _, r := range q.Labels {
		n += 1 + r.Values().Len()
	}
	return n
}

// ValidateFields checks that fs indexes every field q selects on; Validate
// checks the rest.
func (q *ListQuery) ValidateFields(fs *FieldSet) error {
	for _, r := range q.Fields {
		if !fs.Selectable(r.Field) {
			return Invalid("fieldSelector", "field label not supported: %s (indexed: metadata.name, metadata.namespace, %s)",
				r.Field, strings.Join(fs.Names(), ", "))
		}
	}
	return nil
}

// Order is the full ordering of the query: its terms, then the key fields it
// lacks. The key fields run in the direction of the last term, so that an
// ordering in one direction is one index scan, forwards or backwards.
func (q *ListQuery) Order() []OrderBy {
	out := slices.Clone(q.OrderBy)
	desc := len(out) > 0 && out[len(out)-1].Desc
	for _, f := range keyOrder {
		if !slices.ContainsFunc(out, func(o OrderBy) bool { return o.Field == f }) {
			out = append(out, OrderBy{Field: f, Desc: desc})
		}
	}
	return out
}

// InKeyOrder reports whether q lists in key order: by cluster, namespace
// and name, ascending, which is the order without orderby.
func (q *ListQuery) InKeyOrder() bool {
	order := q.Order()
	for i, o := range order {
		if o.Desc || i >= len(keyOrder) || o.Field != keyOrder[i] {
			return false
		}
	}
	return true
}

// CompareKeys orders keys as InKeyOrder lists them: by cluster,
// namespace, name.
func CompareKeys(a, b Key) int {
	if c := strings.Compare(a.Cluster, b.Cluster); c != 0 {
		return c
	}
	if c := strings.Compare(a.Namespace, b.Namespace); c != 0 {
		return c
	}
	return strings.Compare(a.Name, b.Name)
}

func orderString(order []OrderBy) string {
	parts := make([]string, len(order))
	for i, o := range order {
		parts[i] = o.String()
	}
	return strings.Join(parts, ",")
}

// OwnerSet is the resolved set of owner UIDs an owner filter selects.
type OwnerSet map[string]struct{}

// Matches reports whether o passes every filter of q except the owner one,
// which needs owners (nil when q has no owner filter). It is the reference
// the SQL compiler is tested against, and filters the objects that a
// snapshot list takes from the log.
func (q *ListQuery) Matches(o *Object, owners OwnerSet) bool {
	if o.GVR != q.GVR {
		return false
	}
	if len(q.Clusters) > 0 && !slices.Contains(q.Clusters, o.Cluster) {
		return false
	}
	if len(q.Namespaces) > 0 && !slices.Contains(q.Namespaces, o.Namespace) {
		return false
	}
	if len(q.Names) > 0 && !slices.Contains(q.Names, o.Name) {
		return false
	}
	if q.FuzzyName != "" && !strings.Contains(o.Name, q.FuzzyName) {
		return false
	}
	if q.CreatedSince != nil && o.CreatedAt < q.CreatedSince.Unix() {
		return false
	}
	if q.CreatedBefore != nil && o.CreatedAt >= q.CreatedBefore.Unix() {
		return false
	}
	for _, r := range q.Labels {
		if !r.Matches(labels.Set(o.Labels)) {
			return false
		}
	}
	for _, r := range q.Fields {
		if o.HasFieldValue(r.Field, r.Value) == (r.Operator == selection.NotEquals) {
			return false
		}
	}
	if len(q.Images) > 0 && !o.HasFieldContaining(ImagesField, q.Images) {
		return false
	}
	if len(q.RefersTo) > 0 && !slices.ContainsFunc(o.Fields[ReferencesField], func(v string) bool {
		return slices.ContainsFunc(q.RefersTo, func(r Reference) bool { return r.MatchesValue(v) })
	}) {
		return false
	}
	if q.Objects != nil && !slices.Contains(q.Objects, ObjectName{o.Cluster, o.Namespace, o.Name}) {
		return false
	}
	for _, k := range q.Keywords {
		if !k.Matches(o.Keywords) {
			return false
		}
	}
	if owners != nil {
		if _, ok := owners[o.OwnerUID]; !ok || o.OwnerUID == "" {
			return false
		}
	}
	return true
}

// HasOwnerFilter reports whether q filters by owner.
func (q *ListQuery) HasOwnerFilter() bool { return q.OwnerUID != "" || q.OwnerName != "" }

// Compare orders a before b under order: negative, zero or positive.
func Compare(order []OrderBy, a, b *Object) int {
	for _, o := range order {
		c := compareField(o.Field, a, b)
		if o.Desc {
			c = -c
		}
		if c != 0 {
			return c
		}
	}
	return 0
}

func compareField(f OrderField, a, b *Object) int {
	switch f {
	case OrderCluster:
		return strings.Compare(a.Cluster, b.Cluster)
	case OrderNamespace:
		return strings.Compare(a.Namespace, b.Namespace)
	case OrderName:
		return strings.Compare(a.Name, b.Name)
	case OrderCreated:
		return cmpInt(a.CreatedAt, b.CreatedAt)
	}
	panic(fmt.Sprintf("unknown order field %q", f))
}

func cmpInt(a, b int64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}
