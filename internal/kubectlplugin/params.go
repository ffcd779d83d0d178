package kubectlplugin

import (
	"net/url"
	"strconv"
	"strings"

	"github.com/spf13/pflag"
)

// searchFlag is the flag of one search parameter of the views
// (docs/usage.md "Search parameters", the API server's searchParams).
type searchFlag struct {
	param string
	flag  string
	usage string
	// many takes a comma-separated list, or the flag repeated.
	many bool
	// boolean is a flag that, like kubectl's, is true when given alone.
	boolean bool
	// search and count say which commands take the flag: the server
	// refuses asOf and orderby on counts, and groupBy is what a count is.
	search, count bool
}

// searchFlags are the search parameters as flags, in the order of the
// server's table; TestEverySearchParameterHasAFlag keeps them together.
var searchFlags = []searchFlag{
	{param: "clusters", flag: "clusters", many: true, search: true, count: true,
		usage: "Only these clusters (default: every cluster you may read)."},
	{param: "namespaces", flag: "namespaces", many: true, search: true, count: true,
		usage: "Only these namespaces (with -A, or instead of -n)."},
	{param: "names", flag: "names", many: true, search: true, count: true,
		usage: "Only objects of these exact names."},
	{param: "fuzzyName", flag: "fuzzy-name", search: true, count: true,
		usage: "Only objects whose name contains this."},
	{param: "ownerUID", flag: "owner-uid", search: true, count: true,
		usage: "Only objects owned by the object of this uid."},
	{param: "ownerName", flag: "owner-name", search: true, count: true,
		usage: "Only objects owned by an object of this name (with --owner-gr)."},
	{param: "ownerGR", flag: "owner-gr", search: true, count: true,
		usage: "The owner's resource.group, e.g. deployments.apps, with --owner-name."},
	{param: "ownerSeniority", flag: "owner-seniority", search: true, count: true,
		usage: "0: the owner's children (default), 1: its grandchildren, and so on."},
	{param: "since", flag: "since", search: true, count: true,
		usage: "Only objects created at or after this time (RFC3339, a date or Unix seconds)."},
	{param: "before", flag: "before", search: true, count: true,
		usage: "Only objects created before this time (RFC3339, a date or Unix seconds)."},
	{param: "orderby", flag: "order-by", many: true, search: true,
		usage: "Order by cluster, namespace, name or created_at, each optionally followed by ' desc'."},
	{param: "withRemainingCount", flag: "with-remaining-count", search: true, boolean: true,
		usage: "Have the server count the objects left after each page."},
	{param: "onlyMetadata", flag: "only-metadata", search: true, boolean: true,
		usage: "Only the objects' metadata, for -o json|yaml."},
	{param: "groupBy", flag: "group-by", many: true, count: true,
		usage: "Up to 4 terms to count by: cluster, namespace, label:<key>, field:<path> (default: cluster)."},
	{param: "withHeldSince", flag: "with-held-since", count: true, boolean: true,
		usage: "Give each group when it last went from no objects to some, since when a cluster runs an image say."},
	{param: "images", flag: "images", many: true, search: true, count: true,
		usage: "Only objects running an image whose reference contains any of these."},
	{param: "q", flag: "keywords", many: true, search: true, count: true,
		usage: "Only objects with every word of these terms in their name, namespace, labels, annotations or indexed fields: words are letters and digits, any case; end a term with * for a prefix of its last word (web*)."},
	{param: "refersTo", flag: "refers-to", many: true, search: true, count: true,
		usage: "Only objects that refer to any of these, each TYPE/NAME or TYPE/NAMESPACE/NAME (secret/db-pass); a Service refers to the pods it selects."},
	{param: "referredBy", flag: "referred-by", search: true, count: true,
		usage: "Only the objects this one refers to, TYPE/NAME or TYPE/NAMESPACE/NAME (pod/web-0)."},
	{param: "hops", flag: "hops", search: true, count: true,
		usage: "With --refers-to or --referred-by, follow references up to this many hops (1 to 3)."},
	{param: "asOf", flag: "as-of", search: true,
		usage: "List as it was at a revision, an RFC3339 time, a date or a duration ago (90m)."},
}

// searchValues holds the values of the search flags of one command.
type searchValues struct {
	one  map[string]*string
	many map[string]*[]string
	// labelSelector and fieldSelector are Kubernetes' own list options,
	// spelled as kubectl get spells them.
	labelSelector, fieldSelector string
}

// addSearchFlags registers on fs the flags of the search parameters that
// the command takes (search or count).
func addSearchFlags(fs *pflag.FlagSet, forCount bool) *searchValues {
	v := &searchValues{one: map[string]*string{}, many: map[string]*[]string{}}
	fs.StringVarP(&v.labelSelector, "selector", "l", "", "Selector (label query) to filter on, supports '=', '==', '!=', 'in', 'notin'. (e.g. -l key1=value1,key2=value2)")
	fs.StringVar(&v.fieldSelector, "field-selector", "", "Selector (field query) to filter on: metadata.name, metadata.namespace, status.phase, spec.nodeName, images, ownerKind, IndexedFields by name.")
	for _, f := range searchFlags {
		if forCount && !f.count || !forCount && !f.search {
			continue
		}
		if f.many {
			v.many[f.param] = fs.StringSlice(f.flag, nil, f.usage)
		} else {
			v.one[f.param] = new(string)
			if f.boolean {
				fs.Var(boolParam{v.one[f.param]}, f.flag, f.usage)
				fs.Lookup(f.flag).NoOptDefVal = "true"
			} else {
				fs.StringVar(v.one[f.param], f.flag, "", f.usage)
			}
		}
	}
	return v
}

// boolParam is a boolean parameter's flag: kept as the parameter's text,
// left out of the query while not set, and typed bool for pflag, which
// then neither asks for a value nor shows one in the help.
type boolParam struct{ s *string }

func (b boolParam) String() string { return *b.s }
func (b boolParam) Type() string   { return "bool" }

func (b boolParam) Set(v string) error {
	on, err := strconv.ParseBool(v)
	if err != nil {
		return err
	}
	*b.s = strconv.FormatBool(on)
	return nil
}

// query is the values set as URL parameters of a view.
func (v *searchValues) query() url.Values {
	q := url.Values{}
	if v.labelSelector != "" {
		q.Set("labelSelector", v.labelSelector)
	}
	if v.fieldSelector != "" {
		q.Set("fieldSelector", v.fieldSelector)
	}
	for param, s := range v.one {
		if *s != "" {
			q.Set(param, *s)
		}
	}
	for param, vs := range v.many {
		if len(*vs) > 0 {
			q.Set(param, strings.Join(*vs, ","))
		}
	}
	return q
}
