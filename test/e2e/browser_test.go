package e2e

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"image/png"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	searchv1alpha1 "github.com/panorama-io/panorama/apis/search/v1alpha1"
	"github.com/panorama-io/panorama/test/testenv"
)

// hostile is what a member's contents may hold to attack the page: shown,
// it must stay text.
const hostile = `<img src=x onerror="window.__pwned=1;alert(1)">`

// TestBrowser drives the search page in Debian's chromium (test/e2e/browser,
// playwright-core) through `kubectl proxy` as two users of a real host,
// against a running Panorama and two real members, and compares what the
// page showed with the members' own objects: the results and counts, a
// bar's filter, a new object arriving live, an object's YAML, Events and
// the diff of a change made in the member, the list as of a past revision.
// eve, whose grants name east only, sees nothing of west, on the page
// across clusters and on east's. Member contents that hold markup show as
// text and run nothing.
func TestBrowser(t *testing.T) {
	script := browserScript(t)
	artifacts := os.Getenv("PANORAMA_ARTIFACTS")
	if artifacts == "" {
		artifacts = t.TempDir()
	}
	artifacts = filepath.Join(artifacts, "browser")
	t.Logf("screenshots in %s", artifacts)

	// eve may not list the host's Clusters, so the page finds hers by
	// counting.
	f := startClientFleet(t, "web", fleetOptions{alsoSync: ", configmaps", before: func(eastKube, westKube kubernetes.Interface) {
		ctx := context.Background()
		createPod(t, westKube, "shop", "cart-9", "other")
		// A pod whose status reason, annotation and Event are markup.
		evil := &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "evil", Labels: map[string]string{"app": "web"}, Annotations: map[string]string{"note": hostile}},
			Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "nginx"}}},
		}
		evil, err := eastKube.CoreV1().Pods("shop").Create(ctx, evil, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		evil.Status.Reason = hostile
		if evil, err = eastKube.CoreV1().Pods("shop").UpdateStatus(ctx, evil, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
		if _, err := eastKube.CoreV1().Events("shop").Create(ctx, &corev1.Event{
			ObjectMeta:     metav1.ObjectMeta{Name: "evil.1"},
			InvolvedObject: corev1.ObjectReference{Kind: "Pod", Namespace: "shop", Name: "evil", UID: evil.UID, APIVersion: "v1"},
			Type:           corev1.EventTypeWarning, Reason: "Failed", Message: hostile, Source: corev1.EventSource{Component: "kubelet"},
			FirstTimestamp: metav1.Now(), LastTimestamp: metav1.Now(), Count: 1,
		}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}})
	dir, eastKube, westKube, adaKC, eveKC := f.dir, f.eastKube, f.westKube, f.ada, f.eve
	ctx := context.Background()
	wantPods := f.memberPods(t, "web", "east", "west")
	eventuallyT(t, func() error {
		out, _, err := testenv.Kubectl(adaKC, "get", "pods", "-A", "-l", "app=web", "--no-headers")
		if err != nil || strings.Count(out, "\n") != len(wantPods) {
			return fmt.Errorf("Panorama has %q %v, the members %d pods", out, err, len(wantPods))
		}
		return nil
	})

	// A change in the member, for the history's diff.
	cart1, err := eastKube.CoreV1().Pods("shop").Get(ctx, "cart-1", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	cart1.Annotations = map[string]string{"changed-by": "the-browser-test"}
	if _, err := eastKube.CoreV1().Pods("shop").Update(ctx, cart1, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	historyPath := searchv1alpha1.ViewPath("east") + "/api/v1/namespaces/shop/pods/cart-1/history"
	eventuallyT(t, func() error {
		out, _, err := testenv.Kubectl(adaKC, "--context", "host", "get", "--raw", historyPath)
		if err != nil || !strings.Contains(out, "the-browser-test") {
			return fmt.Errorf("history %q %v", out, err)
		}
		return nil
	})
	// Member contents the history must rebuild as they were: a ConfigMap
	// whose "__proto__" key changes, and one deleted and re-created, whose
	// new incarnation has none of the old one's labels.
	proto, err := eastKube.CoreV1().ConfigMaps("shop").Create(ctx, &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: "proto"}, Data: map[string]string{"__proto__": "before", "a": "1"},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	reborn := func(labels map[string]string) {
		t.Helper()
		if _, err := eastKube.CoreV1().ConfigMaps("shop").Create(ctx, &corev1.ConfigMap{
			ObjectMeta: metav1.ObjectMeta{Name: "reborn", Labels: labels},
		}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	reborn(map[string]string{"incarnation": "first"})
	configMapHistory := func(name, want string) {
		t.Helper()
		path := searchv1alpha1.ViewPath("east") + "/api/v1/namespaces/shop/configmaps/" + name + "/history"
		eventuallyT(t, func() error {
			out, _, err := testenv.Kubectl(adaKC, "--context", "host", "get", "--raw", path)
			if err != nil || !strings.Contains(out, want) {
				return fmt.Errorf("%s's history %q %v, want %q", name, out, err, want)
			}
			return nil
		})
	}
	// Each change once Panorama has the one before, so that it is a
	// version of its own.
	configMapHistory("proto", `"__proto__":"before"`)
	proto.Data["__proto__"] = "after"
	if _, err := eastKube.CoreV1().ConfigMaps("shop").Update(ctx, proto, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	configMapHistory("proto", `"__proto__":"after"`)
	configMapHistory("reborn", "first")
	if err := eastKube.CoreV1().ConfigMaps("shop").Delete(ctx, "reborn", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	configMapHistory("reborn", "DELETED")
	reborn(map[string]string{"incarnation-two": "second"})
	configMapHistory("reborn", "incarnation-two")

	// The revision before the live pod comes, for asOf.
	var list metav1.List
	raw, _, err := testenv.Kubectl(adaKC, "--context", "host", "get", "--raw", searchv1alpha1.ViewPath("")+"/api/v1/pods?labelSelector=app%3Dweb")
	if err != nil || json.Unmarshal([]byte(raw), &list) != nil || list.ResourceVersion == "" {
		t.Fatalf("the list's revision: %v %.200s", err, raw)
	}

	t.Run("ada", func(t *testing.T) {
		proxy := kubectlProxy(t, adaKC, "--context", "host")
		ready := filepath.Join(dir, "ada.ready")
		go func() { // the live pod, once the page watches
			for range 600 {
				if _, err := os.Stat(ready); err == nil {
					live := &corev1.Pod{
						ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "live-0", Labels: map[string]string{"app": "web"}},
						Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "nginx"}}},
					}
					if _, err := westKube.CoreV1().Pods("shop").Create(ctx, live, metav1.CreateOptions{}); err != nil {
						t.Errorf("the live pod: %v", err) // not Fatal: this is not the test's goroutine
					}
					return
				}
				time.Sleep(100 * time.Millisecond)
			}
		}()
		// PANORAMA_README_SCREENSHOT=docs/images/search-page.png writes README's.
		readme := os.Getenv("PANORAMA_README_SCREENSHOT")
		got := runPage(t, script, artifacts, "ada", map[string]any{
			"url":   proxy + searchv1alpha1.ViewPath("") + "/ui/",
			"query": "kind:pods app=web", "groupBy": "cluster", "pickBar": "west",
			"liveName": "live-0", "readyFile": ready, "readme": readme,
			"open": []map[string]any{
				{"query": "kind:pods app=web ns:shop", "cluster": "east", "namespace": "shop", "name": "cart-1"},
				{"cluster": "east", "namespace": "shop", "name": "evil"},
				{"query": "kind:configmaps ns:shop cluster:east", "cluster": "east", "namespace": "shop", "name": "proto"},
				{"cluster": "east", "namespace": "shop", "name": "reborn"},
			},
			"asOf": list.ResourceVersion, "asOfQuery": "kind:pods app=web",
		})
		if got.Search.Phase != "done" {
			t.Fatalf("the search: %+v", got.Search)
		}
		if rows := got.keys(t, got.Headers, got.Rows); !slices.Equal(rows, wantPods) {
			t.Errorf("the page shows %v, the members hold %v", rows, wantPods)
		}
		// The member's own printer columns: a pod's STATUS is its reason or phase.
		for i, row := range got.Rows {
			status := row[slices.Index(got.Headers, "STATUS")]
			if name := row[slices.Index(got.Headers, "NAME")]; name == "evil" && status != hostile || name != "evil" && status != "Pending" {
				t.Errorf("row %d %v: STATUS %q", i, row, status)
			}
		}
		counts := map[string]int{}
		for _, k := range wantPods {
			counts[strings.Split(k, "/")[0]]++
		}
		if fmt.Sprint(got.countMap()) != fmt.Sprint(counts) {
			t.Errorf("the chart shows %v, the members hold %v", got.countMap(), counts)
		}
		if !slices.Equal(got.Clusters, []string{"east", "west"}) {
			t.Errorf("clusters %v", got.Clusters)
		}
		if got.Picked.Query != "kind:pods app=web cluster:west" {
			t.Errorf("west's bar made the query %q", got.Picked.Query)
		}
		if rows := got.keys(t, got.Picked.Headers, got.Picked.Rows); !slices.Equal(rows, []string{"west/shop/cart-0"}) {
			t.Errorf("west's bar selects %v", rows)
		}
		if rows := got.keys(t, got.Live.Headers, got.Live.Rows); !slices.Equal(rows, []string{"west/shop/cart-0", "west/shop/live-0"}) {
			t.Errorf("live, the page shows %v", rows)
		}
		if len(got.Objects) != 4 {
			t.Fatalf("objects %+v", got.Objects)
		}
		cart := got.Objects[0]
		if cart.Missing || !strings.Contains(cart.YAML, "uid: "+string(cart1.UID)) || !strings.Contains(cart.YAML, "changed-by: the-browser-test") {
			t.Errorf("cart-1's YAML %q, want the member's uid %s", cart.YAML, cart1.UID)
		}
		if len(cart.Timeline) < 2 || !strings.Contains(cart.Diff, "+     changed-by: the-browser-test") {
			t.Errorf("cart-1's history %q, diff %q: want the annotation the test added", cart.Timeline, cart.Diff)
		}
		e := got.Objects[1]
		if e.Missing || len(e.Events) != 1 || e.Events[0][1] != "Failed" || e.Events[0][4] != hostile || !strings.Contains(e.YAML, hostile) {
			t.Errorf("evil's Events %q and YAML %q: want its Event and annotation as text", e.Events, e.YAML)
		}
		// The diff of the versions picked first, the last two, shows the
		// "__proto__" key's change as a change of that key.
		if p := got.Objects[2]; p.Missing || !strings.Contains(p.YAML, "__proto__: after") ||
			!strings.Contains(p.Diff, "-   __proto__: before\n") || !strings.Contains(p.Diff, "+   __proto__: after\n") {
			t.Errorf("proto's YAML %q and diff %q: want __proto__ changed from before to after", p.YAML, p.Diff)
		}
		// From the deletion to the new incarnation: the new one whole, with
		// nothing of the first.
		r := got.Objects[3]
		allAdded := true
		for _, line := range strings.Split(strings.TrimSuffix(r.Diff, "\n"), "\n") {
			allAdded = allAdded && strings.HasPrefix(line, "+ ")
		}
		if r.Missing || len(r.Timeline) != 3 || !strings.HasPrefix(r.Timeline[1], "DELETED") || !allAdded ||
			!strings.Contains(r.Diff, "+     incarnation-two: second\n") || strings.Contains(r.Diff, "first") {
			t.Errorf("reborn's history %q, diff %q: want the second incarnation alone, all of it added", r.Timeline, r.Diff)
		}
		if rows := got.keys(t, got.AsOf.Headers, got.AsOf.Rows); !slices.Equal(rows, wantPods) {
			t.Errorf("as of revision %s, the page shows %v, want %v (no live-0)", list.ResourceVersion, rows, wantPods)
		}
		got.harmless(t)
	})

	t.Run("eve", func(t *testing.T) {
		proxy := kubectlProxy(t, eveKC, "--context", "host")
		wantEast := f.memberPods(t, "web", "east")
		for _, view := range []string{"", "east"} {
			got := runPage(t, script, artifacts, "eve-"+cmp.Or(view, "all"), map[string]any{
				"url": proxy + searchv1alpha1.ViewPath(view) + "/ui/", "query": "kind:pods app=web", "groupBy": "cluster",
			})
			if got.Search.Phase != "done" {
				t.Fatalf("%s: the search %+v", view, got.Search)
			}
			if rows := got.keys(t, got.Headers, got.Rows); !slices.Equal(rows, wantEast) {
				t.Errorf("%s: eve sees %v, want east's %v", view, rows, wantEast)
			}
			if fmt.Sprint(got.countMap()) != fmt.Sprintf("map[east:%d]", len(wantEast)) {
				t.Errorf("%s: eve's chart %v", view, got.countMap())
			}
			if view == "" && !slices.Equal(got.Clusters, []string{"east"}) {
				t.Errorf("eve's clusters %v, want east alone", got.Clusters)
			}
			got.harmless(t)
		}
	})
}

// pageResult is what drive.mjs read off the page.
type pageResult struct {
	Screens, Dialogs, ConsoleErrors, Clusters []string
	Search                                    struct{ Phase, Text string }
	Headers                                   []string
	Rows                                      [][]string
	Counts                                    []struct {
		Value string
		Count int
	}
	Picked struct {
		Query   string
		Headers []string
		Rows    [][]string
	}
	Live, AsOf struct {
		Headers []string
		Rows    [][]string
	}
	Objects []struct {
		Cluster, Namespace, Name, Title, YAML, Diff string
		Missing                                     bool
		Events                                      [][]string
		Timeline                                    []string
	}
	Pwned  *string
	Images int
}

// keys are the rows as cluster/namespace/name, sorted.
func (p *pageResult) keys(t *testing.T, headers []string, rows [][]string) []string {
	t.Helper()
	c, n, name := slices.Index(headers, "CLUSTER"), slices.Index(headers, "NAMESPACE"), slices.Index(headers, "NAME")
	if c < 0 || n < 0 || name < 0 {
		t.Fatalf("columns %v: want CLUSTER, NAMESPACE and NAME", headers)
	}
	keys := []string{}
	for _, r := range rows {
		keys = append(keys, r[c]+"/"+r[n]+"/"+r[name])
	}
	slices.Sort(keys)
	return keys
}

func (p *pageResult) countMap() map[string]int {
	m := map[string]int{}
	for _, c := range p.Counts {
		m[c.Value] = c.Count
	}
	return m
}

// harmless: nothing a member wrote ran or became markup, and every screen
// was drawn.
func (p *pageResult) harmless(t *testing.T) {
	t.Helper()
	if p.Pwned != nil || len(p.Dialogs) > 0 || p.Images != 0 {
		t.Errorf("member contents ran or made markup: pwned %v, dialogs %q, %d <img>", p.Pwned, p.Dialogs, p.Images)
	}
	for _, e := range p.ConsoleErrors {
		if strings.Contains(e, "Content Security Policy") {
			t.Errorf("the page broke its own policy: %s", e)
		}
	}
	if len(p.Screens) == 0 {
		t.Error("no screenshots")
	}
	for _, s := range p.Screens {
		requireDrawn(t, s)
	}
}

// requireDrawn fails unless the PNG at path shows something: many colours,
// not one flat fill.
func requireDrawn(t *testing.T, path string) {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	img, err := png.Decode(f)
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	colours := map[[4]uint32]int{}
	b := img.Bounds()
	for y := b.Min.Y; y < b.Max.Y; y += 2 {
		for x := b.Min.X; x < b.Max.X; x += 2 {
			r, g, bl, a := img.At(x, y).RGBA()
			colours[[4]uint32{r, g, bl, a}]++
		}
	}
	most := 0
	for _, n := range colours {
		most = max(most, n)
	}
	if total := (b.Dx() / 2) * (b.Dy() / 2); len(colours) < 16 || most > total*98/100 {
		t.Errorf("%s looks blank: %d colours, the commonest on %d of %d pixels", path, len(colours), most, total)
	}
}

// browserScript is test/e2e/browser/drive.mjs, once chromium and the npm
// packages are installed; missing, it skips, or fails where CI requires
// them.
func browserScript(t *testing.T) string {
	t.Helper()
	testenv.Assets(t)
	script, _ := filepath.Abs(filepath.Join("browser", "drive.mjs"))
	missing := ""
	if _, err := exec.LookPath("node"); err != nil {
		missing = "node"
	} else if _, err := os.Stat("/usr/bin/chromium"); err != nil {
		missing = "chromium (apt-get install chromium)"
	} else if _, err := os.Stat(filepath.Join("browser", "node_modules", "playwright-core")); err != nil {
		missing = "playwright-core (npm ci in test/e2e/browser)"
	}
	if missing != "" {
		if os.Getenv("PANORAMA_REQUIRE_DB") != "" || os.Getenv("CI") == "true" {
			t.Fatalf("the browser tests need %s", missing)
		}
		t.Skipf("the browser tests need %s", missing)
	}
	return script
}

// kubectlProxy runs the real `kubectl proxy` as the user of kubeconfig
// (and flags, such as its context), against the host, and returns its
// URL.
func kubectlProxy(t testing.TB, kubeconfig string, flags ...string) string {
	t.Helper()
	port := freePort(t)
	args := append([]string{"--kubeconfig", kubeconfig}, flags...)
	cmd := exec.Command(filepath.Join(os.Getenv("KUBEBUILDER_ASSETS"), "kubectl"),
		append(args, "proxy", "--address=127.0.0.1", "--port="+strconv.Itoa(port))...)
	out := &strings.Builder{}
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	url := "http://127.0.0.1:" + strconv.Itoa(port)
	testenv.Eventually(t, waitFor, func() error {
		_, _, err := testenv.Kubectl(kubeconfig, "--server", url, "get", "--raw", "/version")
		return err
	})
	return url
}

// runPage runs drive.mjs with plan and returns what the page showed.
func runPage(t *testing.T, script, artifacts, name string, plan map[string]any) *pageResult {
	t.Helper()
	shots := filepath.Join(artifacts, name)
	if err := os.MkdirAll(shots, 0o755); err != nil {
		t.Fatal(err)
	}
	plan["screenshots"] = shots
	var got pageResult
	runScript(t, script, shots, plan, 5*time.Minute, &got)
	return &got
}

// runScript runs a node script of test/e2e/browser with plan, written to
// dir, and decodes into out the JSON it writes there; it returns what the
// script printed.
func runScript(t testing.TB, script, dir string, plan map[string]any, timeout time.Duration, out any) []byte {
	t.Helper()
	plan["out"] = filepath.Join(dir, "out.json")
	planFile := filepath.Join(dir, "plan.json")
	data, _ := json.Marshal(plan)
	if err := os.WriteFile(planFile, data, 0o600); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, "node", script, planFile)
	cmd.Dir = filepath.Dir(script)
	output, err := cmd.CombinedOutput()
	data, readErr := os.ReadFile(plan["out"].(string))
	if err != nil || readErr != nil || json.Unmarshal(data, out) != nil {
		t.Fatalf("%s %s: %v %v\n%s\n%.2000s", filepath.Base(script), planFile, err, readErr, output, data)
	}
	return output
}
