package synchronizer

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"regexp"
	"slices"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/validation"

	clusterv1alpha1 "github.com/panorama-io/panorama/apis/cluster/v1alpha1"
)

// Filter narrows what a synchronizer syncs of its resource. What the
// member can filter is asked of it: the label selector and excluded
// namespaces go with every list and watch, and included namespaces are
// listed and watched each on its own, so what they keep out never leaves
// the member. Dropped fields are removed from each object before anything
// else reads it, storage included. A Filter is never changed once made; a
// nil one keeps everything.
type Filter struct {
	// namespaces, sorted, are listed and watched each on its own; none:
	// the whole resource in one list and watch.
	namespaces    []string
	fieldSelector string
	labelSelector string
	// fields and labels are the selectors parsed, which admits applies.
	fields fields.Selector
	labels labels.Selector
	// drop holds each dropped path's segments; dropped is their text.
	drop    [][]string
	dropped string
	// ignored says why a filter of the selection is not applied.
	ignored string
}

// identityPaths are what storage keys and versions an object by: never
// dropped.
var identityPaths = []string{
	"apiVersion", "kind", "metadata", "metadata.name", "metadata.namespace", "metadata.uid",
	"metadata.resourceVersion", "metadata.creationTimestamp",
}

// NewFilter is the filter of sel, nil when sel filters nothing. The host
// validates sel as it stores it (the CRD's rules); this refuses what it
// cannot apply all the same, for a Cluster stored before those rules.
func NewFilter(sel clusterv1alpha1.GroupResources) (*Filter, error) {
	f := &Filter{}
	for _, ns := range slices.Concat(sel.Namespaces, sel.ExcludeNamespaces) {
		if errs := validation.IsDNS1123Label(ns); len(errs) > 0 {
			return nil, fmt.Errorf("namespace %q: %s", ns, strings.Join(errs, "; "))
		}
	}
	switch {
	case len(sel.Namespaces) > 0 && len(sel.ExcludeNamespaces) > 0:
		return nil, fmt.Errorf("namespaces and excludeNamespaces are mutually exclusive")
	case len(sel.Namespaces) > 0:
		f.namespaces = slices.Compact(slices.Sorted(slices.Values(sel.Namespaces)))
	case len(sel.ExcludeNamespaces) > 0:
		excluded := slices.Compact(slices.Sorted(slices.Values(sel.ExcludeNamespaces)))
		selectors := make([]fields.Selector, 0, len(excluded))
		for _, ns := range excluded {
			selectors = append(selectors, fields.OneTermNotEqualSelector("metadata.namespace", ns))
		}
		f.fields = fields.AndSelectors(selectors...)
		f.fieldSelector = f.fields.String()
	}
	if sel.LabelSelector != nil {
		s, err := metav1.LabelSelectorAsSelector(sel.LabelSelector.Meta())
		if err != nil {
			return nil, fmt.Errorf("labelSelector: %w", err)
		}
		if !s.Empty() {
			f.labels, f.labelSelector = s, s.String()
		}
	}
	paths := make([]string, 0, len(sel.DropFields))
	for _, p := range sel.DropFields {
		paths = append(paths, string(p))
	}
	slices.Sort(paths)
	paths = slices.Compact(paths)
	for _, p := range paths {
		segments, err := parseFieldPath(p)
		if err != nil {
			return nil, fmt.Errorf("dropFields: %w", err)
		}
		// However written: metadata[name] is metadata.name.
		if slices.Contains(identityPaths, strings.Join(segments, ".")) {
			return nil, fmt.Errorf("dropFields: %s identifies an object: it cannot be dropped", p)
		}
		f.drop = append(f.drop, segments)
	}
	f.dropped = strings.Join(paths, ",")
	if f.String() == "" {
		return nil, nil
	}
	return f, nil
}

// For is the filter of a resource, namespaced or not: a cluster-scoped
// one has no namespaces to filter by, so it ignores f's, and says so.
func (f *Filter) For(namespaced bool) *Filter {
	if namespaced || f == nil || (len(f.namespaces) == 0 && f.fieldSelector == "") {
		return f
	}
	g := *f
	g.namespaces, g.fieldSelector, g.fields, g.ignored = nil, "", nil, "namespaces ignored: cluster-scoped"
	return &g
}

// fieldPath is the syntax of a path of dropFields, the CRD's pattern:
// field names separated by dots, where one in brackets is a key that may
// hold dots and slashes (metadata.annotations[example.com/notes]).
var (
	fieldPath        = regexp.MustCompile(`^[A-Za-z0-9_-]+(\.[A-Za-z0-9_-]+|\[[A-Za-z0-9._/-]+\])*$`)
	fieldPathSegment = regexp.MustCompile(`\[([^]]+)\]|([^.[]+)`)
)

// parseFieldPath splits a path of dropFields into its segments.
func parseFieldPath(p string) ([]string, error) {
	if !fieldPath.MatchString(p) {
		return nil, fmt.Errorf("%q: want field names separated by dots, keys in brackets (metadata.annotations[example.com/notes])", p)
	}
	var segments []string
	for _, m := range fieldPathSegment.FindAllStringSubmatch(p, -1) {
		segments = append(segments, m[1]+m[2]) // one of them is empty
	}
	return segments, nil
}

// String is the filter as the member is asked for it and as storage is
// spared: the Cluster's status shows it. "" when it filters nothing.
func (f *Filter) String() string {
	if f == nil {
		return ""
	}
	var parts []string
	if len(f.namespaces) > 0 {
		parts = append(parts, "namespaces="+strings.Join(f.namespaces, ","))
	}
	if f.fieldSelector != "" {
		parts = append(parts, "fields="+f.fieldSelector)
	}
	if f.labelSelector != "" {
		parts = append(parts, "labels="+f.labelSelector)
	}
	if f.dropped != "" {
		parts = append(parts, "dropFields="+f.dropped)
	}
	if f.ignored != "" {
		parts = append(parts, f.ignored)
	}
	return strings.Join(parts, "; ")
}

// DroppedFieldsLabel marks each object stored with fields dropped: its
// value stands for the dropped paths (droppedFieldsMark), so that a
// synchronizer can ask storage, by an indexed label, whether anything it
// holds was stored under other dropFields than its own (storedOtherwise).
const DroppedFieldsLabel = "panorama.io/dropped-fields"

// droppedFieldsMark is the value of DroppedFieldsLabel on the objects the
// filter stores, "" when it drops nothing: a digest of the dropped paths'
// text, which a label value could not always hold.
func (f *Filter) droppedFieldsMark() string {
	if f == nil || f.dropped == "" {
		return ""
	}
	sum := sha256.Sum256([]byte(f.dropped))
	return hex.EncodeToString(sum[:8])
}

// markDropped sets or removes DroppedFieldsLabel on obj, as the filter
// stores it: a member's own label of that name would mislead the next
// synchronizer.
func (f *Filter) markDropped(u *unstructured.Unstructured) {
	mark := f.droppedFieldsMark()
	labels := u.GetLabels()
	if labels[DroppedFieldsLabel] == mark {
		return
	}
	if mark == "" {
		if delete(labels, DroppedFieldsLabel); len(labels) == 0 {
			labels = nil
		}
	} else {
		if labels == nil {
			labels = map[string]string{}
		}
		labels[DroppedFieldsLabel] = mark
	}
	u.SetLabels(labels)
}

// scopes are the namespaces listed and watched each on its own, or the
// whole resource, "".
func (f *Filter) scopes() []string {
	if f == nil || len(f.namespaces) == 0 {
		return []string{metav1.NamespaceAll}
	}
	return f.namespaces
}

// keeps reports whether an object of namespace ns is in one of the
// scopes.
func (f *Filter) keeps(ns string) bool {
	return f == nil || len(f.namespaces) == 0 || slices.Contains(f.namespaces, ns)
}

// admits reports whether the filter keeps u, as the member was asked to:
// a member is not trusted to have filtered what it sent.
func (f *Filter) admits(u *unstructured.Unstructured) bool {
	if f == nil {
		return true
	}
	return f.keeps(u.GetNamespace()) &&
		(f.fields == nil || f.fields.Matches(fields.Set{"metadata.namespace": u.GetNamespace()})) &&
		(f.labels == nil || f.labels.Matches(labels.Set(u.GetLabels())))
}

// listOptions narrows opts, of a list or a watch, to what the filter
// keeps.
func (f *Filter) listOptions(opts metav1.ListOptions) metav1.ListOptions {
	if f != nil {
		opts.FieldSelector, opts.LabelSelector = f.fieldSelector, f.labelSelector
	}
	return opts
}

// dropFrom removes the dropped paths from obj.
func (f *Filter) dropFrom(obj map[string]any) {
	if f == nil {
		return
	}
	for _, path := range f.drop {
		m := obj
		for _, segment := range path[:len(path)-1] {
			if m, _ = m[segment].(map[string]any); m == nil {
				break
			}
		}
		delete(m, path[len(path)-1]) // a no-op on a nil map
	}
}
