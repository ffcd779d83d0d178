package e2e

import (
	"fmt"
	"strings"
	"testing"

	"github.com/panorama-io/panorama/test/testenv"
)

// testExplain runs kubectl explain on the views, which read the members'
// own OpenAPI v3 documents through Panorama: a built-in field in each
// cluster's view and across clusters, and a custom resource that east alone
// syncs (widgets, whose schema east describes), which west's view does not
// know.
func testExplain(t *testing.T, kubeconfig string) {
	explain := func(context string, args ...string) (string, error) {
		if context != "" {
			args = append(args, "--context", context)
		}
		out, stderr, err := testenv.Kubectl(kubeconfig, append([]string{"explain"}, args...)...)
		if err != nil {
			return out, fmt.Errorf("%v: %s", err, stderr)
		}
		return out, nil
	}
	expect := func(context string, want []string, args ...string) {
		t.Helper()
		// The controller stores the documents once it has resolved what a
		// cluster syncs: at most a reconcile after the objects show.
		eventuallyT(t, func() error {
			out, err := explain(context, args...)
			if err != nil {
				return err
			}
			for _, w := range want {
				if !strings.Contains(out, w) {
					return fmt.Errorf("kubectl explain %v --context %q has no %q:\n%s", args, context, w, out)
				}
			}
			return nil
		})
	}
	containers := []string{"KIND:       Pod", "FIELD: containers <[]Container>", "DESCRIPTION:",
		"List of containers belonging to the pod.", "FIELDS:", "image\t<string>"}
	for _, context := range []string{"east", "west", ""} {
		expect(context, containers, "pods.spec.containers")
	}
	widget := []string{"GROUP:      example.com", "KIND:       Widget", "VERSION:    v1", "A widget, which east alone defines."}
	expect("east", widget, "widgets")
	expect("", widget, "widgets")
	out, err := explain("west", "widgets")
	if err == nil || !strings.Contains(err.Error(), `the server doesn't have a resource type "widgets"`) {
		t.Fatalf("kubectl explain widgets in west, which has none: %v\n%s", err, out)
	}
}
