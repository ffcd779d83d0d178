package e2e

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/panorama-io/panorama/test/testenv"
)

// testImages creates deployments running different images in two real
// members and asks Panorama, with kubectl through the host, for those
// running an image: by search label, across workload kinds in one
// collection, by field selector, and by a field declared as an IndexedField
// (which the controller manager reindexes under its shipped RBAC).
func testImages(t *testing.T, host *testenv.Env, dir, user string, east, west kubernetes.Interface) {
	deployments := map[string]map[string][]string{ // cluster → name → images
		"east": {"img-web": {"nginx:1.27"}, "img-cache": {"redis:7", "busybox"}},
		"west": {"img-pinned": {"registry.example/library/nginx@sha256:0f1e2d"}, "img-tools": {"busybox"}},
	}
	for cluster, c := range map[string]kubernetes.Interface{"east": east, "west": west} {
		for name, images := range deployments[cluster] {
			var containers []corev1.Container
			for i, img := range images {
				containers = append(containers, corev1.Container{Name: fmt.Sprint("c", i), Image: img})
			}
			labels := map[string]string{"app": name}
			d := &appsv1.Deployment{
				ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name, Annotations: map[string]string{"team": cluster + "-team"}},
				Spec: appsv1.DeploymentSpec{Selector: &metav1.LabelSelector{MatchLabels: labels},
					Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels}, Spec: corev1.PodSpec{Containers: containers}}},
			}
			if _, err := c.AppsV1().Deployments("default").Create(context.Background(), d, metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
		}
	}
	// names runs kubectl and returns the sorted CLUSTER/NAME of each row.
	names := func(args ...string) ([]string, error) {
		out, stderr, err := testenv.Kubectl(user, append(args, "-o", "custom-columns=CLUSTER:.metadata.annotations.panorama\\.io/cluster,NAME:.metadata.name", "--no-headers")...)
		if err != nil {
			return nil, fmt.Errorf("%v: %s", err, stderr)
		}
		var got []string
		for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
			if f := strings.Fields(line); len(f) == 2 && strings.HasPrefix(f[1], "img-") {
				got = append(got, f[0]+"/"+f[1])
			}
		}
		slices.Sort(got)
		return got, nil
	}
	expect := func(want []string, args ...string) {
		t.Helper()
		eventuallyT(t, func() error {
			got, err := names(args...)
			if err == nil && !slices.Equal(got, want) {
				err = fmt.Errorf("kubectl %v: got %v, want %v", args, got, want)
			}
			return err
		})
	}
	expect([]string{"east/img-web", "west/img-pinned"}, "get", "deployments", "-A", "-l", "search.panorama.io/images=nginx")
	expect([]string{"east/img-cache", "west/img-tools"}, "get", "deployments", "-A", "-l", "search.panorama.io/images in (busybox)")
	expect([]string{"east/img-cache", "east/img-web"}, "--context", "east", "get", "deployments", "-A", "-l", "search.panorama.io/images in (nginx,redis)")
	expect([]string{"east/img-cache", "west/img-tools"}, "get", "deployments", "-A", "--field-selector", "images=busybox")

	// One request for every workload kind: the collection.
	out, stderr, err := testenv.Kubectl(user, "--context", "host", "get", "--raw", "/apis/search.panorama.io/v1alpha1/collectionresources/workloads?images=sha256:0f1e")
	if err != nil || !strings.Contains(out, `"name":"img-pinned"`) || strings.Contains(out, `"name":"img-web"`) {
		t.Fatalf("workloads with images=sha256:0f1e: %v %s\n%s", err, stderr, out)
	}
	if _, stderr, err := testenv.Kubectl(user, "get", "deployments", "-A", "--field-selector", "team=east-team"); err == nil ||
		!strings.Contains(stderr, "field label not supported") {
		t.Fatalf("an undeclared field: %v %s", err, stderr)
	}

	// Declaring a field reindexes what is stored; a bad path is refused by the host.
	bad := filepath.Join(dir, "bad-field.yaml")
	if err := os.WriteFile(bad, []byte("apiVersion: cluster.panorama.io/v1alpha1\nkind: IndexedField\nmetadata: {name: bad}\nspec: {paths: [\"spec..x\"]}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, stderr, err := host.TryKubectl("apply", "-f", bad); err == nil || !strings.Contains(stderr, "Invalid") {
		t.Fatalf("a bad path: %v %s", err, stderr)
	}
	apply(t, host, dir, "apiVersion: cluster.panorama.io/v1alpha1\nkind: IndexedField\nmetadata: {name: team}\nspec:\n  paths: [metadata.annotations.team]\n  resources: [deployments.apps]\n")
	host.Kubectl(t, "wait", "--for", "condition=Indexed", "indexedfield/team", "--timeout=90s")
	expect([]string{"west/img-pinned", "west/img-tools"}, "get", "deployments", "-A", "--field-selector", "team=west-team")
}
