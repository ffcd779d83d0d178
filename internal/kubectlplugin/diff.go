package kubectlplugin

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/pmezard/go-difflib/difflib"
	"github.com/spf13/cobra"

	searchv1alpha1 "github.com/panorama-io/panorama/apis/search/v1alpha1"
	"github.com/panorama-io/panorama/internal/viewclient"
)

// errDiffers ends a diff that found differences, with nothing more to
// print: kubectl diff's exit status 1, which scripts test for drift.
var errDiffers = errors.New("the objects differ")

// diffFailed is a diff's error: kubectl diff exits with more than 1 on
// one, so that 1 says only that it found differences (Exit).
type diffFailed struct{ error }

func (e diffFailed) Unwrap() error { return e.error }

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
			run := d.run
			if d.against != "" {
				run = d.runAgainst
			}
			err := run(cmd.Context(), args)
			if err != nil && !errors.Is(err, errDiffers) {
				return diffFailed{err}
			}
			return err
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

// maxChangedLines bounds the lines, of both versions, that differ between
// their first and their last difference: difflib's matching grows faster
// than linearly in them, and a diff of more is for no one to read.
const maxChangedLines = 10000

// diffContext is the lines of context around each change, as diff -u's.
const diffContext = 3

// writeDiff writes the unified diff of a and b, as diff -u prints it,
// and then is errDiffers; nothing when they are equal. difflib reads only the lines from the first
// difference to the last, with their context: the versions' common head
// and tail, however long, cost no matching.
func writeDiff(w io.Writer, a, b, fromName, toName string) error {
	la, lb := lines(a), lines(b)
	head := 0
	for head < len(la) && head < len(lb) && la[head] == lb[head] {
		head++
	}
	tail := 0
	for tail < len(la)-head && tail < len(lb)-head && la[len(la)-1-tail] == lb[len(lb)-1-tail] {
		tail++
	}
	if changed := len(la) + len(lb) - 2*(head+tail); changed > maxChangedLines {
		return fmt.Errorf("too many changes to show: %s and %s differ in %d lines, more than the %d a diff shows; "+
			"compare their YAML (history -o yaml holds every version's patch)", fromName, toName, changed, maxChangedLines)
	}
	from := max(0, head-diffContext)
	toA, toB := min(len(la), len(la)-tail+diffContext), min(len(lb), len(lb)-tail+diffContext)
	var out strings.Builder
	if err := difflib.WriteUnifiedDiff(&out, difflib.UnifiedDiff{
		A:        la[from:toA],
		B:        lb[from:toB],
		FromFile: fromName,
		ToFile:   toName,
		Context:  diffContext,
	}); err != nil {
		return err
	}
	if _, err := io.WriteString(w, shiftHunks(out.String(), from)); err != nil {
		return err
	}
	if a != b {
		return errDiffers
	}
	return nil
}

// hunkHeader is a unified diff's "@@ -l,s +l,s @@" line.
var hunkHeader = regexp.MustCompile(`(?m)^@@ -(\d+)((?:,\d+)?) \+(\d+)((?:,\d+)?) @@$`)

// shiftHunks moves the hunks of a diff of two windows that start by lines
// into the versions' own lines.
func shiftHunks(diff string, by int) string {
	if by == 0 {
		return diff
	}
	return hunkHeader.ReplaceAllStringFunc(diff, func(h string) string {
		m := hunkHeader.FindStringSubmatch(h)
		a, _ := strconv.Atoi(m[1])
		b, _ := strconv.Atoi(m[3])
		return fmt.Sprintf("@@ -%d%s +%d%s @@", a+by, m[2], b+by, m[4])
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
