package e2e

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	searchv1alpha1 "github.com/panorama-io/panorama/apis/search/v1alpha1"
	"github.com/panorama-io/panorama/test/testenv"
)

// testCounts reads counts with real kubectl, as JSON (get --raw) and as
// the Table kubectl get asks for, across the members TestAPIServer fills:
// east has web-0..4 (app=web) and db-0 (app=db) in web, west api-0..2
// (app=api) in default. carol may list pods in namespace web only.
func testCounts(t *testing.T, alice, carol string) {
	groups := func(raw string) string {
		t.Helper()
		var c searchv1alpha1.Counts
		if err := json.Unmarshal([]byte(raw), &c); err != nil || c.Kind != "Counts" || c.ResourceVersion == "" {
			t.Fatalf("counts: %v %s", err, raw)
		}
		var out []string
		for _, it := range c.Items {
			var values []string
			for _, term := range c.GroupBy {
				values = append(values, it.Group[term])
			}
			out = append(out, fmt.Sprintf("%s=%d", strings.Join(values, "/"), it.Count))
		}
		return strings.Join(out, " ")
	}

	raw, _ := kubectlOut(t, alice, "get", "--raw", "/api/v1/pods?groupBy=cluster,label:app")
	if got := groups(raw); got != "east/web=5 west/api=3 east/db=1" {
		t.Errorf("alice by cluster and app: %s", got)
	}
	raw, _ = kubectlOut(t, alice, "--context", "east", "get", "--raw", "/api/v1/pods?groupBy=namespace&labelSelector=app%3Dweb")
	if got := groups(raw); got != "web=5" {
		t.Errorf("alice on east, app=web by namespace: %s", got)
	}

	// kubectl get can carry groupBy only as a search label; it prints the
	// Table of the count (NAMESPACE is kubectl's own for -A, empty).
	out, _ := kubectlOut(t, alice, "get", "pods", "-A", "-l", "search.panorama.io/groupBy=cluster,search.panorama.io/groupBy=label.app")
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if strings.Join(strings.Fields(lines[0]), " ") != "NAMESPACE CLUSTER LABEL:APP COUNT" || len(lines) != 4 ||
		strings.Join(strings.Fields(lines[1]), " ") != "east web 5" || strings.Join(strings.Fields(lines[3]), " ") != "east db 1" {
		t.Errorf("kubectl get by cluster and app:\n%s", out)
	}
	out, _ = kubectlOut(t, alice, "--context", "west", "get", "pods", "-n", "default", "-l", "search.panorama.io/groupBy=label.app")
	if lines := strings.Split(strings.TrimSpace(out), "\n"); len(lines) != 2 || strings.Join(strings.Fields(lines[1]), " ") != "api 3" {
		t.Errorf("kubectl get on west by app:\n%s", out)
	}

	// carol counts only what she may list: namespace web.
	raw, _ = kubectlOut(t, carol, "get", "--raw", "/api/v1/namespaces/web/pods?groupBy=cluster")
	if got := groups(raw); got != "east=6" {
		t.Errorf("carol in web by cluster: %s", got)
	}
	out, stderr := kubectlOut(t, carol, "get", "pods", "-A", "-l", "search.panorama.io/groupBy=namespace,search.panorama.io/namespaces in (web,default)")
	if lines := strings.Split(strings.TrimSpace(out), "\n"); len(lines) != 2 || !strings.Contains(lines[1], "web") ||
		!strings.Contains(stderr, "1 namespaces left out of pods") {
		t.Errorf("carol in web and default by namespace:\n%s\n%s", out, stderr)
	}
	if _, stderr, err := testenv.Kubectl(carol, "get", "pods", "-A", "-l", "search.panorama.io/groupBy=cluster"); err == nil || !strings.Contains(stderr, "Forbidden") {
		t.Errorf("carol across namespaces: %v %s", err, stderr)
	}
	if _, stderr, err := testenv.Kubectl(alice, "get", "--raw", "/api/v1/pods?groupBy=name"); err == nil || !strings.Contains(stderr, "BadRequest") {
		t.Errorf("groupBy=name: %v %s", err, stderr)
	}
}
