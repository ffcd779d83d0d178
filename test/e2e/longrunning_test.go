package e2e

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"k8s.io/client-go/kubernetes"

	"github.com/panorama-io/panorama/apiserver"
	"github.com/panorama-io/panorama/test/testenv"
)

// hostRequestTimeout is TestAPIServer's host's --request-timeout (60s by
// default), short so that testLongWatch outlasts it quickly.
const hostRequestTimeout = 15 * time.Second

// testLongWatch runs `kubectl get pods -w` through the host on a view
// (clusters/east/proxy, which the host counts as long-running) and on the
// deprecated path (resources/clusters/east, which it takes for a short
// get): past the host's request timeout, the first still shows a change
// made in the member, the second has been cut.
func testLongWatch(t *testing.T, host *testenv.Env, kubeconfig string, eastKube kubernetes.Interface) {
	start := time.Now()
	view := startWatch(t, kubeconfig, "--context", "east", "get", "pods", "-n", "web", "-w")
	old := startWatch(t, kubeconfig, "--context", "host", "--server", host.Config.Host+apiserver.ResourcesPrefix+"/clusters/east", "get", "pods", "-n", "web", "-w")
	waitLine(t, view.lines, "web-4")
	waitLine(t, old.lines, "web-4")

	time.Sleep(time.Until(start.Add(hostRequestTimeout + 5*time.Second)))
	createPod(t, eastKube, "web", "after-host-timeout", "web")
	waitLine(t, view.lines, "after-host-timeout")
	select {
	case <-view.done:
		t.Fatal("kubectl -w on the view ended")
	default:
	}

	select {
	case <-old.done:
	case <-time.After(waitFor):
		t.Fatalf("kubectl -w on the deprecated path still runs %v after it started", time.Since(start))
	}
	if lived := old.ended.Sub(start); lived < hostRequestTimeout {
		t.Errorf("kubectl -w on the deprecated path ended after %v, before the host's timeout: %s", lived, old.stderr.String())
	}
	if !strings.Contains(old.stderr.String(), "deprecated") {
		t.Errorf("no deprecation warning on the deprecated path: %s", old.stderr.String())
	}
	for l := range old.lines {
		if strings.Contains(l, "after-host-timeout") {
			t.Errorf("the deprecated path's watch outlived the host's timeout: %q", l)
		}
	}
	t.Logf("kubectl -w on the deprecated path ended after %v: %s", old.ended.Sub(start), old.stderr.String())

	// The informer test after this one counts the pods.
	deletePod(t, eastKube, "web", "after-host-timeout")
	eventuallyT(t, func() error {
		if _, _, err := testenv.Kubectl(kubeconfig, "--context", "east", "get", "pod", "after-host-timeout", "-n", "web"); err == nil {
			return fmt.Errorf("pod after-host-timeout still served")
		}
		return nil
	})
}

// watchProc is a running `kubectl get -w`: its output lines; once done is
// closed, its standard error and when it ended.
type watchProc struct {
	lines  chan string
	done   chan struct{}
	stderr bytes.Buffer
	ended  time.Time
}

// startWatch starts `kubectl args...`, a `get -w`.
func startWatch(t *testing.T, kubeconfig string, args ...string) *watchProc {
	t.Helper()
	cmd := exec.Command(filepath.Join(os.Getenv("KUBEBUILDER_ASSETS"), "kubectl"), append([]string{"--kubeconfig", kubeconfig}, args...)...)
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	p := &watchProc{lines: make(chan string, 100), done: make(chan struct{})}
	cmd.Stderr = &p.stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		s := bufio.NewScanner(stdout)
		for s.Scan() {
			p.lines <- s.Text()
		}
		close(p.lines)
		_ = cmd.Wait()
		p.ended = time.Now()
		close(p.done)
	}()
	t.Cleanup(func() { _ = cmd.Process.Kill(); <-p.done })
	return p
}
