package mcpserver

import (
	"context"
	"encoding/json"
	"net/url"
	"strconv"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	searchv1alpha1 "github.com/panorama-io/panorama/apis/search/v1alpha1"
	"github.com/panorama-io/panorama/internal/viewclient"
)

// Filters are the search parameters of docs/usage.md that select objects,
// shared by search and count.
type Filters struct {
	Clusters       []string `json:"clusters,omitempty" jsonschema:"only these clusters (default: every cluster you may read)"`
	Namespaces     []string `json:"namespaces,omitempty" jsonschema:"only these namespaces"`
	Names          []string `json:"names,omitempty" jsonschema:"only objects of these exact names"`
	LabelSelector  string   `json:"labelSelector,omitempty" jsonschema:"a Kubernetes label selector, e.g. app=web,tier!=db"`
	FieldSelector  string   `json:"fieldSelector,omitempty" jsonschema:"a field selector: metadata.name, metadata.namespace, status.phase, spec.nodeName, images, ownerKind, involvedObject.* of Events, IndexedFields by name"`
	FuzzyName      string   `json:"fuzzyName,omitempty" jsonschema:"names containing this"`
	Images         []string `json:"images,omitempty" jsonschema:"objects running an image whose reference contains any of these"`
	Keywords       []string `json:"q,omitempty" jsonschema:"keyword search: every word of these terms must appear in the object's name, namespace, labels, annotations or indexed fields. Words are letters and digits, any case: db.example.com is the words db, example and com. End a term with * for a prefix of its last word: web* finds web-0 and webhook. At most 16 words in all"`
	OwnerUID       string   `json:"ownerUID,omitempty" jsonschema:"objects owned by the object of this uid"`
	OwnerName      string   `json:"ownerName,omitempty" jsonschema:"objects owned by an object of this name"`
	OwnerGR        string   `json:"ownerGR,omitempty" jsonschema:"the owner's resource.group, e.g. deployments.apps, with ownerName"`
	OwnerSeniority *int     `json:"ownerSeniority,omitempty" jsonschema:"0: the owner's children (default), 1: its grandchildren, and so on"`
	RefersTo       []string `json:"refersTo,omitempty" jsonschema:"objects that refer to any of these, each type/name or type/namespace/name (secret/db-pass, pod/shop/web-0): volumes, env, accounts, owners, bindings, backends; a Service refers to the pods it selects"`
	ReferredBy     string   `json:"referredBy,omitempty" jsonschema:"the objects this one refers to, type/name or type/namespace/name"`
	Hops           int      `json:"hops,omitempty" jsonschema:"with refersTo or referredBy, follow references up to this many hops (1 to 3, default 1): the ingresses in front of pods that mount a secret are 3 hops from it"`
	Since          string   `json:"since,omitempty" jsonschema:"created at or after this time (RFC3339, date or Unix seconds)"`
	Before         string   `json:"before,omitempty" jsonschema:"created before this time (RFC3339, date or Unix seconds)"`
}

// query is f as URL parameters of a view.
func (f Filters) query() url.Values {
	q := url.Values{}
	set := func(k, v string) {
		if v != "" {
			q.Set(k, v)
		}
	}
	set("clusters", strings.Join(f.Clusters, ","))
	set("namespaces", strings.Join(f.Namespaces, ","))
	set("names", strings.Join(f.Names, ","))
	set("labelSelector", f.LabelSelector)
	set("fieldSelector", f.FieldSelector)
	set("fuzzyName", f.FuzzyName)
	set("images", strings.Join(f.Images, ","))
	set("q", strings.Join(f.Keywords, ","))
	set("ownerUID", f.OwnerUID)
	set("ownerName", f.OwnerName)
	set("ownerGR", f.OwnerGR)
	if f.OwnerSeniority != nil {
		q.Set("ownerSeniority", strconv.Itoa(*f.OwnerSeniority))
	}
	set("refersTo", strings.Join(f.RefersTo, ","))
	set("referredBy", f.ReferredBy)
	if f.Hops != 0 {
		q.Set("hops", strconv.Itoa(f.Hops))
	}
	set("since", f.Since)
	set("before", f.Before)
	return q
}

// SearchInput is a search: a resource or a collection, filters, a page.
type SearchInput struct {
	Resource   string `json:"resource,omitempty" jsonschema:"the resource as kubectl names it: pods, po, deployments.apps, deployments.v1.apps, widgets.example.com"`
	Collection string `json:"collection,omitempty" jsonschema:"instead of resource, a collection of several kinds: workloads or networking"`
	Filters
	AsOf    string   `json:"asOf,omitempty" jsonschema:"list as it was at a revision, an RFC3339 time, a date or a duration ago (90m)"`
	OrderBy string   `json:"orderBy,omitempty" jsonschema:"name or 'name desc'"`
	Fields  []string `json:"fields,omitempty" jsonschema:"instead of kubectl get's columns, these JSON paths of each object (status.phase, spec.containers[*].image)"`
	Limit   int      `json:"limit,omitempty" jsonschema:"objects per page, default 50, at most 500"`
	// Continue is the token of the page before.
	Continue string `json:"continue,omitempty" jsonschema:"the continue token of the previous page"`
}

// SearchOutput is a page of a search: how many match first, then the rows.
type SearchOutput struct {
	// Total is how many objects match, on a first page that Panorama
	// counted (withRemainingCount) or that is the last.
	Total *int64 `json:"total,omitempty"`
	// Remaining is how many objects match after this page.
	Remaining *int64 `json:"remaining,omitempty"`
	// Count is the number of items of this page.
	Count    int              `json:"count"`
	Kind     string           `json:"kind,omitempty"`
	Items    []map[string]any `json:"items"`
	Continue string           `json:"continue,omitempty"`
	Warnings []string         `json:"warnings,omitempty"`
}

const (
	defaultLimit = 50
	maxLimit     = 500
)

func (t *tools) search(ctx context.Context, _ *mcp.CallToolRequest, in SearchInput) (*mcp.CallToolResult, SearchOutput, error) {
	out, err := t.doSearch(ctx, in)
	return nil, out, toolError(err)
}

func (t *tools) doSearch(ctx context.Context, in SearchInput) (SearchOutput, error) {
	if (in.Resource == "") == (in.Collection == "") {
		return SearchOutput{}, viewclient.BadInput("name either a resource or a collection")
	}
	q := in.Filters.query()
	limit := in.Limit
	if limit <= 0 {
		limit = defaultLimit
	}
	if limit > maxLimit {
		return SearchOutput{}, viewclient.BadInput("limit is at most " + strconv.Itoa(maxLimit) + ": page with continue")
	}
	q.Set("limit", strconv.Itoa(limit))
	q.Set("withRemainingCount", "true")
	if in.Continue != "" {
		q.Set("continue", in.Continue)
	}
	if in.AsOf != "" {
		q.Set("asOf", in.AsOf)
	}
	if in.OrderBy != "" {
		q.Set("orderby", in.OrderBy)
	}
	if in.Collection != "" {
		return t.searchCollection(ctx, in, q, limit)
	}
	m, err := t.views.Mapping(ctx, in.Resource)
	if err != nil {
		return SearchOutput{}, err
	}
	path := searchv1alpha1.ViewPath("") + viewclient.ResourcePath(m.Resource, "")
	out := SearchOutput{Kind: m.GroupVersionKind.Kind}
	var lm metav1.ListMeta
	if len(in.Fields) == 0 {
		table, warnings, err := t.views.GetTable(ctx, path, q)
		out.Warnings = warnings
		if err != nil {
			return out, err
		}
		if out.Items, err = compactRows(table); err != nil {
			return out, err
		}
		lm = table.ListMeta
	} else {
		var list struct {
			Metadata metav1.ListMeta  `json:"metadata"`
			Items    []map[string]any `json:"items"`
		}
		if out.Warnings, err = t.views.GetJSON(ctx, path, q, &list); err != nil {
			return out, err
		}
		out.Items = make([]map[string]any, 0, len(list.Items))
		for _, o := range list.Items {
			s, err := selectFields(o, in.Fields)
			if err != nil {
				return out, err
			}
			out.Items = append(out.Items, s)
		}
		lm = list.Metadata
	}
	out.finish(lm, in.Continue == "")
	return out, nil
}

// searchCollection lists a collection: its items are of several kinds,
// so each row names its kind.
func (t *tools) searchCollection(ctx context.Context, in SearchInput, q url.Values, limit int) (SearchOutput, error) {
	if in.Continue != "" {
		return SearchOutput{}, viewclient.BadInput("a collection answers one page: continue does not apply")
	}
	q.Del("withRemainingCount")
	var coll searchv1alpha1.CollectionResource
	warnings, err := t.views.GetJSON(ctx, viewclient.CollectionPath(in.Collection), q, &coll)
	out := SearchOutput{Warnings: warnings, Items: make([]map[string]any, 0, len(coll.Items))}
	if err != nil {
		return out, err
	}
	for _, raw := range coll.Items {
		var o map[string]any
		if err := json.Unmarshal(raw.Raw, &o); err != nil {
			return out, err
		}
		s, err := selectFields(o, in.Fields)
		if err != nil {
			return out, err
		}
		s["kind"] = o["kind"]
		out.Items = append(out.Items, s)
	}
	out.Count = len(out.Items)
	if out.Count == limit {
		out.Warnings = append(out.Warnings, "a collection answers one page, no continue: the limit was reached, narrow the search or raise the limit")
	}
	return out, nil
}

// finish sets what a page's list metadata tells: the continue token, and
// the objects left after the page when Panorama counted them; the total
// only on a first page, as the answer does not count the pages before.
func (o *SearchOutput) finish(lm metav1.ListMeta, first bool) {
	o.Count = len(o.Items)
	o.Continue = lm.Continue
	o.Remaining = lm.RemainingItemCount
	switch {
	case !first:
	case lm.RemainingItemCount != nil:
		o.Total = ptr(*lm.RemainingItemCount + int64(o.Count))
	case lm.Continue == "":
		o.Total = ptr(int64(o.Count))
	}
}
