package e2e

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/panorama-io/panorama/test/testenv"
)

func helm(kubeconfig string, args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	out, err := exec.CommandContext(ctx, filepath.Join(os.Getenv("KUBEBUILDER_ASSETS"), "helm"), append([]string{"--kubeconfig", kubeconfig}, args...)...).CombinedOutput()
	return string(out), err
}

// TestInstall installs the Helm chart and the kustomize config into real
// kube-apiservers, which validate every object (there is no kubelet, so
// nothing runs).
func TestInstall(t *testing.T) {
	root := filepath.Join(testenv.RepoRoot(t))
	t.Run("helm, sqlite", func(t *testing.T) {
		host := testenv.Start(t, testenv.WithoutCRDs())
		if out, err := helm(host.Kubeconfig, "install", "panorama", filepath.Join(root, "charts", "panorama"), "-n", "panorama-system", "--create-namespace", "--wait=false"); err != nil {
			t.Fatalf("helm install: %v\n%s", err, out)
		}
		out := host.Kubectl(t, "get", "deploy,pvc,svc,sa", "-n", "panorama-system", "-o", "name")
		for _, want := range []string{"deployment.apps/panorama-panorama", "persistentvolumeclaim/panorama-data", "service/panorama-apiserver", "serviceaccount/panorama"} {
			if !strings.Contains(out, want) {
				t.Fatalf("missing %s in:\n%s", want, out)
			}
		}
		host.Kubectl(t, "get", "crd", "clusters.cluster.panorama.io", "clustersyncresources.cluster.panorama.io")
		if svc := host.Kubectl(t, "get", "apiservice", "v1alpha1.search.panorama.io", "-o", "jsonpath={.spec.service.namespace}/{.spec.service.name}"); svc != "panorama-system/panorama-apiserver" {
			t.Fatalf("APIService points at %q", svc)
		}
		if out, err := helm(host.Kubeconfig, "uninstall", "panorama", "-n", "panorama-system"); err != nil {
			t.Fatalf("helm uninstall: %v\n%s", err, out)
		}
	})
	t.Run("helm, shared database", func(t *testing.T) {
		host := testenv.Start(t, testenv.WithoutCRDs())
		chart := filepath.Join(root, "charts", "panorama")
		if out, err := helm(host.Kubeconfig, "install", "p", chart, "-n", "search", "--create-namespace", "--set", "storage.driver=mysql"); err == nil ||
			!strings.Contains(out, "storage.dsn or storage.dsnSecret is required") {
			t.Fatalf("install without a DSN: %v\n%s", err, out)
		}
		if out, err := helm(host.Kubeconfig, "install", "p", chart, "-n", "search", "--create-namespace",
			"--set", "storage.driver=postgres", "--set", "storage.dsnSecret.name=db"); err != nil {
			t.Fatalf("helm install: %v\n%s", err, out)
		}
		replicas := host.Kubectl(t, "get", "deploy", "-n", "search", "-o", "jsonpath={range .items[*]}{.metadata.name}={.spec.replicas} {end}")
		if strings.TrimSpace(replicas) != "p-apiserver=2 p-controller-manager=1" {
			t.Fatalf("deployments: %q", replicas)
		}
		args := host.Kubectl(t, "get", "deploy", "p-controller-manager", "-n", "search", "-o", "jsonpath={.spec.template.spec.containers[0].args}")
		if !strings.Contains(args, "--storage=postgres") || !strings.Contains(args, "--leader-elect") {
			t.Fatalf("controller-manager args: %s", args)
		}
	})
	t.Run("kustomize", func(t *testing.T) {
		host := testenv.Start(t, testenv.WithoutCRDs())
		host.Kubectl(t, "apply", "-k", filepath.Join(root, "config", "default"))
		out := host.Kubectl(t, "get", "deploy,svc", "-n", "panorama-system", "-o", "name")
		if !strings.Contains(out, "deployment.apps/panorama") || !strings.Contains(out, "service/panorama-apiserver") {
			t.Fatalf("kustomize install:\n%s", out)
		}
		host.Kubectl(t, "apply", "--dry-run=server", "-k", filepath.Join(root, "config", "samples"))
	})
}
