package e2e

import (
	"strings"
	"testing"
	"time"

	"github.com/panorama-io/panorama/test/testenv"
)

// testCRDsAndSubresources runs real kubectl through the host: each view
// serves the CRDs of what it syncs, and logs and exec, which Panorama does
// not hold, fail at once with a message naming the cluster to ask.
func testCRDsAndSubresources(t *testing.T, kubeconfig string) {
	out, stderr, err := testenv.Kubectl(kubeconfig, "--context", "east", "get", "crd")
	if err != nil || !strings.Contains(out, "widgets.example.com") || strings.Count(strings.TrimSpace(out), "\n") != 1 {
		t.Fatalf("kubectl get crd --context east: %v\n%s%s", err, out, stderr)
	}
	out, stderr, err = testenv.Kubectl(kubeconfig, "--context", "east", "get", "crd", "widgets.example.com", "-o", "yaml")
	for _, want := range []string{"kind: CustomResourceDefinition", "plural: widgets", "kind: Widget", "jsonPath: .spec.size", "panorama.io/cluster: east"} {
		if err != nil || !strings.Contains(out, want) {
			t.Fatalf("get crd -o yaml lacks %q: %v\n%s%s", want, err, out, stderr)
		}
	}
	// west has no CRD: an empty list, not an error.
	if out, stderr, err := testenv.Kubectl(kubeconfig, "--context", "west", "get", "crd"); err != nil || out != "" || !strings.Contains(stderr, "No resources found") {
		t.Fatalf("kubectl get crd --context west: %v\n%s%s", err, out, stderr)
	}

	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--context", "east", "logs", "-n", "web", "web-1"},
			`Error from server (MethodNotAllowed): Panorama only syncs objects and holds no logs; ask cluster "east" directly: kubectl --context <context of east> logs -n web pods/web-1`},
		// kubectl logs -f asks again each second on any Status until
		// --pod-running-timeout (20s by default), printing the message.
		{[]string{"--context", "east", "logs", "-f", "--pod-running-timeout=2s", "-n", "web", "web-1"}, "holds no logs"},
		// A read-only user: the WebSocket exec gets the message, without
		// falling back to a POST the host would deny.
		{[]string{"--context", "east", "exec", "-n", "web", "web-1", "--", "true"},
			`error: Panorama only syncs objects and cannot run commands in containers; ask cluster "east" directly: kubectl --context <context of east> exec -n web pods/web-1 -- <command>`},
	} {
		start := time.Now()
		_, stderr, err := testenv.Kubectl(kubeconfig, c.args...)
		if took := time.Since(start); err == nil || !strings.Contains(stderr, c.want) || took > 10*time.Second {
			t.Errorf("kubectl %v: %v after %v, stderr %q; want a failure at once saying %q", c.args, err, took, stderr, c.want)
		}
	}
}
