package apiserver

import (
	"fmt"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	metainternalversion "k8s.io/apimachinery/pkg/apis/meta/internalversion"
	metainternalscheme "k8s.io/apimachinery/pkg/apis/meta/internalversion/scheme"
	metainternalvalidation "k8s.io/apimachinery/pkg/apis/meta/internalversion/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/selection"

	searchv1alpha1 "github.com/panorama-io/panorama/apis/search/v1alpha1"
	"github.com/panorama-io/panorama/storage"
)

// SearchLabelPrefix marks label-selector requirements that are search
// parameters, so that plain `kubectl get -l` can carry them.
const SearchLabelPrefix = searchv1alpha1.GroupName + "/"

// matchNothing is a cluster name no object has (storage refuses empty
// ones): the selection when a path and a parameter disagree.
const matchNothing = ""

// listOptions are the parameters of a list or watch, parsed.
type listOptions struct {
	query          storage.ListQuery
	opts           metainternalversion.ListOptions
	onlyMetadata   bool
	version        readVersion
	allowBookmarks bool
	timeout        time.Duration
	// groupBy, when set, makes a list answer counts (counts.go);
	// withHeldSince adds when each group's period began.
	groupBy       []storage.GroupBy
	withHeldSince bool
	// asOf, when set, lists the state at a past revision or time, from
	// the history (history.go).
	asOf *asOf
	// refersTo and referredBy relate the list to other objects
	// (relations.go).
	refersTo   []relationEnd
	referredBy *relationEnd
	hops       int
}

type badRequest string

func (e badRequest) Error() string { return string(e) }

func badf(format string, args ...any) error { return badRequest(fmt.Sprintf(format, args...)) }

// parseListOptions validates the query like kube-apiserver (ListOptions
// validation) and adds the search parameters, from the URL or from
// search.panorama.io/ label requirements.
func parseListOptions(values url.Values, gvr schema.GroupVersionResource, cluster, namespace string, watch bool) (*listOptions, error) {
	r := &listOptions{query: storage.ListQuery{GVR: gvr}}
	if err := metainternalscheme.ParameterCodec.DecodeParameters(values, metav1.SchemeGroupVersion, &r.opts); err != nil {
		return nil, badRequest(err.Error())
	}
	if watch {
		r.opts.Watch = true
	}
	if errs := metainternalvalidation.ValidateListOptions(&r.opts, true); len(errs) > 0 {
		return nil, badRequest(errs.ToAggregate().Error())
	}

	search := url.Values{}
	for k, vs := range values {
		if isSearchParam(k) {
			search[k] = vs
		}
	}
	if sel := r.opts.LabelSelector; sel != nil {
		reqs, _ := sel.Requirements()
		var kept labels.Requirements
		for _, req := range reqs {
			key, ok := strings.CutPrefix(req.Key(), SearchLabelPrefix)
			if !ok {
				kept = append(kept, req)
				continue
			}
			p := searchParamNamed(key)
			if p == nil {
				return nil, badf("unknown search label %q; known: %s", req.Key(), strings.Join(searchParamNames(), ", "))
			}
			switch req.Operator() {
			case selection.In:
				if p.allOf && req.Values().Len() > 1 {
					return nil, badf("search label %q: an object must have every value, so write one requirement each, not in", req.Key())
				}
			case selection.Equals, selection.DoubleEquals:
			default:
				return nil, badf("search label %q takes =, == or in", req.Key())
			}
			search[key] = append(search[key], req.Values().List()...)
		}
		r.query.Labels = kept
	}
	if sel := r.opts.FieldSelector; sel != nil {
		r.query.Fields = sel.Requirements()
	}
	if err := r.applySearch(search); err != nil {
		return nil, err
	}
	if cluster != "" {
		if len(r.query.Clusters) > 0 && !slices.Contains(r.query.Clusters, cluster) {
			r.query.Clusters = []string{matchNothing} // the path and the parameter disagree
		} else {
			r.query.Clusters = []string{cluster}
		}
	}
	if namespace != "" {
		if len(r.query.Namespaces) > 0 && !slices.Contains(r.query.Namespaces, namespace) {
			r.query.Clusters = []string{matchNothing}
		} else {
			r.query.Namespaces = []string{namespace}
		}
	}

	r.query.Limit = r.opts.Limit
	r.query.Continue = r.opts.Continue
	var err error
	if r.version, err = parseReadVersion(&r.opts); err != nil {
		return nil, err
	}
	r.query.Revision = r.version.storeRevision()
	if watch {
		r.allowBookmarks = r.opts.AllowWatchBookmarks
		if r.opts.TimeoutSeconds != nil {
			r.timeout = time.Duration(*r.opts.TimeoutSeconds) * time.Second
		}
	}
	if err := refuseUnaccepted(search, r.verb(watch)); err != nil {
		return nil, err
	}
	if r.asOf != nil {
		if r.opts.ResourceVersion != "" {
			return nil, badRequest("asOf and resourceVersion are exclusive: asOf takes a revision too")
		}
		r.query.History, r.query.Revision = true, r.asOf.rev
	}
	// The watch cache serves queries that never reach the store, which
	// would have refused them: refuse them here, for every source.
	if err := r.query.Validate(); err != nil {
		return nil, err
	}
	return r, nil
}

// readVerb is what a list request does with its query.
type readVerb int

const (
	readList readVerb = iota
	readWatch
	readCount // a list with groupBy (counts.go)
)

// verb is what the list or watch parsed into r does.
func (r *listOptions) verb(watch bool) readVerb {
	switch {
	case watch:
		return readWatch
	case len(r.groupBy) > 0:
		return readCount
	}
	return readList
}

// searchParam is one search parameter: its name, in the URL or after
// SearchLabelPrefix in a label selector, and how its values, split at
// commas, are read into a list's options: by many when it takes a list,
// by one when it takes one value. refusedBy holds, for each verb that
// does not accept the parameter, why; every other verb accepts it.
// Adding one is adding a row.
type searchParam struct {
	name      string
	many      func(o *listOptions, values []string) error
	one       func(o *listOptions, value string) error
	refusedBy map[readVerb]string
	// allOf: an object must match every value, so a label's in, which
	// kubectl's users read as any of them, is refused.
	allOf bool
}

// notACount is why what is not a count refuses what only counts do.
const notACount = "withHeldSince is for counts: add groupBy"

// notForWatchOwners is why a watch refuses owner filters, one message
// for every owner parameter: the watch cache, which serves every watch,
// does not evaluate them.
const notForWatchOwners = "owner filters are not supported for watch"

// searchParams are every search parameter, in the order they are read.
var searchParams = []searchParam{
	{name: "clusters", many: func(o *listOptions, vs []string) error { o.query.Clusters = vs; return nil }},
	{name: "namespaces", many: func(o *listOptions, vs []string) error { o.query.Namespaces = vs; return nil }},
	{name: "names", many: func(o *listOptions, vs []string) error { o.query.Names = vs; return nil }},
	{name: "fuzzyName", one: func(o *listOptions, s string) error { o.query.FuzzyName = s; return nil }},
	{name: "ownerUID", one: func(o *listOptions, s string) error { o.query.OwnerUID = s; return nil },
		refusedBy: map[readVerb]string{readWatch: notForWatchOwners}},
	{name: "ownerName", one: func(o *listOptions, s string) error { o.query.OwnerName = s; return nil },
		refusedBy: map[readVerb]string{readWatch: notForWatchOwners}},
	{name: "ownerGR", one: applyOwnerGR},
	{name: "ownerSeniority", one: applyOwnerSeniority},
	{name: "since", one: func(o *listOptions, s string) error { return applyTime(&o.query.CreatedSince, "since", s) }},
	{name: "before", one: func(o *listOptions, s string) error { return applyTime(&o.query.CreatedBefore, "before", s) }},
	{name: "orderby", many: applyOrderBy},
	{name: "withRemainingCount", one: func(o *listOptions, s string) error {
		return applyBool(&o.query.WithRemainingCount, "withRemainingCount", s)
	}},
	{name: "onlyMetadata", one: func(o *listOptions, s string) error { return applyBool(&o.onlyMetadata, "onlyMetadata", s) }},
	{name: "groupBy", many: func(o *listOptions, vs []string) (err error) { o.groupBy, err = parseGroupBy(vs); return err },
		refusedBy: map[readVerb]string{readWatch: "groupBy is not supported for watch"}},
	{name: "withHeldSince", one: func(o *listOptions, s string) error { return applyBool(&o.withHeldSince, "withHeldSince", s) },
		refusedBy: map[readVerb]string{readList: notACount, readWatch: notACount}},
	{name: "images", many: func(o *listOptions, vs []string) error { o.query.Images = vs; return nil }},
	{name: "q", many: func(o *listOptions, vs []string) (err error) {
		o.query.Keywords, err = storage.ParseKeywords(vs)
		return err
	}, allOf: true},
	{name: "refersTo", many: applyRefersTo},
	{name: "referredBy", one: applyReferredBy, refusedBy: map[readVerb]string{
		readWatch: "referredBy is not supported for watch: the objects it selects are read when a list starts",
	}},
	{name: "hops", one: applyHops},
	{name: "asOf", one: applyAsOf, refusedBy: map[readVerb]string{
		readWatch: "asOf is not supported for watch",
		readCount: "groupBy counts at the current revision: asOf does not apply",
	}},
}

// isSearchParam reports whether name is a search parameter's.
func isSearchParam(name string) bool { return searchParamNamed(name) != nil }

// searchParamNamed returns the search parameter of name, nil if none.
func searchParamNamed(name string) *searchParam {
	i := slices.IndexFunc(searchParams, func(p searchParam) bool { return p.name == name })
	if i < 0 {
		return nil
	}
	return &searchParams[i]
}

// searchParamNames are the search parameters' names, for messages.
func searchParamNames() []string {
	names := make([]string, len(searchParams))
	for i, p := range searchParams {
		names[i] = p.name
	}
	return names
}

// applySearch reads the search parameters of v into o.
func (o *listOptions) applySearch(v url.Values) error {
	for _, p := range searchParams {
		if err := p.apply(o, splitValues(v[p.name])); err != nil {
			return err
		}
	}
	return nil
}

// refuseUnaccepted refuses the first parameter of v, in the table's
// order, that verb does not accept.
func refuseUnaccepted(v url.Values, verb readVerb) error {
	for _, p := range searchParams {
		if why, refused := p.refusedBy[verb]; refused && len(splitValues(v[p.name])) > 0 {
			return badRequest(why)
		}
	}
	return nil
}

func (p *searchParam) apply(o *listOptions, vs []string) error {
	switch {
	case p.many != nil:
		return p.many(o, vs)
	case len(vs) > 1:
		return badf("%s takes one value", p.name)
	case len(vs) == 1:
		return p.one(o, vs[0])
	}
	return nil
}

// splitValues are the values of a parameter, split at commas, without
// blanks.
func splitValues(vs []string) []string {
	var out []string
	for _, s := range vs {
		for _, part := range strings.Split(s, ",") {
			if part = strings.TrimSpace(part); part != "" {
				out = append(out, part)
			}
		}
	}
	return out
}

func applyOwnerGR(o *listOptions, s string) error {
	gr := schema.ParseGroupResource(s)
	o.query.OwnerGroupResource = &gr
	return nil
}

func applyOwnerSeniority(o *listOptions, s string) (err error) {
	if o.query.OwnerSeniority, err = strconv.Atoi(s); err != nil {
		return badf("ownerSeniority %q is not an integer", s)
	}
	return nil
}

func applyTime(dst **time.Time, name, s string) error {
	t, err := parseTime(s)
	if err != nil {
		return badf("%s %q: want RFC3339, a date (2006-01-02) or Unix seconds", name, s)
	}
	*dst = &t
	return nil
}

func applyBool(dst *bool, name, s string) (err error) {
	if *dst, err = strconv.ParseBool(s); err != nil {
		return badf("%s %q is not a boolean", name, s)
	}
	return nil
}

func applyAsOf(o *listOptions, s string) (err error) {
	o.asOf, err = parseAsOf(s, time.Now())
	return err
}

func applyRefersTo(o *listOptions, vs []string) error {
	for _, v := range vs {
		end, err := parseRelationEnd("refersTo", v)
		if err != nil {
			return err
		}
		o.refersTo = append(o.refersTo, end)
	}
	return nil
}

func applyReferredBy(o *listOptions, s string) error {
	end, err := parseRelationEnd("referredBy", s)
	o.referredBy = &end
	return err
}

func applyHops(o *listOptions, s string) (err error) {
	if o.hops, err = strconv.Atoi(s); err != nil || o.hops < 1 || o.hops > maxHops {
		return badf("hops %q: want 1 to %d", s, maxHops)
	}
	if len(o.refersTo) == 0 && o.referredBy == nil {
		return badRequest("hops takes refersTo or referredBy")
	}
	return nil
}

func applyOrderBy(o *listOptions, terms []string) error {
	for _, term := range terms {
		field, dir, _ := strings.Cut(strings.ReplaceAll(term, ".", " "), " ")
		f, ok := storage.ParseOrderField(field)
		if !ok {
			return badf("orderby %q: fields are cluster, namespace, name, created_at", term)
		}
		switch strings.TrimSpace(dir) {
		case "", "asc":
			o.query.OrderBy = append(o.query.OrderBy, storage.OrderBy{Field: f})
		case "desc":
			o.query.OrderBy = append(o.query.OrderBy, storage.OrderBy{Field: f, Desc: true})
		default:
			return badf("orderby %q: direction is asc or desc", term)
		}
	}
	return nil
}

func parseTime(s string) (time.Time, error) {
	if t, err := time.Parse(time.RFC3339, s); err == nil {
		return t, nil
	}
	if t, err := time.Parse(time.DateOnly, s); err == nil {
		return t, nil
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		return time.Time{}, err
	}
	return time.Unix(n, 0), nil
}
