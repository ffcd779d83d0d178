package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/rand"
	"k8s.io/client-go/kubernetes"

	searchv1alpha1 "github.com/panorama-io/panorama/apis/search/v1alpha1"
	"github.com/panorama-io/panorama/test/testenv"
)

// periodsBy groups a count by cluster and image: the count that answers
// since when each cluster runs each image.
const periodsBy = "groupBy=cluster,field:images&withHeldSince=true"

// testHeldSince asks Panorama, with real kubectl, since when each cluster
// runs each image (withHeldSince): a group's period begins at the write
// that brought its first object, the version the object's history shows;
// an image that stays keeps its period while its objects change, one that
// goes and comes back begins a new one. carol, who may list pods of
// namespace web only, gets web's periods, however early another
// namespace's began. What the count summary cannot answer is refused.
// east has Deployment frontend (image nginx) in web from the start, and
// west backend: the clusters' first lists found them, with periods under
// way since a time Panorama cannot know.
func testHeldSince(t *testing.T, alice, carol string, east kubernetes.Interface) {
	ctx := context.Background()
	// periods reads the count of path by cluster and image, its groups
	// keyed cluster/image, until ready accepts them, and its revision.
	periods := func(kubeconfig, path string, ready func(map[string]searchv1alpha1.CountsGroup) error) (map[string]searchv1alpha1.CountsGroup, int64) {
		t.Helper()
		var groups map[string]searchv1alpha1.CountsGroup
		var rev int64
		eventuallyT(t, func() error {
			out, stderr, err := testenv.Kubectl(kubeconfig, "get", "--raw", path)
			if err != nil {
				return fmt.Errorf("%s: %v %s", path, err, stderr)
			}
			var c searchv1alpha1.Counts
			if err := json.Unmarshal([]byte(out), &c); err != nil || c.Kind != "Counts" || !slices.Equal(c.GroupBy, []string{"cluster", "field:images"}) {
				return fmt.Errorf("%s: %v %s", path, err, out)
			}
			if rev, err = strconv.ParseInt(c.ResourceVersion, 10, 64); err != nil {
				return fmt.Errorf("%s: revision %q", path, c.ResourceVersion)
			}
			groups = map[string]searchv1alpha1.CountsGroup{}
			for _, it := range c.Items {
				groups[it.Group["cluster"]+"/"+it.Group["field:images"]] = it
			}
			if err := ready(groups); err != nil {
				return fmt.Errorf("%s: %v\n%s", path, err, out)
			}
			return nil
		})
		return groups, rev
	}
	has := func(key string, n int64) func(map[string]searchv1alpha1.CountsGroup) error {
		return func(groups map[string]searchv1alpha1.CountsGroup) error {
			if g, ok := groups[key]; !ok || g.Count != n {
				return fmt.Errorf("group %s: %+v, want %d objects", key, g, n)
			}
			return nil
		}
	}
	lacks := func(key string) func(map[string]searchv1alpha1.CountsGroup) error {
		return func(groups map[string]searchv1alpha1.CountsGroup) error {
			if g, ok := groups[key]; ok {
				return fmt.Errorf("group %s still there: %+v", key, g)
			}
			return nil
		}
	}
	// versions reads the history of an object of east (its path there),
	// every version with its time.
	versions := func(path string) []searchv1alpha1.HistoryItem {
		t.Helper()
		out, _ := kubectlOut(t, alice, "--context", "east", "get", "--raw", path+"/history")
		var h searchv1alpha1.History
		if err := json.Unmarshal([]byte(out), &h); err != nil || len(h.Items) == 0 ||
			slices.ContainsFunc(h.Items, func(v searchv1alpha1.HistoryItem) bool { return v.Time == nil }) {
			t.Fatalf("history of %s: %v %s", path, err, out)
		}
		return h.Items
	}
	// beganAt checks that the group's period began with version v.
	beganAt := func(what string, g searchv1alpha1.CountsGroup, v searchv1alpha1.HistoryItem) {
		t.Helper()
		if h := g.HeldSince; h == nil || h.Revision != v.Revision || h.Time == nil || !h.Time.Equal(v.Time) {
			t.Errorf("%s: held since %+v, want revision %d at %v", what, h, v.Revision, v.Time)
		}
	}
	// underWay checks that g's period is one Panorama found under way:
	// known to have begun, not when ({}).
	underWay := func(what string, g searchv1alpha1.CountsGroup) {
		t.Helper()
		if h := g.HeldSince; h == nil || h.Revision != 0 || h.Time != nil {
			t.Errorf("%s: held since %+v, want {} (found by a list)", what, h)
		}
	}
	// row is the header of a Table kubectl printed and its row holding
	// value, their cells space-separated (kubectl's NAMESPACE of -A is
	// empty).
	row := func(out, value string) (string, string) {
		lines := strings.Split(strings.TrimSpace(out), "\n")
		for _, l := range lines[1:] {
			if slices.Contains(strings.Fields(l), value) {
				return strings.Join(strings.Fields(lines[0]), " "), strings.Join(strings.Fields(l), " ")
			}
		}
		return strings.Join(strings.Fields(lines[0]), " "), ""
	}
	image := "registry.example/heldsince-" + rand.String(8)
	moved, podImage := image+":1", image+"-pod:1"
	const deploymentsPath, podsPath = "/apis/apps/v1/deployments?" + periodsBy, "/api/v1/pods?" + periodsBy

	// A deployment beside frontend's image, in another namespace.
	deployments := east.AppsV1().Deployments("default")
	labels := map[string]string{"app": "held"}
	d := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "held"},
		Spec: appsv1.DeploymentSpec{Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "nginx"}}}}}}
	if _, err := deployments.Create(ctx, d, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = deployments.Delete(ctx, "held", metav1.DeleteOptions{}) })
	setImage := func(image string) {
		t.Helper()
		patch := fmt.Sprintf(`[{"op":"replace","path":"/spec/template/spec/containers/0/image","value":%q}]`, image)
		if _, err := deployments.Patch(ctx, "held", types.JSONPatchType, []byte(patch), metav1.PatchOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	groups, rev := periods(alice, deploymentsPath, has("east/nginx", 2))
	underWay("east/nginx, frontend's and held's", groups["east/nginx"])

	// 1. A new image: its period begins with the write of the patch, in
	// the test's window; nginx, which frontend still runs, keeps its own.
	before := time.Now()
	setImage(moved)
	groups, _ = periods(alice, deploymentsPath, has("east/"+moved, 1))
	after := time.Now()
	first := versions("/apis/apps/v1/namespaces/default/deployments/held")
	patched := first[len(first)-1]
	beganAt("east/"+moved, groups["east/"+moved], patched)
	// The controller manager runs on the test's clock: the slack is for
	// rounding, no bound on how fast it writes.
	if h := groups["east/"+moved].HeldSince; h == nil || h.Revision <= rev || h.Time == nil ||
		h.Time.Time.Before(before.Add(-2*time.Second)) || h.Time.Time.After(after.Add(2*time.Second)) {
		t.Errorf("east/%s: held since %+v, want after revision %d, between %v and %v", moved, h, rev, before, after)
	}
	if g := groups["east/nginx"]; g.Count != 1 {
		t.Errorf("east/nginx after held moved: %d objects, want 1", g.Count)
	}
	underWay("east/nginx after held moved", groups["east/nginx"])
	underWay("west/nginx", groups["west/nginx"])

	// 2. kubectl get's Table: HELD SINCE, and SINCE REVISION with -o wide.
	search := "search.panorama.io/groupBy=cluster,search.panorama.io/groupBy=field.images,search.panorama.io/withHeldSince=true"
	out, _ := kubectlOut(t, alice, "get", "deployments", "-A", "-l", search)
	since := patched.Time.UTC().Format(time.RFC3339)
	if header, r := row(out, moved); header != "NAMESPACE CLUSTER FIELD:IMAGES COUNT HELD SINCE" || r != "east "+moved+" 1 "+since {
		t.Errorf("kubectl get with periods, want east %s 1 %s:\n%s", moved, since, out)
	}
	out, _ = kubectlOut(t, alice, "get", "deployments", "-A", "-l", search, "-o", "wide")
	if header, r := row(out, moved); header != "NAMESPACE CLUSTER FIELD:IMAGES COUNT HELD SINCE SINCE REVISION" ||
		r != fmt.Sprintf("east %s 1 %s %d", moved, since, patched.Revision) {
		t.Errorf("kubectl get -o wide with periods, want east %s 1 %s %d:\n%s", moved, since, patched.Revision, out)
	}

	// 3. A pod of the image in default, then one in web: the cluster has
	// run it since the first, carol's namespace since the second. Summed
	// over namespaces, a period is the earliest of theirs that go on.
	pods := map[string]string{"default": "held-elsewhere", "web": "held-web"}
	for _, ns := range []string{"default", "web"} {
		pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: pods[ns]},
			Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: podImage}}}}
		if _, err := east.CoreV1().Pods(ns).Create(ctx, pod, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = east.CoreV1().Pods(ns).Delete(ctx, pod.Name, metav1.DeleteOptions{}) })
		periods(alice, "/api/v1/namespaces/"+ns+"/pods?"+periodsBy, has("east/"+podImage, 1))
	}
	elsewhere := versions("/api/v1/namespaces/default/pods/held-elsewhere")[0]
	inWeb := versions("/api/v1/namespaces/web/pods/held-web")[0]
	groups, _ = periods(alice, podsPath, has("east/"+podImage, 2))
	beganAt("alice's east/"+podImage, groups["east/"+podImage], elsewhere)
	groups, _ = periods(carol, "/api/v1/namespaces/web/pods?"+periodsBy, has("east/"+podImage, 1))
	beganAt("carol's east/"+podImage, groups["east/"+podImage], inWeb)
	alices, _ := periods(alice, "/api/v1/namespaces/web/pods?"+periodsBy, has("east/"+podImage, 1))
	if got, want := jsonOf(t, groups), jsonOf(t, alices); got != want {
		t.Errorf("carol's pods of web:\n%s\nwant alice's:\n%s", got, want)
	}
	// Narrowed by authorization from namespaces web and default to web.
	webAndDefault := "search.panorama.io/groupBy=cluster,search.panorama.io/groupBy=field.images,search.panorama.io/withHeldSince=true," +
		"search.panorama.io/namespaces in (default,web)"
	out, stderr := kubectlOut(t, carol, "get", "pods", "-A", "-l", webAndDefault, "-o", "wide")
	if _, r := row(out, podImage); r != fmt.Sprintf("east %s 1 %s %d", podImage, inWeb.Time.UTC().Format(time.RFC3339), inWeb.Revision) ||
		!strings.Contains(stderr, "1 namespaces left out of pods") {
		t.Errorf("carol in web and default, want east %s 1 held since revision %d:\n%s\n%s", podImage, inWeb.Revision, out, stderr)
	}
	// The pods lacking label app (held-elsewhere) have no period.
	out, _ = kubectlOut(t, alice, "--context", "east", "get", "pods", "-n", "default", "-o", "wide",
		"-l", "search.panorama.io/groupBy=label.app,search.panorama.io/withHeldSince=true")
	if _, r := row(out, "<none>"); !strings.HasPrefix(r, "<none> ") || !strings.HasSuffix(r, " <none> <none>") {
		t.Errorf("east's pods of default lacking label app, want no period:\n%s", out)
	}
	// Without the pod of default, the cluster has still run the image
	// since it came; the sum of default's and web's cells knows web's.
	deletePod(t, east, "default", "held-elsewhere")
	groups, _ = periods(alice, podsPath, has("east/"+podImage, 1))
	beganAt("alice's east/"+podImage+" after default's pod went", groups["east/"+podImage], elsewhere)
	out, _ = kubectlOut(t, alice, "get", "pods", "-A", "-l", webAndDefault, "-o", "wide")
	if _, r := row(out, podImage); r != fmt.Sprintf("east %s 1 %s %d", podImage, inWeb.Time.UTC().Format(time.RFC3339), inWeb.Revision) {
		t.Errorf("alice in web and default after default's pod went, want east %s 1 held since revision %d:\n%s", podImage, inWeb.Revision, out)
	}

	// What the summary cannot answer, and what is no count.
	for _, c := range []struct {
		kubeconfig string
		args       []string
		want       string
	}{
		{carol, []string{"get", "--raw", "/api/v1/namespaces/web/pods?" + periodsBy + "&labelSelector=app%3Dweb"}, "withHeldSince"},
		{alice, []string{"get", "--raw", "/apis/apps/v1/deployments?groupBy=field:images,label:app&withHeldSince=true"}, "withHeldSince"},
		{alice, []string{"get", "--raw", "/api/v1/pods?groupBy=field:status.podIP&withHeldSince=true"}, "withHeldSince"},
		{alice, []string{"get", "--raw", "/apis/apps/v1/deployments?withHeldSince=true"}, "withHeldSince is for counts: add groupBy"},
		{alice, []string{"get", "--raw", "/apis/apps/v1/deployments?watch=true&withHeldSince=true"}, "withHeldSince is for counts: add groupBy"},
		{alice, []string{"get", "deployments", "-A", "-l", "search.panorama.io/withHeldSince=true"}, "withHeldSince is for counts: add groupBy"},
	} {
		if _, stderr, err := testenv.Kubectl(c.kubeconfig, c.args...); err == nil || !strings.Contains(stderr, "BadRequest") || !strings.Contains(stderr, c.want) {
			t.Errorf("kubectl %v: %v %s; want BadRequest, %q", c.args, err, stderr, c.want)
		}
	}
	// Periods only when asked for.
	out, _ = kubectlOut(t, alice, "get", "--raw", "/apis/apps/v1/deployments?groupBy=cluster,field:images")
	if strings.Contains(out, "heldSince") {
		t.Errorf("a count not asking for periods: %s", out)
	}

	// 4. The image goes, and comes back: a new period.
	setImage("nginx")
	periods(alice, deploymentsPath, lacks("east/"+moved))
	setImage(moved)
	groups, _ = periods(alice, deploymentsPath, has("east/"+moved, 1))
	last := versions("/apis/apps/v1/namespaces/default/deployments/held")
	if len(last) != len(first)+2 {
		t.Fatalf("held's versions: %d, want %d", len(last), len(first)+2)
	}
	back := last[len(last)-1]
	beganAt("east/"+moved+" back", groups["east/"+moved], back)
	if h := groups["east/"+moved].HeldSince; h == nil || h.Revision <= patched.Revision || h.Revision <= last[len(last)-2].Revision {
		t.Errorf("east/%s back: held since %+v, want after its first period (%d) and its end (%d)", moved, h, patched.Revision, last[len(last)-2].Revision)
	}
	underWay("east/nginx through held's changes", groups["east/nginx"])
}

// jsonOf is v as JSON, a map's keys sorted: text to compare.
func jsonOf(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
