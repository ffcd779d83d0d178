package kubectlplugin

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/spf13/cobra"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"

	searchv1alpha1 "github.com/panorama-io/panorama/apis/search/v1alpha1"
	"github.com/panorama-io/panorama/internal/viewclient"
)

// objectFlags name one object of one cluster: TYPE/NAME (or TYPE NAME),
// --cluster and -n.
type objectFlags struct {
	*options
	cluster string
}

// objectArgs accepts TYPE/NAME or TYPE NAME.
var objectArgs = cobra.RangeArgs(1, 2)

// readHistory reads the History of the object args name, with the path of
// the object for messages.
func (o *objectFlags) readHistory(ctx context.Context, args []string) (*searchv1alpha1.History, []byte, string, error) {
	views, err := o.views()
	if err != nil {
		return nil, nil, "", err
	}
	path, err := o.objectPath(ctx, views, o.cluster, args)
	if err != nil {
		return nil, nil, "", err
	}
	body, warnings, err := views.Get(ctx, path+"/history", nil, false)
	o.warn(warnings)
	if err != nil {
		return nil, nil, "", err
	}
	var h searchv1alpha1.History
	if err := json.Unmarshal(body, &h); err != nil {
		return nil, nil, "", fmt.Errorf("decoding the history: %w", err)
	}
	return &h, body, path, nil
}

// objectPath is the path, in cluster's view, of the object args name.
func (o *objectFlags) objectPath(ctx context.Context, views *viewclient.Client, cluster string, args []string) (string, error) {
	if cluster == "" {
		return "", viewclient.BadInput("--cluster is required: an object's history is of one cluster")
	}
	resource, name, err := resourceAndName(args)
	if err != nil {
		return "", err
	}
	m, err := views.Mapping(ctx, resource)
	if err != nil {
		return "", err
	}
	ns, err := o.namespace(false)
	if err != nil {
		return "", err
	}
	return searchv1alpha1.ViewPath(cluster) + viewclient.ObjectPath(m, ns, name), nil
}

// resourceAndName splits TYPE/NAME, or TYPE NAME.
func resourceAndName(args []string) (string, string, error) {
	if len(args) == 2 {
		return args[0], args[1], nil
	}
	resource, name, ok := strings.Cut(args[0], "/")
	if !ok || resource == "" || name == "" {
		return "", "", viewclient.BadInput(fmt.Sprintf("%q names no object: want TYPE/NAME or TYPE NAME", args[0]))
	}
	return resource, name, nil
}

func newHistoryCommand(o *options) *cobra.Command {
	h := &objectFlags{options: o}
	var print *printFlags
	cmd := &cobra.Command{
		Use:   "history TYPE/NAME --cluster CLUSTER [-n NAMESPACE]",
		Short: "List the versions of one object of one cluster",
		Example: `  # The versions of a Deployment, and the paths each changed
  kubectl panorama history deployment/web --cluster east -n shop`,
		Args:              objectArgs,
		ValidArgsFunction: o.completeResources,
		RunE: func(cmd *cobra.Command, args []string) error {
			history, body, _, err := h.readHistory(cmd.Context(), args)
			if err != nil {
				return err
			}
			if !print.humanReadable() {
				u, err := asUnstructured(body)
				if err != nil {
					return err
				}
				return print.printObject(u, o.streams.Out)
			}
			t, err := historyTable(history)
			if err != nil {
				return err
			}
			return print.printTable(t, false, o.streams.Out)
		},
	}
	print = addPrintFlags(cmd, false)
	cmd.Flags().StringVar(&h.cluster, "cluster", "", "The object's cluster.")
	o.completeClusters(cmd, "cluster")
	return cmd
}

// historyTable is a Table of the versions, oldest first: what changed, by
// path, rather than the patches (-o yaml prints them).
func historyTable(h *searchv1alpha1.History) (*metav1.Table, error) {
	t := &metav1.Table{ColumnDefinitions: []metav1.TableColumnDefinition{
		{Name: "REVISION", Type: "integer"},
		{Name: "TIME", Type: "string", Format: "date-time"},
		{Name: "TYPE", Type: "string"},
		{Name: "MEMBER RV", Type: "string"},
		{Name: "CHANGED PATHS", Type: "string"},
	}}
	for _, it := range h.Items {
		when := "<unknown>"
		if it.Time != nil {
			when = it.Time.UTC().Format(time.RFC3339)
		}
		changed := ""
		if it.Type == watch.Modified {
			var patch map[string]any
			if err := json.Unmarshal(it.Patch, &patch); err != nil {
				return nil, fmt.Errorf("decoding the patch of revision %d: %w", it.Revision, err)
			}
			changed = strings.Join(viewclient.ChangedPaths(patch), ",")
		}
		t.Rows = append(t.Rows, metav1.TableRow{Cells: []any{it.Revision, when, string(it.Type), it.MemberResourceVersion, changed}})
	}
	return t, nil
}
