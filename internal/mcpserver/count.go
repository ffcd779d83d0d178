package mcpserver

import (
	"context"
	"strconv"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	searchv1alpha1 "github.com/panorama-io/panorama/apis/search/v1alpha1"
	"github.com/panorama-io/panorama/internal/viewclient"
)

// CountInput is a count: a resource, filters, and the terms to group by.
type CountInput struct {
	Resource string `json:"resource" jsonschema:"the resource as kubectl names it: pods, deployments.apps, ..."`
	Filters
	GroupBy []string `json:"groupBy" jsonschema:"up to 4 terms: cluster, namespace, label:<key>, field:<path> (status.phase, spec.nodeName, images, an IndexedField)"`
	Limit   int      `json:"limit,omitempty" jsonschema:"at most this many groups, largest first (default 500)"`
}

// CountOutput are the groups, largest first, after the sum of their
// counts.
type CountOutput struct {
	// Sum adds the groups' counts: an object with several values of a
	// field counts in each.
	Sum     int64                        `json:"sum"`
	GroupBy []string                     `json:"groupBy"`
	Groups  []searchv1alpha1.CountsGroup `json:"groups"`
	// GroupsLeftOut is how many groups the limit left out.
	GroupsLeftOut *int64   `json:"groupsLeftOut,omitempty"`
	Warnings      []string `json:"warnings,omitempty"`
}

func (t *tools) count(ctx context.Context, _ *mcp.CallToolRequest, in CountInput) (*mcp.CallToolResult, CountOutput, error) {
	out, err := t.doCount(ctx, in)
	return nil, out, toolError(err)
}

func (t *tools) doCount(ctx context.Context, in CountInput) (CountOutput, error) {
	if len(in.GroupBy) == 0 {
		return CountOutput{}, viewclient.BadInput("groupBy is required: cluster, namespace, label:<key> or field:<path>")
	}
	m, err := t.views.Mapping(ctx, in.Resource)
	if err != nil {
		return CountOutput{}, err
	}
	q := in.Filters.query()
	q["groupBy"] = in.GroupBy
	if in.Limit > 0 {
		q.Set("limit", strconv.Itoa(in.Limit))
	}
	var counts searchv1alpha1.Counts
	warnings, err := t.views.GetJSON(ctx, searchv1alpha1.ViewPath("")+viewclient.ResourcePath(m.Resource, ""), q, &counts)
	out := CountOutput{GroupBy: counts.GroupBy, Groups: counts.Items, GroupsLeftOut: counts.RemainingItemCount, Warnings: warnings}
	if err != nil {
		return out, err
	}
	for _, g := range counts.Items {
		out.Sum += g.Count
	}
	if out.Groups == nil {
		out.Groups = []searchv1alpha1.CountsGroup{}
	}
	return out, nil
}
