package kubectlplugin

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	searchv1alpha1 "github.com/panorama-io/panorama/apis/search/v1alpha1"
	"github.com/panorama-io/panorama/internal/viewclient"
)

// countOptions are `kubectl panorama count`'s.
type countOptions struct {
	*options
	print         *printFlags
	filters       *searchValues
	cluster       string
	allNamespaces bool
}

func newCountCommand(o *options) *cobra.Command {
	c := &countOptions{options: o}
	cmd := &cobra.Command{
		Use:   "count TYPE [flags]",
		Short: "Count objects across clusters, grouped by cluster, namespace, a label or a field",
		Example: `  # Pods per cluster
  kubectl panorama count pods -A

  # Pods per cluster and phase, of the app=web label
  kubectl panorama count pods -A -l app=web --group-by cluster,field:status.phase`,
		Args:              cobra.ExactArgs(1),
		ValidArgsFunction: o.completeResources,
		RunE: func(cmd *cobra.Command, args []string) error {
			return c.run(cmd.Context(), args[0])
		},
	}
	c.print = addPrintFlags(cmd, false)
	c.filters = addSearchFlags(cmd.Flags(), true)
	cmd.Flags().StringVar(&c.cluster, "cluster", "", "Count in one cluster's view (default: the view across clusters).")
	cmd.Flags().BoolVarP(&c.allNamespaces, "all-namespaces", "A", false, "If present, count across all namespaces. Namespace in current context is ignored even if specified with --namespace.")
	o.completeClusters(cmd, "cluster", "clusters")
	return cmd
}

func (c *countOptions) run(ctx context.Context, resource string) error {
	views, err := c.views()
	if err != nil {
		return err
	}
	m, err := views.Mapping(ctx, resource)
	if err != nil {
		return err
	}
	ns, err := c.namespace(c.allNamespaces)
	if err != nil {
		return err
	}
	if !viewclient.IsNamespaced(m) {
		ns = ""
	}
	q := c.filters.query()
	if q.Get("groupBy") == "" {
		q.Set("groupBy", "cluster")
	}
	body, warnings, err := views.Get(ctx, searchv1alpha1.ViewPath(c.cluster)+viewclient.ResourcePath(m.Resource, ns), q, false)
	c.warn(warnings)
	if err != nil {
		return err
	}
	if !c.print.humanReadable() {
		u, err := asUnstructured(body)
		if err != nil {
			return err
		}
		return c.print.printObject(u, c.streams.Out)
	}
	var counts searchv1alpha1.Counts
	if err := json.Unmarshal(body, &counts); err != nil {
		return fmt.Errorf("decoding the counts: %w", err)
	}
	if counts.RemainingItemCount != nil {
		c.warn([]string{fmt.Sprintf("%d more groups left out", *counts.RemainingItemCount)})
	}
	periods, _ := strconv.ParseBool(q.Get("withHeldSince")) // the server refused it if not a boolean
	return c.print.printTable(countsTable(&counts, periods), false, c.streams.Out)
}

// countsTable is a Table of the groups: a column for each term, then
// COUNT.
func countsTable(counts *searchv1alpha1.Counts, periods bool) *metav1.Table {
	t := &metav1.Table{}
	for _, term := range counts.GroupBy {
		t.ColumnDefinitions = append(t.ColumnDefinitions, metav1.TableColumnDefinition{Name: strings.ToUpper(term), Type: "string"})
	}
	t.ColumnDefinitions = append(t.ColumnDefinitions, metav1.TableColumnDefinition{Name: "COUNT", Type: "integer"})
	if periods {
		t.ColumnDefinitions = append(t.ColumnDefinitions, metav1.TableColumnDefinition{Name: "HELD SINCE", Type: "string"},
			metav1.TableColumnDefinition{Name: "SINCE REVISION", Type: "string"})
	}
	for _, g := range counts.Items {
		cells := make([]any, 0, len(counts.GroupBy)+3)
		for _, term := range counts.GroupBy {
			v, ok := g.Group[term]
			if !ok {
				v = "<none>"
			}
			cells = append(cells, v)
		}
		cells = append(cells, g.Count)
		if periods {
			cells = append(cells, periodCells(g.HeldSince)...)
		}
		t.Rows = append(t.Rows, metav1.TableRow{Cells: cells})
	}
	return t
}

// periodCells are a group's HELD SINCE and SINCE REVISION, as the
// server's Table has them: <none> for the group lacking the key,
// <unknown> for a period Panorama cannot date.
func periodCells(h *searchv1alpha1.HeldSince) []any {
	switch {
	case h == nil:
		return []any{"<none>", "<none>"}
	case h.Revision == 0:
		return []any{"<unknown>", "<unknown>"}
	}
	when := "<unknown>"
	if h.Time != nil {
		when = h.Time.UTC().Format(time.RFC3339)
	}
	return []any{when, strconv.FormatInt(h.Revision, 10)}
}
