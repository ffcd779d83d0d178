package storage

import (
	"cmp"
	"maps"
	"reflect"
	"slices"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation"
)

// GroupKind is what a count groups objects by.
type GroupKind string

// Group kinds.
const (
	GroupCluster   GroupKind = "cluster"
	GroupNamespace GroupKind = "namespace"
	// GroupLabel groups by the value of the label Key.
	GroupLabel GroupKind = "label"
	// GroupField groups by the value of the indexed field Key; an object
	// with several values of a field counts once in the group of each.
	GroupField GroupKind = "field"
)

// Limits of a count.
const (
	// MaxGroupBy bounds the terms of one count, hence its joins.
	MaxGroupBy = 4
	// DefaultCountLimit is how many groups a count returns unless told.
	DefaultCountLimit = 1000
)

// GroupBy is one term of a count's grouping.
type GroupBy struct {
	Kind GroupKind
	// Key is the label key or field path of GroupLabel and GroupField.
	Key string
}

// ParseGroupBy reads "cluster", "namespace", "label:<key>" or
// "field:<path>". A "." may stand for the ":" ("label.app",
// "field.status.phase"), since label values, which a search parameter
// given as a label is, cannot hold a ":".
func ParseGroupBy(s string) (GroupBy, error) {
	switch s {
	case string(GroupCluster), string(GroupNamespace):
		return GroupBy{Kind: GroupKind(s)}, nil
	}
	i := strings.IndexAny(s, ":.")
	if i < 0 {
		return GroupBy{}, Invalid("groupBy", "%q: want cluster, namespace, label:<key> or field:<path>", s)
	}
	g := GroupBy{Kind: GroupKind(s[:i]), Key: s[i+1:]}
	if g.Kind != GroupLabel && g.Kind != GroupField {
		return GroupBy{}, Invalid("groupBy", "%q: want cluster, namespace, label:<key> or field:<path>", s)
	}
	return g, g.validate()
}

func (g GroupBy) String() string {
	if g.Key == "" {
		return string(g.Kind)
	}
	return string(g.Kind) + ":" + g.Key
}

func (g GroupBy) validate() error {
	switch g.Kind {
	case GroupCluster, GroupNamespace:
		if g.Key != "" {
			return Invalid("groupBy", "%s takes no key", g.Kind)
		}
	case GroupLabel:
		if errs := validation.IsQualifiedName(g.Key); len(errs) > 0 {
			return Invalid("groupBy", "label key %q: %s", g.Key, strings.Join(errs, "; "))
		}
	case GroupField:
		// metadata.name and metadata.namespace are selectable but are no
		// attribute: a group per name counts nothing, and namespace is a
		// kind of its own. Whether the field is indexed is for
		// ValidateFields, which knows the store's fields.
		if g.Key == "" || strings.HasPrefix(g.Key, "metadata.") {
			return Invalid("groupBy", "field %q is not an indexed field", g.Key)
		}
	default:
		return Invalid("groupBy", "unknown kind %q", g.Kind)
	}
	return nil
}

// perObjectKeys are labels and fields whose values each name about one
// object: a pod's address and its name in a StatefulSet, a Service's
// cluster IP, the uids the built-in controllers label a Job's pods with
// (a CronJob's Job has about one), an Event's object's uid and
// resourceVersion. A count summary cell per value would be a row per
// object (BenchmarkBytesPerObject), each an upsert of its write, and would
// spare a count by one little: it has about as many groups as there are
// objects. So a store keeps none of their cells (Summarized). A revision's hash (pod-template-hash) is not one:
// a revision has many pods, and counting them per revision is a
// rollout's question.
var perObjectKeys = map[GroupBy]bool{
	{Kind: GroupLabel, Key: "statefulset.kubernetes.io/pod-name"}: true,
	{Kind: GroupLabel, Key: "controller-uid"}:                     true,
	{Kind: GroupLabel, Key: "batch.kubernetes.io/controller-uid"}: true,
	{Kind: GroupField, Key: "status.podIP"}:                       true,
	{Kind: GroupField, Key: "spec.clusterIP"}:                     true,
	{Kind: GroupField, Key: "involvedObject.uid"}:                 true,
	{Kind: GroupField, Key: "involvedObject.resourceVersion"}:     true,
	{Kind: GroupField, Key: "regarding.uid"}:                      true,
	{Kind: GroupField, Key: "regarding.resourceVersion"}:          true,
	// An object's references name a few objects each, like its uid.
	{Kind: GroupField, Key: ReferencesField}: true,
}

// Summarized reports whether a store keeps counts per value of g's label
// or field (see Summarizable); counts by the others go over the objects.
func (g GroupBy) Summarized() bool { return !perObjectKeys[g] }

// PerObjectKeys are the labels and fields that are not Summarized, in
// order (labels first, then by key), so that statements naming them are
// the same text each time.
func PerObjectKeys() []GroupBy {
	return slices.SortedFunc(maps.Keys(perObjectKeys), func(a, b GroupBy) int {
		return cmp.Or(strings.Compare(string(b.Kind), string(a.Kind)), strings.Compare(a.Key, b.Key))
	})
}

// ValidateFields checks that fs indexes every field q selects on or groups
// by; Validate checks the rest.
func (q *CountQuery) ValidateFields(fs *FieldSet) error {
	for _, g := range q.GroupBy {
		if g.Kind == GroupField && !fs.Selectable(g.Key) {
			return Invalid("groupBy", "field %q is not an indexed field (indexed: %s)", g.Key, strings.Join(fs.Names(), ", "))
		}
	}
	return q.Query.ValidateFields(fs)
}

// CountQuery counts the objects Query selects, grouped by GroupBy, at the
// current revision. Query's paging and ordering do not apply: Continue
// and Revision must be unset.
type CountQuery struct {
	Query   ListQuery
	GroupBy []GroupBy
	// Limit bounds the groups returned (the largest first); 0 means
	// DefaultCountLimit, and it is at most MaxLimit.
	Limit int
	// HeldSince asks when each group's period began (CountGroup.HeldSince),
	// which a store keeps with its count summary: the query must be
	// Summarizable.
	HeldSince bool
}

// Validate checks the query before any of it reaches a database.
func (q *CountQuery) Validate() error {
	if err := q.Query.Validate(); err != nil {
		return err
	}
	if q.Query.Continue != "" || q.Query.Revision != 0 {
		return Invalid("groupBy", "counts are of the current revision, without continue or resourceVersion")
	}
	if len(q.GroupBy) == 0 || len(q.GroupBy) > MaxGroupBy {
		return Invalid("groupBy", "between 1 and %d terms", MaxGroupBy)
	}
	seen := map[GroupBy]bool{}
	for _, g := range q.GroupBy {
		if err := g.validate(); err != nil {
			return err
		}
		if seen[g] {
			return Invalid("groupBy", "%s given twice", g)
		}
		seen[g] = true
	}
	if q.Limit < 0 || q.Limit > MaxLimit {
		return Invalid("limit", "a count returns between 1 and %d groups", MaxLimit)
	}
	if why := q.unsummarized(); q.HeldSince && why != "" {
		return Invalid("withHeldSince", "periods are kept per cluster, namespace and value, which cannot answer this count: %s", why)
	}
	return nil
}

// Summarizable reports whether q selects by resource, clusters and
// namespaces alone (what authorization narrows a query to) and groups by
// at most one label or field, a Summarized one: what a store answers from
// the counts it keeps per cluster, namespace and value (sqlstore's count
// summary), in milliseconds at any size, rather than by going over the
// objects.
func (q *CountQuery) Summarizable() bool { return q.unsummarized() == "" }

// unsummarized is why q is not Summarizable, "" when it is.
func (q *CountQuery) unsummarized() string {
	const filters = "it selects by more than clusters and namespaces"
	rest := q.Query
	// What selects no objects, and what the summary's cells select by.
	rest.Limit, rest.OrderBy, rest.WithRemainingCount = 0, nil, false
	rest.GVR, rest.Clusters, rest.Namespaces = schema.GroupVersionResource{}, nil, nil
	// Any other filter, one added later too, is for the objects; an empty
	// list (as a request without a field selector parses to) is none, but
	// for Objects, where it selects no object.
	if rest.Objects != nil {
		return filters
	}
	v := reflect.ValueOf(rest)
	for i := range v.NumField() {
		if f := v.Field(i); !f.IsZero() && (f.Kind() != reflect.Slice || f.Len() > 0) {
			return filters
		}
	}
	attrs := 0
	for _, g := range q.GroupBy {
		if g.Kind == GroupLabel || g.Kind == GroupField {
			if !g.Summarized() {
				return g.String() + " names about one object per value, which no summary is kept of"
			}
			attrs++
		}
	}
	if attrs > 1 {
		return "it groups by more than one label or field"
	}
	return ""
}

// CountGroup is one group: its value of each GroupBy term, in order, nil
// where its objects lack the label or field; and how many objects it has.
type CountGroup struct {
	Values []*string
	Count  int64
	// HeldSince, when the query asks for it, is when the group's current
	// period began; nil for the group of objects lacking the label or
	// field, which has none.
	HeldSince *HeldSince
}

// HeldSince is the start of a group's current period: the write that
// took it from no objects to some, after which it has had some at every
// write (its objects may have been others): in one cluster, or in one
// namespace when the count selects or groups by namespace, or groups by
// no label or field. A group summed over those has the earliest of their
// periods' starts: it has had objects since then at least. The zero
// value is a period whose start the store cannot know: begun before it
// kept track of periods (operations.md, "Upgrade"), or found under way
// (Change.Listed, a reindex).
type HeldSince struct {
	Revision int64
	// Time the write was committed.
	Time time.Time
}

// Earlier is the start of two parts' periods summed: the earlier one, the
// unknown (zero) before any; nil where neither has one.
func (h *HeldSince) Earlier(o *HeldSince) *HeldSince {
	switch {
	case h == nil:
		return o
	case o == nil || h.Revision == 0:
		return h
	case o.Revision < h.Revision:
		return o
	}
	return h
}

// CountResult is a count's answer.
type CountResult struct {
	// Groups, the largest first; ties in order of their values (a missing
	// value first, then in byte order).
	Groups []CountGroup
	// Revision the objects were counted at.
	Revision int64
	// RemainingGroups is how many groups the limit left out.
	RemainingGroups int64
}

// CompareGroups orders groups as CountResult.Groups are.
func CompareGroups(a, b *CountGroup) int {
	if a.Count != b.Count {
		return cmpInt(b.Count, a.Count)
	}
	for i := range a.Values {
		x, y := a.Values[i], b.Values[i]
		switch {
		case x == nil && y == nil:
			continue
		case x == nil:
			return -1
		case y == nil:
			return 1
		}
		if c := strings.Compare(*x, *y); c != 0 {
			return c
		}
	}
	return 0
}
