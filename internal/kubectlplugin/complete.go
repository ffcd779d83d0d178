package kubectlplugin

import (
	"slices"
	"strings"

	"github.com/spf13/cobra"
	"k8s.io/apimachinery/pkg/runtime/schema"

	clusterv1alpha1 "github.com/panorama-io/panorama/apis/cluster/v1alpha1"
	"github.com/panorama-io/panorama/internal/viewclient"
)

// completeResources completes the first argument with the resources the
// view across clusters serves, as kubectl completes kubectl get's.
func (o *options) completeResources(_ *cobra.Command, args []string, toComplete string) ([]cobra.Completion, cobra.ShellCompDirective) {
	if len(args) > 0 {
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
	views, err := o.views()
	if err != nil {
		return nil, cobra.ShellCompDirectiveError
	}
	// A group the view cannot discover leaves the others.
	lists, _ := views.Discovery().ServerPreferredResources()
	var names []string
	for _, l := range lists {
		gv, err := schema.ParseGroupVersion(l.GroupVersion)
		if err != nil {
			continue
		}
		for _, r := range l.APIResources {
			if strings.Contains(r.Name, "/") || !slices.Contains(r.Verbs, "list") {
				continue
			}
			name := r.Name
			if gv.Group != "" {
				name += "." + gv.Group
			}
			if strings.HasPrefix(name, toComplete) {
				names = append(names, name)
			}
		}
	}
	slices.Sort(names)
	return names, cobra.ShellCompDirectiveNoFileComp
}

// completeClusters completes the flags that name clusters with the host's
// Clusters the user may list.
func (o *options) completeClusters(cmd *cobra.Command, flags ...string) {
	complete := func(c *cobra.Command, _ []string, _ string) ([]cobra.Completion, cobra.ShellCompDirective) {
		views, err := o.views()
		if err != nil {
			return nil, cobra.ShellCompDirectiveError
		}
		var list clusterv1alpha1.ClusterList
		if _, err := views.GetJSON(c.Context(), viewclient.ClustersPath, nil, &list); err != nil {
			return nil, cobra.ShellCompDirectiveNoFileComp
		}
		names := make([]string, 0, len(list.Items))
		for _, c := range list.Items {
			names = append(names, c.Name)
		}
		return names, cobra.ShellCompDirectiveNoFileComp
	}
	for _, f := range flags {
		if cmd.Flags().Lookup(f) != nil {
			_ = cmd.RegisterFlagCompletionFunc(f, complete)
		}
	}
}
