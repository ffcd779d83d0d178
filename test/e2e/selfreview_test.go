package e2e

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"k8s.io/client-go/kubernetes"

	"github.com/panorama-io/panorama/test/testenv"
)

// erinManifest: erin may read pods of cluster east (and see east), nothing
// else, and has the path shapes every user of Panorama is granted.
var erinManifest = grant("erin-pods-east", "", []string{
	`{apiGroups: [search.panorama.io], resources: [pods, clusters], resourceNames: [east], verbs: [get, list, watch]}`,
}, "erin") + `---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata: {name: erin-panorama-paths}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: panorama-paths}
subjects:
- {apiGroup: rbac.authorization.k8s.io, kind: User, name: erin}
`

// testVersionAndReviews runs `kubectl version`, `kubectl auth can-i` and
// `kubectl api-resources` under Panorama's views, through the host's
// aggregator, as kubectl and k9s ask them before anything else.
func testVersionAndReviews(t *testing.T, host, east *testenv.Env, dir, alice, bob string) {
	erin := userKubeconfig(t, host, dir, "erin")
	apply(t, host, dir, erinManifest)
	member, err := kubernetes.NewForConfigOrDie(east.Config).Discovery().ServerVersion()
	if err != nil {
		t.Fatal(err)
	}

	// A cluster's context: that member's version, as its Cluster records it.
	eventuallyT(t, func() error {
		out, stderr, err := testenv.Kubectl(erin, "version", "--context", "east")
		if err != nil || !strings.Contains(out, "Server Version: "+member.GitVersion+"\n") {
			return fmt.Errorf("kubectl version --context east: %v\n%s%s", err, out, stderr)
		}
		return nil
	})
	// All clusters: Panorama's own, of the Kubernetes API it serves, which
	// kubectl parses and finds within its skew.
	out, stderr, err := testenv.Kubectl(erin, "version")
	if err != nil || !strings.Contains(out, "Server Version: v1.37.0-panorama") || strings.Contains(stderr, "Warning") {
		t.Errorf("kubectl version across clusters: %v\n%s%s", err, out, stderr)
	}
	if out, stderr, err := testenv.Kubectl(erin, "version", "--context", "west"); err == nil || !strings.Contains(stderr, "NotFound") {
		t.Errorf("kubectl version of a cluster erin may not see: %v\n%s%s", err, out, stderr)
	}

	for _, c := range []struct {
		args []string
		want string // the start of kubectl's answer
	}{
		{[]string{"list", "pods", "--context", "east"}, "yes\n"},
		{[]string{"watch", "pods", "--context", "east", "-n", "web"}, "yes\n"},
		{[]string{"list", "pods"}, "yes\n"}, // across clusters: east's, west left out
		{[]string{"list", "secrets", "--context", "east"}, "no - the host's RBAC allows list secrets (search.panorama.io) in namespace default of no cluster"},
		{[]string{"list", "deployments.apps", "--context", "east", "-n", "web"}, "no - "},
		{[]string{"create", "pods", "--context", "east"}, "no - Panorama serves member objects read-only"},
		{[]string{"delete", "pods", "--context", "east", "-n", "web"}, "no - Panorama serves member objects read-only"},
		{[]string{"get", "pods", "--subresource", "log", "--context", "east"}, "no - Panorama serves no subresource"},
	} {
		args := append([]string{"auth", "can-i"}, c.args...)
		out, stderr, err := testenv.Kubectl(erin, args...)
		// kubectl auth can-i exits 1 for "no".
		if !strings.HasPrefix(out, c.want) || (err == nil) != (c.want == "yes\n") {
			t.Errorf("kubectl %v: %v %q %q, want %q", args, err, out, stderr, c.want)
		}
	}
	if out, stderr, err := testenv.Kubectl(erin, "auth", "can-i", "list", "pods", "--context", "west"); err == nil || !strings.Contains(stderr, "NotFound") {
		t.Errorf("can-i in a cluster erin may not see: %v %q %q", err, out, stderr)
	}
	// Without the path shape of reviews the host refuses before Panorama:
	// alice may read everything but was granted no create.
	if out, stderr, err := testenv.Kubectl(alice, "auth", "can-i", "list", "pods", "--context", "east"); err == nil || !strings.Contains(stderr, "Forbidden") {
		t.Errorf("alice without the review shape: %v %q %q", err, out, stderr)
	}

	// --list: the types of the view the user may read, each with its verbs.
	rules := func(kubeconfig string) map[string]string {
		t.Helper()
		out, stderr, err := testenv.Kubectl(kubeconfig, "auth", "can-i", "--list", "--context", "east", "-n", "web")
		if err != nil {
			t.Fatalf("can-i --list: %v %s", err, stderr)
		}
		got := map[string]string{}
		for _, line := range strings.Split(strings.TrimSpace(out), "\n")[1:] {
			if f := strings.Fields(line); len(f) > 0 {
				got[f[0]] = strings.Join(f[1:], " ")
			}
		}
		return got
	}
	got := rules(erin)
	var resources []string
	for r := range got {
		if !strings.HasPrefix(r, "[") { // not a non-resource URL's line
			resources = append(resources, r)
		}
	}
	if slices.Sort(resources); !slices.Equal(resources, []string{"pods", "selfsubjectaccessreviews.authorization.k8s.io", "selfsubjectrulesreviews.authorization.k8s.io"}) ||
		got["pods"] != "[] [] [get list watch]" || got["selfsubjectaccessreviews.authorization.k8s.io"] != "[] [] [create]" || got["[/version]"] != "[] [get]" {
		t.Errorf("erin's rules in east (pods, the two reviews, discovery and /version): %q", got)
	}
	got = rules(bob) // every type of east
	for _, r := range []string{"pods", "secrets", "namespaces", "deployments.apps", "statefulsets.apps", "widgets.example.com"} {
		if got[r] != "[] [] [get list watch]" {
			t.Errorf("bob's rules in east lack %s: %q", r, got)
		}
	}

	// Discovery has the reviews, which k9s looks for.
	out, stderr, err = testenv.Kubectl(erin, "api-resources", "--context", "east", "--api-group", "authorization.k8s.io")
	if err != nil || !strings.Contains(out, "selfsubjectaccessreviews") || !strings.Contains(out, "selfsubjectrulesreviews") {
		t.Errorf("api-resources: %v\n%s%s", err, out, stderr)
	}
}
