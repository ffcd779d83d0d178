package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	searchv1alpha1 "github.com/panorama-io/panorama/apis/search/v1alpha1"
	"github.com/panorama-io/panorama/test/testenv"
)

// testHistory changes a deployment of east five times and reads back, with
// real kubectl, its five versions and their merge patches, and the
// deployments of its namespace as they were after each change (asOf, as a
// search label). carol, who may list pods only, may read neither.
func testHistory(t *testing.T, alice, carol string, east kubernetes.Interface) {
	ctx := context.Background()
	deployments := east.AppsV1().Deployments("web")
	labels := map[string]string{"app": "hist"}
	one := int32(1)
	d := &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Namespace: "web", Name: "hist"},
		Spec: appsv1.DeploymentSpec{Replicas: &one, Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "nginx:1.27"}}}}},
	}
	if _, err := deployments.Create(ctx, d, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = deployments.Delete(ctx, "hist", metav1.DeleteOptions{}) }) // out of the other subtests' lists
	// replicasAsOf lists the namespace's deployments as of asOf ("" for
	// now) and returns hist's replicas and its resourceVersion.
	replicasAsOf := func(asOf string) (string, error) {
		args := []string{"--context", "east", "get", "deployments", "-n", "web", "-o", "jsonpath={range .items[?(@.metadata.name==\"hist\")]}{.spec.replicas}{end}"}
		if asOf != "" {
			args = append(args, "-l", "search.panorama.io/asOf="+asOf)
		}
		out, stderr, err := testenv.Kubectl(alice, args...)
		if err != nil {
			return "", fmt.Errorf("%v: %s", err, stderr)
		}
		return out, nil
	}
	// Each change waits until Panorama has it, so that none are written
	// together (a synchronizer's batch keeps the last change of an object).
	for replicas := int32(1); replicas <= 5; replicas++ {
		if replicas > 1 {
			cur, err := deployments.Get(ctx, "hist", metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			cur.Spec.Replicas = &replicas
			if _, err := deployments.Update(ctx, cur, metav1.UpdateOptions{}); err != nil {
				t.Fatal(err)
			}
		}
		eventuallyT(t, func() error {
			if got, err := replicasAsOf(""); err != nil || got != fmt.Sprint(replicas) {
				return fmt.Errorf("hist has %q replicas, want %d: %v", got, replicas, err)
			}
			return nil
		})
	}

	out, stderr, err := testenv.Kubectl(alice, "--context", "east", "get", "--raw", "/apis/apps/v1/namespaces/web/deployments/hist/history")
	if err != nil {
		t.Fatalf("history: %v %s", err, stderr)
	}
	var h searchv1alpha1.History
	if err := json.Unmarshal([]byte(out), &h); err != nil || h.Kind != "History" || len(h.Items) != 5 {
		t.Fatalf("history: %v %s", err, out)
	}
	for i, it := range h.Items {
		want := fmt.Sprintf(`"spec":{"replicas":%d}`, i+1)
		if i == 0 {
			want = `"replicas":1`
		}
		if (i == 0) != (it.Type == "ADDED") || !strings.Contains(string(it.Patch), want) || it.Time == nil || it.MemberResourceVersion == "" {
			t.Errorf("version %d: %s %s, want a patch with %s", i, it.Type, it.Patch, want)
		}
		// The list as of each version's revision shows its replicas.
		if got, err := replicasAsOf(fmt.Sprint(it.Revision)); err != nil || got != fmt.Sprint(i+1) {
			t.Errorf("deployments asOf %d: %q replicas, %v; want %d", it.Revision, got, err, i+1)
		}
	}

	if _, stderr, err := testenv.Kubectl(carol, "--context", "east", "get", "--raw", "/apis/apps/v1/namespaces/web/deployments/hist/history"); err == nil || !strings.Contains(stderr, "Forbidden") {
		t.Errorf("carol's history of a deployment: %v %s", err, stderr)
	}
	if _, stderr, err := testenv.Kubectl(carol, "--context", "east", "get", "deployments", "-n", "web", "-l", "search.panorama.io/asOf=1"); err == nil || !strings.Contains(stderr, "Forbidden") {
		t.Errorf("carol's deployments asOf: %v %s", err, stderr)
	}
	if _, stderr, err := testenv.Kubectl(alice, "--context", "east", "get", "deployments", "-n", "web", "-l", "search.panorama.io/asOf=yesterday"); err == nil || !strings.Contains(stderr, "BadRequest") {
		t.Errorf("asOf=yesterday: %v %s", err, stderr)
	}
}
