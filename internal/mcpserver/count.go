package mcpserver

import (
	"context"
	"strconv"
	"time"

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
	// HeldSince is the API's withHeldSince.
	HeldSince bool `json:"withHeldSince,omitempty" jsonschema:"give each group heldSince: the revision and time it last went from no objects to some (since when a cluster runs an image); filters then are clusters and namespaces only, and at most one label or field"`
}

// CountOutput are the groups, largest first, after the sum of their
// counts.
type CountOutput struct {
	// Sum adds the groups' counts: an object with several values of a
	// field counts in each.
	Sum     int64        `json:"sum"`
	GroupBy []string     `json:"groupBy"`
	Groups  []CountGroup `json:"groups"`
	// GroupsLeftOut is how many groups the limit left out.
	GroupsLeftOut *int64   `json:"groupsLeftOut,omitempty"`
	Warnings      []string `json:"warnings,omitempty"`
}

// CountGroup is the API's CountsGroup, its time one a schema can say.
type CountGroup struct {
	Group     map[string]string `json:"group"`
	Count     int64             `json:"count"`
	HeldSince *HeldSince        `json:"heldSince,omitempty"`
}

// HeldSince is the API's, empty when the period began before Panorama
// kept track, or was found under way.
type HeldSince struct {
	Revision int64      `json:"revision,omitempty"`
	Time     *time.Time `json:"time,omitempty"`
}

func countGroupOf(g *searchv1alpha1.CountsGroup) CountGroup {
	out := CountGroup{Group: g.Group, Count: g.Count}
	if h := g.HeldSince; h != nil {
		out.HeldSince = &HeldSince{Revision: h.Revision}
		if h.Time != nil {
			t := h.Time.UTC()
			out.HeldSince.Time = &t
		}
	}
	return out
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
	if in.HeldSince {
		q.Set("withHeldSince", "true")
	}
	var counts searchv1alpha1.Counts
	warnings, err := t.views.GetJSON(ctx, searchv1alpha1.ViewPath("")+viewclient.ResourcePath(m.Resource, ""), q, &counts)
	out := CountOutput{GroupBy: counts.GroupBy, Groups: make([]CountGroup, len(counts.Items)), GroupsLeftOut: counts.RemainingItemCount, Warnings: warnings}
	if err != nil {
		return out, err
	}
	for i := range counts.Items {
		out.Groups[i] = countGroupOf(&counts.Items[i])
		out.Sum += counts.Items[i].Count
	}
	return out, nil
}
