package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/panorama-io/panorama/test/testenv"
)

// TestPlugin runs `kubectl panorama` as its users would: the real kubectl
// of the test assets finds kubectl-panorama (the panorama binary under
// that name) and its completion hook on PATH, and runs them with the
// user's own kubeconfig against a running Panorama and two real members.
// Every answer is checked against the members' own objects; eve, whose
// grants name east only, learns nothing of west.
func TestPlugin(t *testing.T) {
	f := startClientFleet(t, "plug", fleetOptions{eveListsClusters: true})
	dir, eastKube, westKube, web := f.dir, f.eastKube, f.westKube, f.web
	ctx := context.Background()
	ada, eve := newPluginUser(t, dir, f.ada), newPluginUser(t, dir, f.eve)
	memberPods := f.memberPods(t, "plug", "east", "west")
	keysOf := `-o=jsonpath={range .items[*]}{.metadata.annotations.panorama\.io/cluster}/{.metadata.namespace}/{.metadata.name}{"\n"}{end}`
	eventuallyT(t, func() error {
		out, stderr, err := ada.run("search", "pods", "-A", "-l", "app=plug", keysOf)
		if err != nil {
			return fmt.Errorf("%v: %s", err, stderr)
		}
		if got := sortedLines(out); !slices.Equal(got, memberPods) {
			return fmt.Errorf("search has %v, the members %v", got, memberPods)
		}
		return nil
	})

	t.Run("search", func(t *testing.T) {
		// The default output is the server's Table: the member's columns
		// with CLUSTER, and NAMESPACE with -A, as kubectl get prints.
		table := strings.Split(strings.TrimSpace(ada.mustRun(t, "search", "pods", "-A", "-l", "app=plug")), "\n")
		if head := strings.Fields(table[0]); !slices.Equal(head[:3], []string{"NAMESPACE", "CLUSTER", "NAME"}) || !slices.Contains(head, "STATUS") {
			t.Errorf("header %q", table[0])
		}
		if len(table) != len(memberPods)+1 {
			t.Errorf("%d rows for the members' %d pods:\n%s", len(table)-1, len(memberPods), strings.Join(table, "\n"))
		}
		rows := ada.mustRun(t, "search", "pods", "-A", "-l", "app=plug", "--no-headers", "--show-labels")
		var got []string
		for _, row := range strings.Split(strings.TrimSpace(rows), "\n") {
			f := strings.Fields(row)
			got = append(got, f[1]+"/"+f[0]+"/"+f[2])
			if f[len(f)-1] != "app=plug" {
				t.Errorf("row %q ends without its labels", row)
			}
		}
		if slices.Sort(got); !slices.Equal(got, memberPods) {
			t.Errorf("rows without headers %v, the members %v", got, memberPods)
		}
		// -o custom-columns is kubectl get's printer over the objects.
		columns := ada.mustRun(t, "search", "pods", "-A", "-l", "app=plug", "--no-headers",
			`-o=custom-columns=CLUSTER:.metadata.annotations.panorama\.io/cluster,NAMESPACE:.metadata.namespace,NAME:.metadata.name`)
		got = nil
		for _, row := range strings.Split(strings.TrimSpace(columns), "\n") {
			got = append(got, strings.Join(strings.Fields(row), "/"))
		}
		if slices.Sort(got); !slices.Equal(got, memberPods) {
			t.Errorf("custom columns %v, the members %v", got, memberPods)
		}
		// -o name, json and yaml are kubectl's printers over the objects.
		names := sortedLines(ada.mustRun(t, "search", "pods", "-A", "-l", "app=plug", "-o", "name"))
		if want := []string{"pod/cart-0", "pod/cart-0", "pod/cart-1", "pod/cart-2"}; !slices.Equal(names, want) {
			t.Errorf("-o name %v, want %v", names, want)
		}
		var list struct {
			Kind  string
			Items []struct {
				Metadata metav1.ObjectMeta
			}
		}
		if err := json.Unmarshal([]byte(ada.mustRun(t, "search", "pods", "-A", "-l", "app=plug", "--clusters", "west", "-o", "json")), &list); err != nil {
			t.Fatal(err)
		}
		member, err := westKube.CoreV1().Pods("shop").Get(ctx, "cart-0", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if list.Kind != "List" || len(list.Items) != 1 || list.Items[0].Metadata.UID != member.UID {
			t.Errorf("west's pods as JSON %+v, want the member's cart-0 %s", list, member.UID)
		}
		if y := ada.mustRun(t, "search", "pods", "-n", "shop", "--cluster", "east", "--fuzzy-name", "art-1", "-o", "yaml"); !strings.Contains(y, "kind: List") ||
			!strings.Contains(y, "name: cart-1") || strings.Contains(y, "name: cart-0") {
			t.Errorf("east's pods of shop named *art-1* as YAML:\n%s", y)
		}
		// More search parameters: images, owners, one namespace.
		if got := sortedLines(ada.mustRun(t, "search", "pods", "-n", "shop", "--images", "nginx:1.27", "-o", "name")); !slices.Equal(got, []string{"pod/" + web.pod.Name}) {
			t.Errorf("pods of the image nginx:1.27: %v", got)
		}
		if got := sortedLines(ada.mustRun(t, "search", "pods", "-A", "--owner-name", web.Name, "--owner-gr", "deployments.apps", "--owner-seniority", "1", "-o", "name")); !slices.Equal(got, []string{"pod/" + web.pod.Name}) {
			t.Errorf("the Deployment's grandchildren: %v", got)
		}
		// A collection: objects of several kinds in one answer.
		if got := sortedLines(ada.mustRun(t, "search", "--collection", "workloads", "-A", "-o", "name")); !slices.Equal(got, []string{"deployment.apps/" + web.Name}) {
			t.Errorf("the workloads: %v, want east's Deployment", got)
		}
		if row := strings.Fields(ada.mustRun(t, "search", "--collection", "workloads", "-A", "--no-headers")); len(row) < 3 || row[0] != "shop" || row[1] != "east" || row[2] != "deployment.apps/"+web.Name {
			t.Errorf("the workloads' table row %v", row)
		}
		// Errors are kubectl's, exit code 1: the server's Status's message,
		// and "error: ..." for what the plugin refuses itself.
		_, stderr, err := ada.run("search", "nothings", "-A")
		if code := exitCode(err); code != 1 || !strings.HasPrefix(stderr, "error: ") || !strings.Contains(stderr, `"nothings"`) {
			t.Errorf("an unknown resource: exit %d, %q", code, stderr)
		}
		_, stderr, err = ada.run("search", "pods", "-A", "--owner-seniority", "x")
		if code := exitCode(err); code != 1 || !strings.HasPrefix(stderr, "Error from server (") || !strings.Contains(stderr, "ownerSeniority") {
			t.Errorf("a bad parameter: exit %d, %q", code, stderr)
		}
		_, stderr, err = ada.run("search", "-A")
		if code := exitCode(err); code != 1 || stderr != "error: name either a TYPE or a --collection\n" {
			t.Errorf("neither TYPE nor --collection: exit %d, %q", code, stderr)
		}
		// The plugin is the panorama binary, but it does not serve.
		out, stderr, err := ada.run("serve")
		if code := exitCode(err); code != 1 || !strings.HasPrefix(stderr, "error: kubectl-panorama does not serve") || out != "" {
			t.Errorf("kubectl panorama serve: exit %d, %q %q", code, out, stderr)
		}
	})

	t.Run("count", func(t *testing.T) {
		want := map[string]int{}
		for _, k := range memberPods {
			want[strings.Split(k, "/")[0]]++
		}
		got := map[string]int{}
		for _, row := range strings.Split(strings.TrimSpace(ada.mustRun(t, "count", "pods", "-A", "-l", "app=plug", "--no-headers")), "\n") {
			var cluster string
			var n int
			if _, err := fmt.Sscan(row, &cluster, &n); err != nil {
				t.Fatalf("row %q: %v", row, err)
			}
			got[cluster] = n
		}
		if fmt.Sprint(got) != fmt.Sprint(want) {
			t.Errorf("counts %v, the members hold %v", got, want)
		}
		if head := ada.mustRun(t, "count", "pods", "-A", "--group-by", "cluster,namespace"); !strings.HasPrefix(head, "CLUSTER") || !strings.Contains(strings.Split(head, "\n")[0], "NAMESPACE") {
			t.Errorf("count by cluster and namespace:\n%s", head)
		}
		// The server's Table, as kubectl get prints it: the period's
		// revision with -o wide only. Periods are kept per cluster and
		// value, so these count every pod.
		every := map[string]string{}
		for _, row := range strings.Split(strings.TrimSpace(ada.mustRun(t, "count", "pods", "-A", "--no-headers")), "\n") {
			if f := strings.Fields(row); len(f) == 2 {
				every[f[0]] = f[1]
			}
		}
		for _, tc := range []struct {
			args   []string
			header string
			cells  int
		}{
			{nil, "CLUSTER COUNT HELD SINCE", 3},
			{[]string{"-o", "wide"}, "CLUSTER COUNT HELD SINCE SINCE REVISION", 4},
		} {
			out := ada.mustRun(t, append([]string{"count", "pods", "-A", "--with-held-since"}, tc.args...)...)
			lines := strings.Split(strings.TrimSpace(out), "\n")
			if strings.Join(strings.Fields(lines[0]), " ") != tc.header || len(lines) != len(every)+1 || len(every) < 2 {
				t.Errorf("count %v:\n%s\nwithout periods %v", tc.args, out, every)
				continue
			}
			for _, row := range lines[1:] {
				if f := strings.Fields(row); len(f) != tc.cells || f[1] != every[f[0]] {
					t.Errorf("count %v: row %q, without periods %v", tc.args, row, every)
				}
			}
		}
	})

	t.Run("history and diff", func(t *testing.T) {
		deployments := eastKube.AppsV1().Deployments("shop")
		cur, err := deployments.Get(ctx, web.Name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		three := int32(3)
		cur.Spec.Replicas = &three
		if _, err := deployments.Update(ctx, cur, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
		var rows []string
		eventuallyT(t, func() error {
			out, stderr, err := ada.run("history", "deployment/"+web.Name, "--cluster", "east", "-n", "shop", "--no-headers")
			if err != nil {
				return fmt.Errorf("%v: %s", err, stderr)
			}
			if rows = strings.Split(strings.TrimSpace(out), "\n"); len(rows) != 2 {
				return fmt.Errorf("versions:\n%s", out)
			}
			return nil
		})
		first, second := strings.Fields(rows[0]), strings.Fields(rows[1])
		if first[2] != "ADDED" || second[2] != "MODIFIED" || !strings.Contains(second[len(second)-1], "spec.replicas") {
			t.Fatalf("versions %q: want ADDED, then MODIFIED changing spec.replicas", rows)
		}
		// As kubectl diff: exit status 1 when the versions differ.
		diff, stderr, err := ada.run("diff", "deployments.apps", web.Name, "--cluster", "east", "-n", "shop")
		if !strings.Contains(diff, "\n-  replicas: 1\n+  replicas: 3\n") || !strings.HasPrefix(diff, "--- east:") || strings.Contains(diff, "resourceVersion") ||
			exitCode(err) != 1 || stderr != "" {
			t.Errorf("the last change's diff (%v, %q):\n%s", err, stderr, diff)
		}
		if d := ada.mustRun(t, "diff", "deploy/"+web.Name, "--cluster", "east", "-n", "shop", "--from", first[0], "--to", first[0]); d != "" {
			t.Errorf("a version against itself:\n%s", d)
		}
	})

	t.Run("a user who may read east only", func(t *testing.T) {
		rows := eve.mustRun(t, "search", "pods", "-A", "-l", "app=plug", "--no-headers")
		if n := len(strings.Split(strings.TrimSpace(rows), "\n")); n != 3 || strings.Contains(rows, "west") {
			t.Errorf("eve's pods, want east's 3:\n%s", rows)
		}
		if c := eve.mustRun(t, "count", "pods", "-A", "--no-headers"); strings.Contains(c, "west") || !strings.HasPrefix(c, "east") {
			t.Errorf("eve's counts:\n%s", c)
		}
		_, stderr, err := eve.run("search", "pods", "-A", "--clusters", "west")
		if exitCode(err) != 1 || !strings.HasPrefix(stderr, "Error from server (Forbidden): ") {
			t.Errorf("eve searching west: %v %q", err, stderr)
		}
		for _, args := range [][]string{{"history", "pods/cart-0"}, {"diff", "pods/cart-0"}, {"search", "pods", "-A", "-o", "name"}} {
			out, stderr, err := eve.run(append(args, "--cluster", "west", "-n", "shop")...)
			want := 1
			if args[0] == "diff" {
				want = 2 // kubectl diff's failure, apart from its differences' 1
			}
			if exitCode(err) != want || strings.Contains(out, "cart") || !strings.HasPrefix(stderr, "Error from server (") {
				t.Errorf("eve's %v in west: %v %q %q, want exit status %d", args, err, out, stderr, want)
			}
		}
	})

	t.Run("completion", func(t *testing.T) {
		// The plugin's own, and kubectl's through kubectl_complete-panorama.
		for _, args := range [][]string{{"__complete", "search", ""}, {"__complete", "panorama", "search", ""}} {
			var out string
			if args[1] == "panorama" {
				out = ada.mustKubectl(t, args...)
			} else {
				out = ada.mustPlugin(t, args...)
			}
			words := strings.Fields(out)
			if !slices.Contains(words, "pods") || !slices.Contains(words, "deployments.apps") || slices.Contains(words, "pods/log") {
				t.Errorf("%v completes %v", args, words)
			}
		}
		if out := ada.mustPlugin(t, "__complete", "search", "pods", "--cluster", ""); !slices.Contains(strings.Fields(out), "east") || !slices.Contains(strings.Fields(out), "west") {
			t.Errorf("--cluster completes %q", out)
		}
		if out := ada.mustPlugin(t, "completion", "bash"); !strings.Contains(out, "__start_panorama") {
			t.Errorf("completion bash:\n%.300s", out)
		}
	})
}

// pluginUser runs kubectl with a user's kubeconfig and a PATH that holds
// kubectl-panorama and kubectl_complete-panorama.
type pluginUser struct {
	kubeconfig, path string
}

func newPluginUser(t *testing.T, dir, kubeconfig string) pluginUser {
	t.Helper()
	bin := filepath.Join(dir, "plugin-bin")
	if _, err := os.Stat(bin); os.IsNotExist(err) {
		if err := os.MkdirAll(bin, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink(filepath.Join(binDir, "panorama"), filepath.Join(bin, "kubectl-panorama")); err != nil {
			t.Fatal(err)
		}
		hook, err := os.ReadFile("../../plugins/kubectl_complete-panorama")
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(bin, "kubectl_complete-panorama"), hook, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	// The plugin reads the views through the host, as the user.
	if _, stderr, err := testenv.Kubectl(kubeconfig, "config", "use-context", "host"); err != nil {
		t.Fatalf("%v: %s", err, stderr)
	}
	return pluginUser{kubeconfig: kubeconfig, path: bin + string(os.PathListSeparator) + os.Getenv("PATH")}
}

// run is `kubectl panorama ARGS`. kubectl finds a plugin only before any
// flag, so the kubeconfig comes from KUBECONFIG.
func (u pluginUser) run(args ...string) (string, string, error) {
	return u.exec(filepath.Join(os.Getenv("KUBEBUILDER_ASSETS"), "kubectl"), append([]string{"panorama"}, args...)...)
}

func (u pluginUser) exec(name string, args ...string) (string, string, error) {
	cmd := exec.Command(name, args...)
	cmd.Env = append(os.Environ(), "PATH="+u.path, "KUBECONFIG="+u.kubeconfig)
	var stdout, stderr strings.Builder
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	return stdout.String(), stderr.String(), err
}

func (u pluginUser) mustRun(t *testing.T, args ...string) string {
	t.Helper()
	out, stderr, err := u.run(args...)
	if err != nil {
		t.Fatalf("kubectl panorama %v: %v\n%s", args, err, stderr)
	}
	return out
}

// mustPlugin runs kubectl-panorama itself.
func (u pluginUser) mustPlugin(t *testing.T, args ...string) string {
	t.Helper()
	out, stderr, err := u.exec(filepath.Join(strings.Split(u.path, string(os.PathListSeparator))[0], "kubectl-panorama"), args...)
	if err != nil {
		t.Fatalf("kubectl-panorama %v: %v\n%s", args, err, stderr)
	}
	return out
}

// mustKubectl runs kubectl itself with args.
func (u pluginUser) mustKubectl(t *testing.T, args ...string) string {
	t.Helper()
	out, stderr, err := u.exec(filepath.Join(os.Getenv("KUBEBUILDER_ASSETS"), "kubectl"), args...)
	if err != nil {
		t.Fatalf("kubectl %v: %v\n%s", args, err, stderr)
	}
	return out
}

func sortedLines(s string) []string {
	lines := strings.Fields(s)
	slices.Sort(lines)
	return lines
}

func exitCode(err error) int {
	if e, ok := err.(*exec.ExitError); ok {
		return e.ExitCode()
	}
	if err != nil {
		return -1
	}
	return 0
}
