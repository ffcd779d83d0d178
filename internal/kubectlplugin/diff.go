package kubectlplugin

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/pmezard/go-difflib/difflib"
	"github.com/spf13/cobra"
	"sigs.k8s.io/yaml"

	searchv1alpha1 "github.com/panorama-io/panorama/apis/search/v1alpha1"
	"github.com/panorama-io/panorama/internal/viewclient"
)

// diffOptions are `kubectl panorama diff`'s.
type diffOptions struct {
	objectFlags
	from, to string
	against  string
}

func newDiffCommand(o *options) *cobra.Command {
	d := &diffOptions{objectFlags: objectFlags{options: o}}
	cmd := &cobra.Command{
		Use:   "diff TYPE/NAME --cluster CLUSTER [-n NAMESPACE] [--from REV|TIME] [--to REV|TIME]",
		Short: "Show the changes of one object between two of its versions, or between two clusters",
		Long: "Prints a unified diff of the object's YAML between two versions: by default the one\n" +
			"before the last and the last; --from and --to take a revision (see history) or an RFC3339\n" +
			"time, the version then. With --against, the object now in --cluster and in another cluster.",
		Example: `  # What the last change of a Deployment changed
  kubectl panorama diff deployment/web --cluster east -n shop

  # The same Deployment in two clusters
  kubectl panorama diff deployment/web --cluster east --against west -n shop`,
		Args:              objectArgs,
		ValidArgsFunction: o.completeResources,
		RunE: func(cmd *cobra.Command, args []string) error {
			if d.against != "" {
				return d.runAgainst(cmd.Context(), args)
			}
			return d.run(cmd.Context(), args)
		},
	}
	cmd.Flags().StringVar(&d.cluster, "cluster", "", "The object's cluster.")
	cmd.Flags().StringVar(&d.from, "from", "", "The version to diff from: a revision or an RFC3339 time (default: the one before the last).")
	cmd.Flags().StringVar(&d.to, "to", "", "The version to diff to: a revision or an RFC3339 time (default: the last).")
	cmd.Flags().StringVar(&d.against, "against", "", "Diff the object now in --cluster against the object of the same name in this cluster.")
	o.completeClusters(cmd, "cluster", "against")
	return cmd
}

func (d *diffOptions) run(ctx context.Context, args []string) error {
	h, _, path, err := d.readHistory(ctx, args)
	if err != nil {
		return err
	}
	if len(h.Items) == 0 {
		return viewclient.BadInput(fmt.Sprintf("%s has no versions", path))
	}
	to := h.Items[len(h.Items)-1].Revision
	if d.to != "" {
		if to, err = revisionOf(h, d.to); err != nil {
			return err
		}
	}
	// Before the first version the object did not exist: diff it from
	// nothing, as diff -N does.
	from := h.Items[0].Revision - 1
	if len(h.Items) > 1 {
		from = h.Items[len(h.Items)-2].Revision
	}
	if d.from != "" {
		if from, err = revisionOf(h, d.from); err != nil {
			return err
		}
	}
	a, err := yamlAt(h, from)
	if err != nil {
		return err
	}
	b, err := yamlAt(h, to)
	if err != nil {
		return err
	}
	name := d.cluster + ":" + path
	return writeDiff(d.streams.Out, a, b, fmt.Sprintf("%s@%d", name, from), fmt.Sprintf("%s@%d", name, to))
}

// runAgainst diffs the object now in --cluster with the object of the
// same name in --against.
func (d *diffOptions) runAgainst(ctx context.Context, args []string) error {
	views, err := d.views()
	if err != nil {
		return err
	}
	var texts [2]string
	var names [2]string
	for i, cluster := range []string{d.cluster, d.against} {
		path, err := d.objectPath(ctx, views, cluster, args)
		if err != nil {
			return err
		}
		var obj map[string]any
		warnings, err := views.GetJSON(ctx, path, nil, &obj)
		d.warn(warnings)
		if err != nil {
			return err
		}
		// What each cluster gives every object of its own says nothing
		// of how the two differ.
		if md, ok := obj["metadata"].(map[string]any); ok {
			for _, k := range []string{"uid", "creationTimestamp", "generation"} {
				delete(md, k)
			}
		}
		viewclient.DropBookkeeping(obj)
		if texts[i], err = toYAML(obj); err != nil {
			return err
		}
		names[i] = cluster + ":" + path
	}
	return writeDiff(d.streams.Out, texts[0], texts[1], names[0], names[1])
}

// revisionOf is the revision s names: a revision, or the last version at
// or before an RFC3339 time.
func revisionOf(h *searchv1alpha1.History, s string) (int64, error) {
	if rev, err := strconv.ParseInt(s, 10, 64); err == nil {
		return rev, nil
	}
	t, err := time.Parse(time.RFC3339, s)
	if err != nil {
		return 0, viewclient.BadInput(fmt.Sprintf("%q is neither a revision nor an RFC3339 time", s))
	}
	rev := int64(-1)
	for _, it := range h.Items {
		if it.Time != nil && !it.Time.After(t) {
			rev = it.Revision
		}
	}
	if rev < 0 {
		return 0, viewclient.BadInput(fmt.Sprintf("no version at or before %s (revisions: %s)", s, viewclient.Revisions(h)))
	}
	return rev, nil
}

// yamlAt is the object at revision as YAML without the bookkeeping every
// version changes, "" when it did not exist then.
func yamlAt(h *searchv1alpha1.History, revision int64) (string, error) {
	state, err := viewclient.VersionAt(h, revision)
	if err != nil || state == nil {
		return "", err
	}
	var obj map[string]any
	if err := json.Unmarshal(state, &obj); err != nil {
		return "", err
	}
	viewclient.DropBookkeeping(obj)
	return toYAML(obj)
}

func toYAML(obj map[string]any) (string, error) {
	b, err := yaml.Marshal(obj)
	return string(b), err
}

// writeDiff writes the unified diff of a and b, as diff -u prints it;
// nothing when they are equal.
func writeDiff(w io.Writer, a, b, fromName, toName string) error {
	return difflib.WriteUnifiedDiff(w, difflib.UnifiedDiff{
		A:        lines(a),
		B:        lines(b),
		FromFile: fromName,
		ToFile:   toName,
		Context:  3,
	})
}

// lines splits s after each newline, with no empty last line (as
// difflib.SplitLines leaves), which would print as a change of its own.
func lines(s string) []string {
	l := strings.SplitAfter(s, "\n")
	if l[len(l)-1] == "" {
		l = l[:len(l)-1]
	}
	return l
}
