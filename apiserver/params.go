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

// request is a parsed list, watch or get.
type request struct {
	query          storage.ListQuery
	opts           metainternalversion.ListOptions
	onlyMetadata   bool
	version        readVersion
	allowBookmarks bool
	timeout        time.Duration
	// groupBy, when set, makes a list answer counts (counts.go).
	groupBy []storage.GroupBy
	// asOf, when set, lists the state at a past revision or time, from
	// the history (history.go).
	asOf *asOf
}

type badRequest string

func (e badRequest) Error() string { return string(e) }

func badf(format string, args ...any) error { return badRequest(fmt.Sprintf(format, args...)) }

// parseRequest validates the query like kube-apiserver (ListOptions
// validation) and adds the search parameters, from the URL or from
// search.panorama.io/ label requirements.
func parseRequest(values url.Values, gvr schema.GroupVersionResource, cluster, namespace string, watch bool) (*request, error) {
	r := &request{query: storage.ListQuery{GVR: gvr}}
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
		if searchParams[k] {
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
			if !searchParams[key] {
				return nil, badf("unknown search label %q; known: %s", req.Key(), strings.Join(searchParamNames(), ", "))
			}
			switch req.Operator() {
			case selection.Equals, selection.DoubleEquals, selection.In:
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
		if r.query.HasOwnerFilter() {
			return nil, badRequest("owner filters are not supported for watch")
		}
		if len(r.groupBy) > 0 {
			return nil, badRequest("groupBy is not supported for watch")
		}
	}
	if r.asOf != nil {
		switch {
		case watch:
			return nil, badRequest("asOf is not supported for watch")
		case len(r.groupBy) > 0:
			return nil, badRequest("groupBy counts at the current revision: asOf does not apply")
		case r.opts.ResourceVersion != "":
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

var searchParams = map[string]bool{
	"clusters": true, "namespaces": true, "names": true, "fuzzyName": true,
	"ownerUID": true, "ownerName": true, "ownerGR": true, "ownerSeniority": true,
	"since": true, "before": true, "orderby": true, "withRemainingCount": true, "onlyMetadata": true, "groupBy": true, "images": true, "asOf": true,
}

func searchParamNames() []string {
	return []string{"clusters", "namespaces", "names", "fuzzyName", "ownerUID", "ownerName", "ownerGR", "ownerSeniority",
		"since", "before", "orderby", "withRemainingCount", "onlyMetadata", "groupBy", "images", "asOf"}
}

func (r *request) applySearch(v url.Values) error {
	q := &r.query
	list := func(key string) []string {
		var out []string
		for _, s := range v[key] {
			for _, part := range strings.Split(s, ",") {
				if part = strings.TrimSpace(part); part != "" {
					out = append(out, part)
				}
			}
		}
		return out
	}
	one := func(key string) (string, error) {
		vs := list(key)
		if len(vs) > 1 {
			return "", badf("%s takes one value", key)
		}
		if len(vs) == 0 {
			return "", nil
		}
		return vs[0], nil
	}
	q.Clusters, q.Namespaces, q.Names, q.Images = list("clusters"), list("namespaces"), list("names"), list("images")
	var err error
	if q.FuzzyName, err = one("fuzzyName"); err != nil {
		return err
	}
	if q.OwnerUID, err = one("ownerUID"); err != nil {
		return err
	}
	if q.OwnerName, err = one("ownerName"); err != nil {
		return err
	}
	if gr, err := one("ownerGR"); err != nil {
		return err
	} else if gr != "" {
		parsed := schema.ParseGroupResource(gr)
		q.OwnerGroupResource = &parsed
	}
	if s, err := one("ownerSeniority"); err != nil {
		return err
	} else if s != "" {
		if q.OwnerSeniority, err = strconv.Atoi(s); err != nil {
			return badf("ownerSeniority %q is not an integer", s)
		}
	}
	for key, dst := range map[string]**time.Time{"since": &q.CreatedSince, "before": &q.CreatedBefore} {
		s, err := one(key)
		if err != nil {
			return err
		}
		if s != "" {
			t, err := parseTime(s)
			if err != nil {
				return badf("%s %q: want RFC3339, a date (2006-01-02) or Unix seconds", key, s)
			}
			*dst = &t
		}
	}
	if s, err := one("asOf"); err != nil {
		return err
	} else if s != "" {
		if r.asOf, err = parseAsOf(s, time.Now()); err != nil {
			return err
		}
	}
	if r.groupBy, err = parseGroupBy(list("groupBy")); err != nil {
		return err
	}
	for _, term := range list("orderby") {
		field, dir, _ := strings.Cut(strings.ReplaceAll(term, ".", " "), " ")
		f, ok := storage.ParseOrderField(field)
		if !ok {
			return badf("orderby %q: fields are cluster, namespace, name, created_at", term)
		}
		switch strings.TrimSpace(dir) {
		case "", "asc":
			q.OrderBy = append(q.OrderBy, storage.OrderBy{Field: f})
		case "desc":
			q.OrderBy = append(q.OrderBy, storage.OrderBy{Field: f, Desc: true})
		default:
			return badf("orderby %q: direction is asc or desc", term)
		}
	}
	for key, dst := range map[string]*bool{"withRemainingCount": &q.WithRemainingCount, "onlyMetadata": &r.onlyMetadata} {
		s, err := one(key)
		if err != nil {
			return err
		}
		if s != "" {
			if *dst, err = strconv.ParseBool(s); err != nil {
				return badf("%s %q is not a boolean", key, s)
			}
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
