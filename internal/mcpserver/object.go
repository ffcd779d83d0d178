package mcpserver

import (
	"context"
	"fmt"
	"net/url"
	"strconv"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/fields"

	searchv1alpha1 "github.com/panorama-io/panorama/apis/search/v1alpha1"
	"github.com/panorama-io/panorama/internal/viewclient"
)

// ObjectRef names one object of one cluster.
type ObjectRef struct {
	Cluster   string `json:"cluster" jsonschema:"the cluster (see the clusters tool)"`
	Resource  string `json:"resource" jsonschema:"the resource as kubectl names it: pods, deployments.apps, ..."`
	Namespace string `json:"namespace,omitempty" jsonschema:"the namespace, for a namespaced resource"`
	Name      string `json:"name"`
}

// resolve maps the reference's resource and checks what a path needs.
func (r ObjectRef) resolve(ctx context.Context, v *viewclient.Client) (*meta.RESTMapping, error) {
	if r.Cluster == "" || r.Name == "" {
		return nil, viewclient.BadInput("cluster and name are required")
	}
	m, err := v.Mapping(ctx, r.Resource)
	if err != nil {
		return nil, err
	}
	if viewclient.IsNamespaced(m) && r.Namespace == "" {
		return nil, viewclient.BadInput(fmt.Sprintf("%s are namespaced: namespace is required", m.Resource.Resource))
	}
	return m, nil
}

// path is the object's path in its cluster's view.
func (r ObjectRef) path(m *meta.RESTMapping) string {
	return searchv1alpha1.ViewPath(r.Cluster) + viewclient.ObjectPath(m, r.Namespace, r.Name)
}

// GetInput reads one object.
type GetInput struct {
	ObjectRef
	Fields []string `json:"fields,omitempty" jsonschema:"only these JSON paths (status.phase, spec.template.spec.containers[*].image); default: the whole object without managedFields"`
	AsOf   string   `json:"asOf,omitempty" jsonschema:"the object as it was at a revision, an RFC3339 time, a date or a duration ago (90m)"`
}

// GetOutput is the object as asked.
type GetOutput struct {
	Object   map[string]any `json:"object"`
	Warnings []string       `json:"warnings,omitempty"`
}

func (t *tools) get(ctx context.Context, _ *mcp.CallToolRequest, in GetInput) (*mcp.CallToolResult, GetOutput, error) {
	out, err := t.doGet(ctx, in)
	return nil, out, toolError(err)
}

func (t *tools) doGet(ctx context.Context, in GetInput) (GetOutput, error) {
	m, err := in.resolve(ctx, t.views)
	if err != nil {
		return GetOutput{}, err
	}
	var out GetOutput
	obj, warnings, err := t.readObject(ctx, in.ObjectRef, m, in.AsOf)
	out.Warnings = warnings
	if err != nil {
		return out, err
	}
	out.Object, err = shapeObject(obj, in.Fields)
	return out, err
}

// readObject reads the object now, or as of a past revision or time: a
// list of its name at asOf, as Panorama reads the past by lists only.
func (t *tools) readObject(ctx context.Context, ref ObjectRef, m *meta.RESTMapping, asOf string) (map[string]any, []string, error) {
	if asOf == "" {
		var obj map[string]any
		warnings, err := t.views.GetJSON(ctx, ref.path(m), nil, &obj)
		return obj, warnings, err
	}
	ns := ""
	if viewclient.IsNamespaced(m) {
		ns = ref.Namespace
	}
	var list struct {
		Items []map[string]any `json:"items"`
	}
	q := url.Values{"asOf": {asOf}, "fieldSelector": {fields.OneTermEqualSelector("metadata.name", ref.Name).String()}}
	warnings, err := t.views.GetJSON(ctx, searchv1alpha1.ViewPath(ref.Cluster)+viewclient.ResourcePath(m.Resource, ns), q, &list)
	if err != nil {
		return nil, warnings, err
	}
	if len(list.Items) == 0 {
		return nil, warnings, apierrors.NewNotFound(m.Resource.GroupResource(), ref.Name)
	}
	return list.Items[0], warnings, nil
}

// defaultHistoryVersions is how many versions history answers when not
// told: the recent ones an agent usually wants, not a week of them.
const defaultHistoryVersions = 50

// HistoryInput reads the versions of one object.
type HistoryInput struct {
	ObjectRef
	Limit       int   `json:"limit,omitempty" jsonschema:"only the last this many versions (default 50)"`
	WithPatches bool  `json:"withPatches,omitempty" jsonschema:"also each version's JSON merge patch (the whole object for ADDED)"`
	From        int64 `json:"from,omitempty" jsonschema:"with to: the diff between the versions at these two revisions"`
	To          int64 `json:"to,omitempty" jsonschema:"with from: the diff between the versions at these two revisions"`
}

// HistoryOutput is the timeline, oldest first, and the diff asked for.
type HistoryOutput struct {
	Count    int       `json:"count"`
	Versions []version `json:"versions"`
	// Diff is the JSON merge patch from the version at From to the one at
	// To, and Changed its paths.
	Diff     any      `json:"diff,omitempty"`
	Changed  []string `json:"changed,omitempty"`
	Warnings []string `json:"warnings,omitempty"`
}

func (t *tools) history(ctx context.Context, _ *mcp.CallToolRequest, in HistoryInput) (*mcp.CallToolResult, HistoryOutput, error) {
	out, err := t.doHistory(ctx, in)
	return nil, out, toolError(err)
}

func (t *tools) doHistory(ctx context.Context, in HistoryInput) (HistoryOutput, error) {
	m, err := in.resolve(ctx, t.views)
	if err != nil {
		return HistoryOutput{}, err
	}
	withDiff := in.From != 0 || in.To != 0
	if withDiff && (in.From == 0 || in.To == 0) {
		return HistoryOutput{}, viewclient.BadInput("a diff needs both from and to")
	}
	limit := in.Limit
	if limit <= 0 {
		limit = defaultHistoryVersions
	}
	q := url.Values{}
	// A diff rebuilds versions from the first, whole, one: it reads them all.
	if !withDiff {
		q.Set("limit", strconv.Itoa(limit))
	}
	var h searchv1alpha1.History
	warnings, err := t.views.GetJSON(ctx, in.path(m)+"/history", q, &h)
	out := HistoryOutput{Warnings: warnings}
	if err != nil {
		return out, err
	}
	if withDiff {
		patch, changed, err := diff(&h, in.From, in.To)
		if err != nil {
			return out, err
		}
		out.Diff, out.Changed = patch, changed
		if len(h.Items) > limit {
			h.Items = h.Items[len(h.Items)-limit:]
		}
	}
	if len(h.Items) == limit {
		out.Warnings = append(out.Warnings, fmt.Sprintf("the last %d versions only: a larger limit reads earlier ones", limit))
	}
	if out.Versions, err = timeline(&h, in.WithPatches); err != nil {
		return out, err
	}
	out.Count = len(out.Versions)
	return out, nil
}
