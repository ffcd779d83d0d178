package e2e

import (
	"bufio"
	"context"
	"crypto/tls"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/dynamic/dynamicinformer"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	searchv1alpha1 "github.com/panorama-io/panorama/apis/search/v1alpha1"
	"github.com/panorama-io/panorama/internal/viewconfig"
	"github.com/panorama-io/panorama/storage/storagetest"
	"github.com/panorama-io/panorama/test/testenv"
)

const waitFor = 90 * time.Second

// TestAPIServer runs Panorama as it runs in a cluster: the controller
// manager and the API server as processes sharing MariaDB, the API server
// registered as an APIService of a real host kube-apiserver, two real
// member clusters, and real kubectl and client-go talking to the host.
func TestAPIServer(t *testing.T) {
	// A short request timeout, which the host applies to every request it
	// does not count as long-running; see testLongWatch.
	host := testenv.Start(t, testenv.WithAggregation(t), testenv.WithFlags(map[string]string{"request-timeout": hostRequestTimeout.String()}))
	east := testenv.Start(t, testenv.WithoutCRDs())
	west := testenv.Start(t, testenv.WithoutCRDs())
	eastKube, westKube := kubernetes.NewForConfigOrDie(east.Config), kubernetes.NewForConfigOrDie(west.Config)
	db := storagetest.Backends()[1].Options(t)

	createNS(t, eastKube, "web")
	for i := range 5 {
		createPod(t, eastKube, "web", fmt.Sprintf("web-%d", i), "web")
	}
	createPod(t, eastKube, "web", "db-0", "db")
	for i := range 3 {
		createPod(t, westKube, "default", fmt.Sprintf("api-%d", i), "api")
	}

	dir := t.TempDir()
	apply(t, east, dir, widgetCRD)
	east.Kubectl(t, "wait", "--for", "condition=established", "crd/widgets.example.com")
	apply(t, east, dir, "apiVersion: example.com/v1\nkind: Widget\nmetadata: {name: big, namespace: web}\nspec: {size: 42}\n")
	apply(t, east, dir, authzMemberObjects[0])
	apply(t, west, dir, authzMemberObjects[1])
	apply(t, host, dir, clustersManifest(t, east, west))
	api, port := startRegistered(t, host, dir, db.DSN)

	alice := userKubeconfig(t, host, dir, "alice")
	bob := userKubeconfig(t, host, dir, "bob")
	carol := userKubeconfig(t, host, dir, "carol")
	dave := userKubeconfig(t, host, dir, "dave")
	mallory := userKubeconfig(t, host, dir, "mallory")
	tina := userKubeconfig(t, host, dir, "tina")
	sam := userKubeconfig(t, host, dir, "sam")
	root := userKubeconfig(t, host, dir, "root", "system:masters")
	apply(t, host, dir, rbacManifest)
	kubectl := func(t *testing.T, kubeconfig string, args ...string) string {
		t.Helper()
		out, stderr, err := testenv.Kubectl(kubeconfig, args...)
		if err != nil {
			t.Fatalf("kubectl %v: %v\n%s", args, err, stderr)
		}
		return out
	}
	rows := func(out string) []string {
		lines := strings.Split(strings.TrimSpace(out), "\n")
		return lines[1:]
	}
	eventuallyT(t, func() error {
		out, stderr, err := testenv.Kubectl(alice, "get", "pods", "-A")
		if err != nil {
			return fmt.Errorf("%v: %s", err, stderr)
		}
		if n := len(rows(out)); n != 9 {
			return fmt.Errorf("%d pods listed:\n%s", n, out)
		}
		return nil
	})

	t.Run("kubectl get across clusters", func(t *testing.T) {
		out := kubectl(t, alice, "get", "pods", "-A")
		header := strings.Fields(strings.Split(out, "\n")[0])
		if strings.Join(header, " ") != "NAMESPACE CLUSTER NAME READY STATUS RESTARTS AGE" {
			t.Fatalf("header %v", header)
		}
		if !strings.Contains(out, "east") || !strings.Contains(out, "west") || !strings.Contains(out, "api-2") || !strings.Contains(out, "Pending") {
			t.Fatalf("output:\n%s", out)
		}
	})
	t.Run("one cluster through a context", func(t *testing.T) {
		out := kubectl(t, alice, "--context", "east", "get", "pods", "-n", "web")
		if r := rows(out); len(r) != 6 || strings.Contains(out, "west") {
			t.Fatalf("east pods:\n%s", out)
		}
		out = kubectl(t, alice, "--context", "west", "get", "po", "-A")
		if r := rows(out); len(r) != 3 {
			t.Fatalf("west pods:\n%s", out)
		}
	})
	t.Run("selectors and search parameters", func(t *testing.T) {
		if r := rows(kubectl(t, alice, "get", "pods", "-A", "-l", "app=web")); len(r) != 5 {
			t.Fatalf("app=web: %v", r)
		}
		if r := rows(kubectl(t, alice, "get", "pods", "-A", "--field-selector", "metadata.name=web-1")); len(r) != 1 || !strings.Contains(r[0], "web-1") {
			t.Fatalf("field selector: %v", r)
		}
		if r := rows(kubectl(t, alice, "get", "pods", "-A", "-l", "search.panorama.io/clusters=west")); len(r) != 3 {
			t.Fatalf("clusters=west: %v", r)
		}
		if r := rows(kubectl(t, alice, "get", "pods", "-A", "-l", "app in (web,db),search.panorama.io/fuzzyName=0")); len(r) != 2 {
			t.Fatalf("fuzzy name: %v", r)
		}
		raw := kubectl(t, alice, "get", "--raw", "/api/v1/pods?clusters=east&orderby=name%20desc&limit=2&withRemainingCount=true")
		var list struct {
			Metadata metav1.ListMeta `json:"metadata"`
			Items    []struct {
				Metadata metav1.ObjectMeta `json:"metadata"`
			} `json:"items"`
		}
		if err := json.Unmarshal([]byte(raw), &list); err != nil {
			t.Fatal(err)
		}
		if len(list.Items) != 2 || list.Items[0].Metadata.Name != "web-4" || list.Items[1].Metadata.Name != "web-3" ||
			list.Metadata.Continue == "" || list.Metadata.RemainingItemCount == nil || *list.Metadata.RemainingItemCount != 4 {
			t.Fatalf("ordered page: %s", raw)
		}
	})
	t.Run("counts", func(t *testing.T) { testCounts(t, alice, carol) })
	t.Run("history", func(t *testing.T) { testHistory(t, alice, carol, eastKube) }) // history_test.go
	t.Run("output formats", func(t *testing.T) {
		out := kubectl(t, alice, "--context", "east", "get", "pod", "web-1", "-n", "web", "-o", "yaml")
		for _, want := range []string{"name: web-1", "panorama.io/cluster: east", "app: web"} {
			if !strings.Contains(out, want) {
				t.Fatalf("-o yaml lacks %q:\n%s", want, out)
			}
		}
		if out := kubectl(t, alice, "get", "pods", "-A", "-o", "wide"); !strings.Contains(strings.Split(out, "\n")[0], "NODE") {
			t.Fatalf("-o wide:\n%s", out)
		}
		if out := kubectl(t, alice, "--context", "east", "get", "pods", "-n", "web", "--show-labels"); !strings.Contains(out, "app=web") {
			t.Fatalf("--show-labels:\n%s", out)
		}
		if out := kubectl(t, alice, "get", "pods", "-A", "-o", "name"); len(strings.Fields(out)) != 9 {
			t.Fatalf("-o name:\n%s", out)
		}
	})
	t.Run("custom resource columns", func(t *testing.T) {
		var out string
		eventuallyT(t, func() error {
			var stderr string
			var err error
			if out, stderr, err = testenv.Kubectl(alice, "--context", "east", "get", "widgets", "-A"); err != nil {
				return fmt.Errorf("%v: %s", err, stderr)
			}
			return nil
		})
		lines := strings.Split(strings.TrimSpace(out), "\n")
		if len(lines) != 2 || strings.Join(strings.Fields(lines[0]), " ") != "NAMESPACE CLUSTER NAME SIZE" || !strings.Contains(lines[1], "42") {
			t.Fatalf("widgets:\n%s", out)
		}
	})
	t.Run("kubectl watch", func(t *testing.T) {
		cmd := exec.Command(filepath.Join(os.Getenv("KUBEBUILDER_ASSETS"), "kubectl"), "--kubeconfig", alice, "--context", "east", "get", "pods", "-n", "web", "-w")
		stdout, _ := cmd.StdoutPipe()
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		defer func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }()
		lines := make(chan string, 100)
		go func() {
			s := bufio.NewScanner(stdout)
			for s.Scan() {
				lines <- s.Text()
			}
			close(lines)
		}()
		// The initial listing first, then the event.
		waitLine(t, lines, "web-4")
		createPod(t, eastKube, "web", "watched", "web")
		waitLine(t, lines, "watched")
	})
	t.Run("watch outlives the host's request timeout", func(t *testing.T) { testLongWatch(t, host, alice, eastKube) })
	t.Run("informer across clusters", func(t *testing.T) {
		cfg, err := clientcmd.BuildConfigFromFlags("", alice)
		if err != nil {
			t.Fatal(err)
		}
		// The "all" context's server is the host's URL + searchv1alpha1.ViewPath("").
		inf := dynamicinformer.NewDynamicSharedInformerFactory(dynamic.NewForConfigOrDie(cfg), 0).
			ForResource(schema.GroupVersionResource{Version: "v1", Resource: "pods"}).Informer()
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
		defer cancel()
		go inf.Run(ctx.Done())
		if !cache.WaitForCacheSync(ctx.Done(), inf.HasSynced) {
			t.Fatal("informer did not sync")
		}
		has := func(name string, want bool) {
			t.Helper()
			eventuallyT(t, func() error {
				for _, k := range inf.GetStore().ListKeys() {
					if strings.HasSuffix(k, "/"+name) {
						if want {
							return nil
						}
						return fmt.Errorf("%s still in the informer", name)
					}
				}
				if want {
					return fmt.Errorf("%s not in the informer (%d keys)", name, len(inf.GetStore().ListKeys()))
				}
				return nil
			})
		}
		if n := len(inf.GetStore().ListKeys()); n != 10 {
			t.Fatalf("informer has %d pods, want 10", n)
		}
		createPod(t, westKube, "default", "api-new", "api")
		has("api-new", true)
		deletePod(t, eastKube, "web", "web-0")
		has("web-0", false)
		api.restart()
		waitReady(t, port)
		createPod(t, westKube, "default", "after-restart", "api")
		has("after-restart", true)
		deletePod(t, westKube, "default", "api-1")
		has("api-1", false)
	})
	t.Run("authorization", func(t *testing.T) {
		// A cluster named like a shape of the deprecated paths would be
		// granted to everyone there.
		if _, stderr, err := testenv.Kubectl(alice, "--context", "host", "get", "--raw", searchv1alpha1.ViewPath("api")+"/api/v1/pods"); err == nil || !strings.Contains(stderr, "Forbidden") {
			t.Errorf("cluster named api: %v %s", err, stderr)
		}
		_, stderr, err := testenv.Kubectl(mallory, "get", "pods", "-A")
		if err == nil || !strings.Contains(stderr, "Forbidden") {
			t.Fatalf("mallory: %v %s", err, stderr)
		}
		// bob may read cluster east only: across clusters he gets east's.
		out, stderr, err := testenv.Kubectl(bob, "get", "pods", "-A", "-o", "custom-columns=NAME:.metadata.name")
		if err != nil || !strings.Contains(stderr, "clusters you may not list pods in are left out") || strings.Contains(stderr, "west") {
			t.Fatalf("bob across clusters: %v %s", err, stderr)
		}
		eastOnly := rows(kubectl(t, bob, "--context", "east", "get", "pods", "-A", "-o", "custom-columns=NAME:.metadata.name"))
		if len(eastOnly) == 0 || !slices.Equal(rows(out), eastOnly) {
			t.Fatalf("bob across clusters got %q, east alone %q", rows(out), eastOnly)
		}
		if out, stderr, err := testenv.Kubectl(bob, "--context", "west", "get", "pods", "-A"); err == nil {
			t.Fatalf("bob on west must not even see it (discovery of west is 404): %s %s", out, stderr)
		}
		if _, stderr, err := testenv.Kubectl(bob, "--context", "west", "get", "--raw", "/api/v1/pods"); err == nil || !strings.Contains(stderr, "Forbidden") {
			t.Fatalf("bob reads west: %v %s", err, stderr)
		}
		testAuthzMatrix(t, map[string]string{"alice": alice, "bob": bob, "carol": carol, "dave": dave, "mallory": mallory,
			"tina": tina, "sam": sam})
		testAnonymousRefused(t, host)
		// carol may read pods in namespace web of every cluster, nothing else.
		if r := rows(kubectl(t, carol, "get", "pods", "-n", "web")); len(r) == 0 {
			t.Fatal("carol sees no pods in web")
		}
		if r := rows(kubectl(t, carol, "--context", "east", "get", "pods", "-n", "web")); len(r) == 0 {
			t.Fatal("carol sees no pods in web of east")
		}
		for _, args := range [][]string{
			{"get", "pods", "-A"}, // across namespaces needs a cluster-wide grant, as in kube
			{"get", "--raw", "/api/v1/namespaces/kube-system/pods"},
			{"get", "--raw", "/api/v1/namespaces"}, // another resource type
		} {
			if _, stderr, err := testenv.Kubectl(carol, args...); err == nil || !strings.Contains(stderr, "Forbidden") {
				t.Errorf("carol %v: %v %s", args, err, stderr)
			}
		}
	})
	t.Run("version and self reviews", func(t *testing.T) { testVersionAndReviews(t, host, east, dir, alice, bob) })
	t.Run("bad requests", func(t *testing.T) {
		for _, c := range []struct {
			args []string
			want string
		}{
			{[]string{"get", "--raw", "/api/v1/pods?ownerSeniority=abc"}, "BadRequest"},
			{[]string{"get", "--raw", "/api/v1/pods?resourceVersionMatch=Exact"}, "BadRequest"},
			{[]string{"get", "--raw", "/api/v1/pods?continue=garbage"}, "BadRequest"},
			{[]string{"get", "--raw", "/api/v1/pods?fieldSelector=spec.secret%3Dx"}, "BadRequest"},
			{[]string{"get", "pods", "-A", "-l", "search.panorama.io/bogus=1"}, "unknown search label"},
			{[]string{"--context", "east", "get", "pod", "nope", "-n", "web"}, "NotFound"},
			{[]string{"--context", "east", "delete", "pod", "web-1", "-n", "web"}, "Forbidden"}, // by the host: alice may only read
			{[]string{"--context", "host", "get", "--raw", searchv1alpha1.ViewPath("nowhere") + "/api/v1/pods"}, "NotFound"},
		} {
			_, stderr, err := testenv.Kubectl(alice, c.args...)
			if err == nil || !strings.Contains(stderr, c.want) {
				t.Errorf("kubectl %v: err %v, stderr %q; want %q", c.args, err, stderr, c.want)
			}
		}
		// A user the host lets write reaches Panorama, which refuses writes.
		for _, args := range [][]string{
			{"--context", "east", "delete", "pod", "web-1", "-n", "web"},
			{"--context", "east", "label", "pod", "web-1", "-n", "web", "x=y"},
		} {
			if _, stderr, err := testenv.Kubectl(root, args...); err == nil || !strings.Contains(stderr, "MethodNotAllowed") {
				t.Errorf("root kubectl %v: err %v, stderr %q; want MethodNotAllowed", args, err, stderr)
			}
		}
	})
	t.Run("CRDs and subresources", func(t *testing.T) { testCRDsAndSubresources(t, alice) })
	t.Run("kubectl explain", func(t *testing.T) { testExplain(t, alice) }) // openapi_test.go
	t.Run("flat view", func(t *testing.T) { testFlatView(t, alice, carol, eastKube, westKube) })
	t.Run("k9s", func(t *testing.T) { testK9s(t, host, dir, eastKube) }) // after the flat view, whose pods it shows
	t.Run("images and indexed fields", func(t *testing.T) { testImages(t, host, dir, alice, eastKube, westKube) })
	t.Run("held since", func(t *testing.T) { testHeldSince(t, alice, carol, eastKube) }) // heldsince_test.go
}

func waitLine(t *testing.T, lines <-chan string, want string) {
	t.Helper()
	deadline := time.After(waitFor)
	for {
		select {
		case l, ok := <-lines:
			if !ok {
				t.Fatalf("kubectl -w ended before %q", want)
			}
			if strings.Contains(l, want) {
				return
			}
		case <-deadline:
			t.Fatalf("kubectl -w did not show %q", want)
		}
	}
}

func eventuallyT(t *testing.T, f func() error) {
	t.Helper()
	testenv.Eventually(t, waitFor, f)
}

func freePort(t testing.TB) int {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

func waitReady(t testing.TB, port int) {
	t.Helper()
	client := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}, Timeout: 2 * time.Second}
	testenv.Eventually(t, waitFor, func() error {
		resp, err := client.Get(fmt.Sprintf("https://127.0.0.1:%d/readyz", port))
		if err != nil {
			return err
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			return fmt.Errorf("readyz: %s", resp.Status)
		}
		return nil
	})
}

var applyMu sync.Mutex

func apply(t *testing.T, env *testenv.Env, dir, manifest string) {
	t.Helper()
	applyMu.Lock()
	defer applyMu.Unlock()
	f := filepath.Join(dir, fmt.Sprintf("manifest-%d.yaml", time.Now().UnixNano()))
	if err := os.WriteFile(f, []byte(manifest), 0o600); err != nil {
		t.Fatal(err)
	}
	env.Kubectl(t, "apply", "-f", f)
}

func clustersManifest(t *testing.T, members ...*testenv.Env) string {
	return namedClustersManifest(t, []string{"east", "west"}[:len(members)], members)
}

// namedClustersManifest makes a Cluster names[i] of members[i] each, with
// its kubeconfig Secret in panorama-system.
func namedClustersManifest(t *testing.T, names []string, members []*testenv.Env) string {
	var b strings.Builder
	b.WriteString("apiVersion: v1\nkind: Namespace\nmetadata:\n  name: panorama-system\n")
	for i, m := range members {
		name := names[i]
		kc, err := os.ReadFile(m.Kubeconfig)
		if err != nil {
			t.Fatal(err)
		}
		data, _ := json.Marshal(map[string]string{"kubeconfig": string(kc)})
		fmt.Fprintf(&b, "---\napiVersion: v1\nkind: Secret\nmetadata:\n  name: %s\n  namespace: panorama-system\n  annotations: {cluster.panorama.io/clusters: %[1]s}\nstringData: %s\n", name, data)
		fmt.Fprintf(&b, `---
apiVersion: cluster.panorama.io/v1alpha1
kind: Cluster
metadata:
  name: %s
spec:
  kubeconfigSecretRef: {namespace: panorama-system, name: %s}
  syncAllCustomResources: true
  syncResources:
  - group: ""
    resources: [pods, namespaces, secrets]
  - group: apps
    resources: [deployments, statefulsets]
`, name, name)
	}
	return b.String()
}

const widgetCRD = `apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: widgets.example.com
spec:
  group: example.com
  scope: Namespaced
  names: {plural: widgets, singular: widget, kind: Widget, listKind: WidgetList}
  versions:
  - name: v1
    served: true
    storage: true
    schema:
      openAPIV3Schema:
        type: object
        description: A widget, which east alone defines.
        x-kubernetes-preserve-unknown-fields: true
    additionalPrinterColumns:
    - {name: Size, type: integer, jsonPath: .spec.size}
`

// failIfDenied fails the test, when it ends, if the host refused one of
// the processes (run as the shipped ServiceAccounts) anything: whatever
// they need and are not shipped with.
func failIfDenied(t *testing.T, procs ...*process) {
	t.Cleanup(func() {
		for _, p := range procs {
			if line := deniedLine(p.output()); line != "" {
				t.Errorf("%s was denied a request under its shipped RBAC: %s", p.name, line)
			}
		}
	})
}

// deniedLine is the first log line saying the host refused one of the
// shipped ServiceAccounts something ("" when none).
func deniedLine(log string) string {
	for _, line := range strings.Split(log, "\n") {
		// The tunnel endpoint's refusal of an agent bound to another
		// Cluster names that agent's ServiceAccount forbidden: no denial
		// of the component's own.
		if strings.Contains(line, `"refused a tunnel"`) {
			continue
		}
		if strings.Contains(line, "forbidden") && strings.Contains(line, "system:serviceaccount:"+testenv.ShippedNamespace+":") {
			return line
		}
	}
	return ""
}

// userKubeconfig writes a kubeconfig for a new user of the host with a
// context per view: all clusters (the default), east and west.
func userKubeconfig(t *testing.T, host *testenv.Env, dir, name string, groups ...string) string {
	user, err := host.Env.AddUser(envtest.User{Name: name, Groups: groups}, nil)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, name+".kubeconfig")
	if err := viewconfig.Write(path, user.Config(), name, "east", "west"); err != nil {
		t.Fatal(err)
	}
	return path
}

func createNS(t *testing.T, c kubernetes.Interface, name string) {
	t.Helper()
	if _, err := c.CoreV1().Namespaces().Create(context.Background(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
}

func createPod(t *testing.T, c kubernetes.Interface, ns, name, app string) {
	t.Helper()
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: map[string]string{"app": app}},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "nginx"}}},
	}
	if _, err := c.CoreV1().Pods(ns).Create(context.Background(), pod, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
}

func deletePod(t *testing.T, c kubernetes.Interface, ns, name string) {
	t.Helper()
	zero := int64(0)
	if err := c.CoreV1().Pods(ns).Delete(context.Background(), name, metav1.DeleteOptions{GracePeriodSeconds: &zero}); err != nil {
		t.Fatal(err)
	}
}
