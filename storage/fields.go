package storage

import (
	"maps"
	"slices"
	"strconv"
	"strings"

	"k8s.io/apimachinery/pkg/runtime/schema"
)

// Limits on indexed fields: every value is an attribute row.
const (
	// MaxFieldValueLen is the longest field value that field selectors can match.
	MaxFieldValueLen = 512
	// MaxFieldValues bounds the values one field of one object indexes.
	MaxFieldValues = 64
	// MaxFieldNameLen is the longest declared field name (the attribute key column).
	MaxFieldNameLen = 317
	// MaxFieldDeclarations bounds the declared fields.
	MaxFieldDeclarations = 100
	// MaxFieldPaths bounds the paths of one declaration.
	MaxFieldPaths = 16
	// MaxFieldsPerResource bounds the declared fields that apply to one
	// resource (one declared for every resource applies to each).
	MaxFieldsPerResource = 16
	// MaxDeclaredFieldValues bounds the values one object indexes of the
	// declared fields together, in the order of their names: each is an
	// attribute row, which every write of the object rewrites.
	MaxDeclaredFieldValues = 128
)

// Built-in multi-valued fields.
const (
	// ImagesField holds the container images of a pod or of a pod
	// template (workloads, cronjobs), init and ephemeral containers
	// included: what the images search parameter matches.
	ImagesField = "images"
	// OwnerKindField holds the kinds of an object's owners.
	OwnerKindField = "ownerKind"
)

// FieldDeclaration declares a selectable field: its values are those found
// at any of its paths, in the objects of its resources (all when none).
type FieldDeclaration struct {
	Name  string   `json:"name"`
	Paths []string `json:"paths"`
	// Resources are "resource.group" ("pods", "deployments.apps").
	Resources []string `json:"resources,omitempty"`
}

// FieldPath is a parsed path: dotted names, each optionally followed by
// [*] to take every element of an array, e.g. spec.containers[*].image.
type FieldPath []pathStep

type pathStep struct {
	name string
	each bool
}

// ParseFieldPath parses a path, with an optional leading "." and braces as
// kubectl's JSONPath writes them ({.spec.nodeName}).
func ParseFieldPath(p string) (FieldPath, error) {
	s := p
	if inner, ok := strings.CutPrefix(s, "{"); ok {
		if s, ok = strings.CutSuffix(inner, "}"); !ok {
			return nil, Invalid("path", "%q: unbalanced braces", p)
		}
	}
	s = strings.TrimPrefix(s, ".")
	if s == "" {
		return nil, Invalid("path", "%q is empty", p)
	}
	var out FieldPath
	for _, part := range strings.Split(s, ".") {
		name, each := strings.CutSuffix(part, "[*]")
		if name == "" || strings.ContainsFunc(name, func(r rune) bool {
			return !(r == '_' || r == '-' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9')
		}) {
			return nil, Invalid("path", "%q: want dotted names, each optionally followed by [*]", p)
		}
		out = append(out, pathStep{name: name, each: each})
	}
	return out, nil
}

// String is p as ParseFieldPath parses it.
func (p FieldPath) String() string {
	var b strings.Builder
	for i, step := range p {
		if i > 0 {
			b.WriteByte('.')
		}
		b.WriteString(step.name)
		if step.each {
			b.WriteString("[*]")
		}
	}
	return b.String()
}

// values appends the scalar values found at p in obj.
func (p FieldPath) values(obj any, out []string) []string {
	if len(p) == 0 {
		if s, ok := scalar(obj); ok {
			out = append(out, s)
		}
		return out
	}
	m, ok := obj.(map[string]any)
	if !ok {
		return out
	}
	next, ok := m[p[0].name]
	if !ok {
		return out
	}
	if !p[0].each {
		return p[1:].values(next, out)
	}
	items, _ := next.([]any)
	for _, item := range items {
		out = p[1:].values(item, out)
	}
	return out
}

func scalar(v any) (string, bool) {
	switch v := v.(type) {
	case string:
		return v, true
	case bool:
		return strconv.FormatBool(v), true
	case int64:
		return strconv.FormatInt(v, 10), true
	case float64:
		return strconv.FormatFloat(v, 'f', -1, 64), true
	}
	return "", false
}

// FieldSet is the fields a store indexes: the built-in ones and those
// declared. It is immutable; Version names the declarations it holds (0:
// the built-in ones alone).
type FieldSet struct {
	Version int64
	fields  map[string]*compiledField
	names   []string // sorted: extraction order is stable
}

// compiledField is one field: the values of the rules that apply to a
// resource, or, for a built-in field no path can say, those compute
// finds in the whole object.
type compiledField struct {
	rules    []fieldRule
	compute  func(gr schema.GroupResource, obj map[string]any) []string
	declared bool // not built in: its values count against MaxDeclaredFieldValues
}

// computedFields are the built-in fields computed from whole objects:
// their values come sorted, once each and bounded.
var computedFields = map[string]func(gr schema.GroupResource, obj map[string]any) []string{
	ReferencesField: referenceValues,
}

// referenceValues are the values of ReferencesField: what ReferencesOf
// finds, as stored.
func referenceValues(gr schema.GroupResource, obj map[string]any) []string {
	refs := ReferencesOf(gr, obj)
	out := make([]string, len(refs))
	for i, r := range refs {
		out[i] = r.Value()
	}
	return out
}

type fieldRule struct {
	// resources the rule applies to; nil is every resource.
	resources map[schema.GroupResource]bool
	paths     []FieldPath
}

func (r *fieldRule) appliesTo(gr schema.GroupResource) bool {
	return r.resources == nil || r.resources[gr]
}

// BuiltinFieldsRevision changes whenever BuiltinFields do: stores then
// reindex (see Interface.DeclareFields).
const BuiltinFieldsRevision = 4

// BuiltinFields are the fields every store indexes: those kube-apiserver
// supports for its built-in kinds (any kind that has one can be selected
// on it), images and owner kinds.
var BuiltinFields = mustFieldSet(0, nil)

func builtinDeclarations() []FieldDeclaration {
	out := make([]FieldDeclaration, 0, len(IndexedFields)+2)
	for _, f := range IndexedFields {
		out = append(out, FieldDeclaration{Name: f, Paths: []string{f}})
	}
	images := []string{"spec.ephemeralContainers[*].image"} // only pods have them
	for _, template := range []string{"", "spec.template.", "spec.jobTemplate.spec.template."} {
		images = append(images, template+"spec.containers[*].image", template+"spec.initContainers[*].image")
	}
	return append(out,
		FieldDeclaration{Name: ImagesField, Paths: images},
		FieldDeclaration{Name: OwnerKindField, Paths: []string{"metadata.ownerReferences[*].kind"}},
	)
}

func mustFieldSet(version int64, declared []FieldDeclaration) *FieldSet {
	fs, err := NewFieldSet(version, declared)
	if err != nil {
		panic(err)
	}
	return fs
}

// NewFieldSet compiles the built-in fields and declared. A declared name
// may not be a built-in one, metadata.name or metadata.namespace; one name
// declared several times (for different resources, say) is one field with
// the values of each declaration that applies.
func NewFieldSet(version int64, declared []FieldDeclaration) (*FieldSet, error) {
	var limits fieldLimits
	for _, d := range declared {
		if err := limits.admit(d); err != nil {
			return nil, err
		}
	}
	fs := &FieldSet{Version: version, fields: map[string]*compiledField{}}
	for _, d := range builtinDeclarations() {
		if err := fs.add(d); err != nil {
			return nil, err
		}
	}
	for name, compute := range computedFields {
		fs.fields[name] = &compiledField{compute: compute}
	}
	builtin := maps.Clone(fs.fields)
	for _, d := range declared {
		if builtin[d.Name] != nil {
			return nil, Invalid("name", "%q is built in", d.Name)
		}
		if err := fs.add(d); err != nil {
			return nil, err
		}
		fs.fields[d.Name].declared = true
	}
	for name := range fs.fields {
		fs.names = append(fs.names, name)
	}
	slices.Sort(fs.names)
	return fs, nil
}

// AdmitFieldDeclarations returns those of decls that NewFieldSet takes
// together: in order, each one that is invalid, alone or beyond the limits
// of the ones before it, is left out, and refused says why by its index.
func AdmitFieldDeclarations(decls []FieldDeclaration) (admitted []FieldDeclaration, refused map[int]error) {
	var limits fieldLimits
	refused = map[int]error{}
	for i, d := range decls {
		if _, err := NewFieldSet(0, []FieldDeclaration{d}); err != nil {
			refused[i] = err
			continue
		}
		if err := limits.admit(d); err != nil {
			refused[i] = err
			continue
		}
		admitted = append(admitted, d)
	}
	return admitted, refused
}

// fieldLimits counts what declarations take of the limits on them: they
// bound the attribute rows an object gets, which every write of it
// rewrites.
type fieldLimits struct {
	declarations int
	// everywhere are the fields declared for every resource; some those
	// declared for some resources, by resource.
	everywhere map[string]bool
	some       map[schema.GroupResource]map[string]bool
}

// admit counts d, unless it would take a limit past its bound.
func (l *fieldLimits) admit(d FieldDeclaration) error {
	if l.declarations == MaxFieldDeclarations {
		return Invalid("fields", "field %q: at most %d declarations", d.Name, MaxFieldDeclarations)
	}
	var raised []schema.GroupResource // the resources d is a new field of
	if len(d.Resources) == 0 {
		if !l.everywhere[d.Name] && len(l.everywhere) == MaxFieldsPerResource {
			return Invalid("resources", "field %q: at most %d declared fields apply to a resource, and %d apply to every one", d.Name, MaxFieldsPerResource, MaxFieldsPerResource)
		}
		for gr, names := range l.some {
			if !names[d.Name] && !l.everywhere[d.Name] {
				raised = append(raised, gr)
			}
		}
	} else if !l.everywhere[d.Name] {
		for _, r := range d.Resources {
			if gr := schema.ParseGroupResource(r); !l.some[gr][d.Name] {
				raised = append(raised, gr)
			}
		}
	}
	for _, gr := range raised {
		if n := l.fieldsOf(gr); n == MaxFieldsPerResource {
			return Invalid("resources", "field %q: at most %d declared fields apply to a resource, and %d apply to %s", d.Name, MaxFieldsPerResource, n, gr)
		}
	}
	l.declarations++
	if len(d.Resources) == 0 {
		if l.everywhere == nil {
			l.everywhere = map[string]bool{}
		}
		l.everywhere[d.Name] = true
		return nil
	}
	for _, r := range d.Resources {
		gr := schema.ParseGroupResource(r)
		if l.some == nil {
			l.some = map[schema.GroupResource]map[string]bool{}
		}
		if l.some[gr] == nil {
			l.some[gr] = map[string]bool{}
		}
		l.some[gr][d.Name] = true
	}
	return nil
}

// fieldsOf counts the declared fields that apply to gr.
func (l *fieldLimits) fieldsOf(gr schema.GroupResource) int {
	n := len(l.everywhere)
	for name := range l.some[gr] {
		if !l.everywhere[name] {
			n++
		}
	}
	return n
}

func (fs *FieldSet) add(d FieldDeclaration) error {
	switch {
	case d.Name == "" || len(d.Name) > MaxFieldNameLen || !StorableText(d.Name):
		return Invalid("name", "%q: a field name is 1 to %d characters of UTF-8 without NUL", d.Name, MaxFieldNameLen)
	case d.Name == "metadata.name" || d.Name == "metadata.namespace":
		return Invalid("name", "%q is always selectable", d.Name)
	case len(d.Paths) == 0 || len(d.Paths) > MaxFieldPaths:
		return Invalid("paths", "field %q: 1 to %d paths", d.Name, MaxFieldPaths)
	}
	rule := fieldRule{paths: make([]FieldPath, len(d.Paths))}
	for i, p := range d.Paths {
		var err error
		if rule.paths[i], err = ParseFieldPath(p); err != nil {
			return err
		}
	}
	for _, r := range d.Resources {
		gr := schema.ParseGroupResource(r)
		if gr.Resource == "" || strings.ContainsAny(r, " /") {
			return Invalid("resources", "field %q: %q is not resource.group", d.Name, r)
		}
		if rule.resources == nil {
			rule.resources = map[schema.GroupResource]bool{}
		}
		rule.resources[gr] = true
	}
	f := fs.fields[d.Name]
	if f == nil {
		f = &compiledField{}
		fs.fields[d.Name] = f
	}
	f.rules = append(f.rules, rule)
	return nil
}

// ExtractsAlike reports whether fs and other extract the same fields from
// the objects of gr (Extract): objects of gr described with one are
// described as the other would. Fields that apply to other resources only
// do not matter.
func (fs *FieldSet) ExtractsAlike(other *FieldSet, gr schema.GroupResource) bool {
	return maps.EqualFunc(fs.appliedTo(gr), other.appliedTo(gr), func(a, b appliedField) bool {
		return a.declared == b.declared && slices.Equal(a.paths, b.paths)
	})
}

// appliedField is what Extract reads of one field in a resource's objects.
type appliedField struct {
	declared bool
	paths    []string // sorted, once each: Extract's values do not depend on their order
}

// appliedTo maps the fields that apply to gr to what Extract reads of
// each in gr's objects.
func (fs *FieldSet) appliedTo(gr schema.GroupResource) map[string]appliedField {
	out := map[string]appliedField{}
	for name, f := range fs.fields {
		var paths []string
		for _, r := range f.rules {
			if r.appliesTo(gr) {
				for _, p := range r.paths {
					paths = append(paths, p.String())
				}
			}
		}
		if len(paths) > 0 {
			slices.Sort(paths)
			out[name] = appliedField{declared: f.declared, paths: slices.Compact(paths)}
		}
	}
	return out
}

// Selectable reports whether field selectors may use field.
func (fs *FieldSet) Selectable(field string) bool {
	return field == "metadata.name" || field == "metadata.namespace" || fs.fields[field] != nil
}

// Names lists the indexed fields, sorted.
func (fs *FieldSet) Names() []string { return slices.Clone(fs.names) }

// Extract returns the values of every field obj (of resource gr) has:
// sorted, without duplicates, empty ones (which select like absent ones)
// and ones longer than MaxFieldValueLen, at most MaxFieldValues a field
// (a computed one, its own bound) and MaxDeclaredFieldValues of the
// declared ones together.
func (fs *FieldSet) Extract(gr schema.GroupResource, obj map[string]any) map[string][]string {
	var out map[string][]string
	var vs []string
	declaredLeft := MaxDeclaredFieldValues
	for _, name := range fs.names {
		if compute := fs.fields[name].compute; compute != nil {
			if values := compute(gr, obj); len(values) > 0 {
				if out == nil {
					out = map[string][]string{}
				}
				out[name] = values
			}
			continue
		}
		vs = vs[:0]
		for _, r := range fs.fields[name].rules {
			if !r.appliesTo(gr) {
				continue
			}
			for _, p := range r.paths {
				vs = p.values(obj, vs)
			}
		}
		vs = slices.DeleteFunc(vs, func(v string) bool { return v == "" || len(v) > MaxFieldValueLen })
		if len(vs) == 0 {
			continue
		}
		slices.Sort(vs)
		kept := slices.Compact(slices.Clone(vs))
		if len(kept) > MaxFieldValues {
			kept = kept[:MaxFieldValues]
		}
		if fs.fields[name].declared {
			kept = kept[:min(len(kept), declaredLeft)]
			if declaredLeft -= len(kept); len(kept) == 0 {
				continue
			}
		}
		if out == nil {
			out = map[string][]string{}
		}
		out[name] = kept
	}
	if gr == coreEvents {
		if v, ok := eventSource(obj); ok {
			if out == nil {
				out = map[string][]string{}
			}
			out[EventSourceField] = []string{v}
		}
	}
	return out
}
