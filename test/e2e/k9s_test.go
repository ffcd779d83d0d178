package e2e

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"k8s.io/client-go/kubernetes"

	"github.com/panorama-io/panorama/test/testenv"
)

// testK9s drives k9s, a client nobody here wrote, as a user would, in
// tmux against Panorama through the host: the pods view of one cluster, of
// all clusters and of the flat view, describe, yaml, a change made in the member appearing
// live, and logs answered at once rather than waited for. Its user, kim,
// has what docs/usage.md tells to grant every user (the views' paths, reads
// and self reviews) and reads everything.
func testK9s(t *testing.T, host *testenv.Env, dir string, east kubernetes.Interface) {
	kubeconfig := userKubeconfig(t, host, dir, "kim")
	apply(t, host, dir, grant("kim-k9s", "", []string{pathsRule, readRule(`"*"`)}, "kim"))
	home := t.TempDir()
	k9s := func(t *testing.T, context string) (*testenv.Terminal, string) {
		t.Helper()
		log := filepath.Join(home, context+".log")
		t.Cleanup(func() {
			if t.Failed() {
				out, _ := os.ReadFile(log)
				t.Logf("k9s log:\n%s", out)
			}
		})
		// Its own config folders, so nothing of the machine's user leaks
		// in; read-only, since Panorama is.
		env := []string{"HOME=" + home, "XDG_CONFIG_HOME=" + home, "XDG_STATE_HOME=" + home, "XDG_DATA_HOME=" + home, "XDG_CACHE_HOME=" + home}
		return testenv.StartTerminal(t, 200, 50, env, filepath.Join(testenv.Assets(t), "k9s"),
			"--kubeconfig", kubeconfig, "--context", context, "--readonly", "--logoless", "--headless",
			"--logFile", log, "--command", "pods", "--all-namespaces"), log
	}

	t.Run("one cluster", func(t *testing.T) {
		term, log := k9s(t, "east")
		term.WaitFor(waitFor, "web-1", "web-4", "db-0") // web-0 is deleted by an earlier subtest

		createPod(t, east, "web", "k9s-live", "web")
		t.Cleanup(func() { deletePod(t, east, "web", "k9s-live") })
		term.WaitFor(waitFor, "k9s-live")

		// Filter down to one pod, then describe it and show its YAML (east
		// has a db-0 in namespace shop too, testFlatView's).
		term.Send("/", "web-1", "Enter")
		testenv.Eventually(t, waitFor, func() error {
			if screen := term.Screen(); !strings.Contains(screen, "web-1") || strings.Contains(screen, "db-0") {
				return fmt.Errorf("k9s has not filtered down to web-1:\n%s", screen)
			}
			return nil
		})
		term.Send("d")
		term.WaitFor(waitFor, "Name:", "web-1", "Namespace:", "web")
		term.Send("Escape")
		term.WaitFor(waitFor, "RESTARTS") // back in the pods list
		term.Send("y")
		term.WaitFor(waitFor, "apiVersion: v1", "kind: Pod", "name: web-1")
		term.Send("Escape")
		term.WaitFor(waitFor, "RESTARTS")

		// Panorama holds no logs, and its self review says so: k9s asks
		// before each try and gives up on "not authorized" rather than
		// retrying a 404. Its log view shows no error text of a refusal, only
		// its log file does, whatever the server answers (k9s v0.50.16,
		// internal/dao/pod.go tailLogs).
		term.Send("l")
		term.WaitFor(waitFor, "Waiting for logs")
		testenv.Eventually(t, waitFor, func() error {
			out, _ := os.ReadFile(log)
			if !strings.Contains(string(out), "user is not authorized to view pod logs") {
				return fmt.Errorf("k9s's log does not show the refusal of logs")
			}
			return nil
		})
	})

	t.Run("all clusters", func(t *testing.T) {
		term, _ := k9s(t, "all")
		term.WaitFor(waitFor, "web-1", "db-0", "api-2")
	})

	// db-0 of namespace shop in east and in west (testFlatView's) are one
	// row on the all-clusters context, which k9s keys by namespace/name;
	// two on the flat one.
	t.Run("flat", func(t *testing.T) {
		term, _ := k9s(t, "flat")
		term.WaitFor(waitFor, "east.shop", "west.shop", "web-1")
		testenv.Eventually(t, waitFor, func() error {
			var rows []string
			for _, line := range strings.Split(term.Screen(), "\n") {
				if strings.Contains(line, "shop") && strings.Contains(line, "db-0") {
					rows = append(rows, strings.Join(strings.Fields(line), " "))
				}
			}
			if len(rows) != 2 {
				return fmt.Errorf("rows of db-0 in namespaces *.shop: %q, want one of east.shop and one of west.shop", rows)
			}
			return nil
		})
	})
}
