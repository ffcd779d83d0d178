package apiserver

import (
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/panorama-io/panorama/storage"
)

// The relation parameters. refersTo=T selects the objects that refer to
// T, by the references the store indexes (storage.ReferencesOf): a filter
// every reader evaluates, watches too. referredBy=X selects the objects X
// refers to: X is read first, as far as the user may read it, and the
// objects its references name become what the list selects. A Service
// refers to the pods its selector selects, which neither names: either
// direction reads the other end's objects to relate them. Past one hop,
// relating walks the references hop by hop.

// relationEnd is the object a refersTo or referredBy value names: a type
// as kubectl takes one ("secret", "deploy", "deployments.apps"), a name
// and, optionally, a namespace.
type relationEnd struct {
	param, typ, namespace, name string
	// written is the value as the user wrote it, for messages.
	written string
}

// parseRelationEnd reads "type/name" or "type/namespace/name", or, in a
// label value, which has no '/', the same with '_', which no type,
// namespace or object name has.
func parseRelationEnd(param, s string) (relationEnd, error) {
	sep := "/"
	if !strings.Contains(s, sep) {
		sep = "_"
	}
	parts := strings.Split(s, sep)
	if slices.Contains(parts, "") || len(parts) < 2 || len(parts) > 3 {
		return relationEnd{}, badf("%s %q: want type/name or type/namespace/name (in a label, type_name or type_namespace_name)", param, s)
	}
	end := relationEnd{param: param, typ: parts[0], name: parts[len(parts)-1], written: s}
	if len(parts) == 3 {
		end.namespace = parts[1]
	}
	return end, nil
}

func (e relationEnd) String() string { return e.written }

// resolvedEnd is a relation end with the kind its type names.
type resolvedEnd struct {
	relationEnd
	kind storage.ReferenceKind
}

func (e resolvedEnd) groupKind() schema.GroupKind {
	return schema.GroupKind{Group: e.kind.Group, Kind: e.kind.Kind}
}

// reference is the object e names, as references name it.
func (e resolvedEnd) reference() storage.Reference {
	return storage.Reference{Group: e.kind.Group, Kind: e.kind.Kind, Namespace: e.namespace, Name: e.name}
}

// resolveEnd finds the kind end's type names, as kubectl would: by plural,
// singular or short name, each optionally with its group. The built-in
// kinds come first, so that no member's resource takes their names.
func (h *Handler) resolveEnd(end relationEnd) (resolvedEnd, error) {
	typ := strings.ToLower(end.typ)
	for _, k := range storage.ReferenceKinds {
		if namedBy(typ, k.Group, k.Resource, k.Kind, k.ShortNames) {
			return resolvedEnd{end, k}, nil
		}
	}
	for _, r := range h.registry.Resources("") {
		if namedBy(typ, r.GVR.Group, r.GVR.Resource, r.Kind, shortNames[r.GVR.GroupResource()]) {
			return resolvedEnd{end, storage.ReferenceKind{Group: r.GVR.Group, Kind: r.Kind, Resource: r.GVR.Resource, Namespaced: r.Namespaced}}, nil
		}
	}
	return resolvedEnd{}, badf("%s %q: no kind is named %q", end.param, end, end.typ)
}

// namedBy reports whether typ, lower case, names the kind of group
// whose resource, kind and short names are given.
func namedBy(typ, group, resource, kind string, short []string) bool {
	name, suffix, grouped := strings.Cut(typ, ".")
	if grouped && suffix != group || !grouped && typ != name {
		return false
	}
	return name == resource || name == strings.ToLower(kind) || slices.Contains(short, name)
}

// maxRelated bounds the objects a relation reads or selects, and
// maxHops how far it follows references: each object selected is a
// parameter of the statements that list them (storage.MaxQueryValues),
// and a hop past the first reads every resource that could refer.
const (
	maxRelated = storage.MaxQueryValues / 4
	maxHops    = 3
)

// relate resolves the relation parameters of opts, a list or watch of
// res, into its query, after prepare has narrowed it to what the user
// may read. One hop of refersTo that names no pod for services is a
// filter of the query (RefersTo); anything else is walked here, hop by
// hop, into the objects the query selects (Objects).
func (h *Handler) relate(req *request, res storage.Resource, opts *listOptions, watch bool) error {
	q := &opts.query
	if len(opts.refersTo) == 0 && opts.referredBy == nil || selectsNothing(q) {
		return nil
	}
	if _, flat := req.view.(*flatView); flat {
		return badRequest("refersTo and referredBy are not served in the flat view: use the view of all clusters")
	}
	if err := h.resolveAsOf(req.r.Context(), opts); err != nil { // history.go
		return err
	}
	rev := q.Revision
	if q.Continue != "" {
		var err error
		if rev, _, err = storage.DecodeContinue(q.Continue, q.Order()); err != nil {
			return err
		}
	}
	r := &relating{h: h, req: req, q: q, rev: rev, hops: max(opts.hops, 1), listed: res}
	if len(opts.refersTo) > 0 {
		targets, walk, err := r.targets(opts.refersTo)
		switch {
		case err != nil:
			return err
		case !walk:
			for _, t := range targets {
				q.RefersTo = append(q.RefersTo, t.reference())
			}
		case watch:
			return badRequest("refersTo: a watch follows one hop of references, and no pod's services")
		default:
			if err := r.referrers(targets); err != nil {
				return err
			}
		}
	}
	if opts.referredBy != nil {
		if err := r.referredBy(*opts.referredBy); err != nil {
			return err
		}
	}
	// As parseListOptions does, for the watch cache, which validates
	// nothing.
	return q.Validate()
}
