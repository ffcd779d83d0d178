package kubectlplugin

import (
	"context"

	"github.com/spf13/cobra"

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
	path := searchv1alpha1.ViewPath(c.cluster) + viewclient.ResourcePath(m.Resource, ns)
	if !c.print.humanReadable() {
		body, warnings, err := views.Get(ctx, path, q, false)
		c.warn(warnings)
		if err != nil {
			return err
		}
		u, err := asUnstructured(body)
		if err != nil {
			return err
		}
		return c.print.printObject(u, c.streams.Out)
	}
	// The server's Table, as kubectl get prints it: SINCE REVISION with
	// -o wide. The groups left out, the server warns of.
	t, warnings, err := views.GetTable(ctx, path, q)
	c.warn(warnings)
	if err != nil {
		return err
	}
	return c.print.printTable(t, false, c.streams.Out)
}
