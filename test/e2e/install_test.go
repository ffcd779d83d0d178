package e2e

import (
	"context"
	"crypto/x509"
	"encoding/base64"
	"encoding/pem"
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
		// Each component's account may do what it needs and no more.
		controller, apiserver := "system:serviceaccount:search:p-controller-manager", "system:serviceaccount:search:p-apiserver"
		for _, c := range []struct {
			as   string
			args []string
			want string
		}{
			{apiserver, []string{"get", "secrets", "-n", "search"}, "no"},
			{apiserver, []string{"list", "secrets", "-A"}, "no"},
			{apiserver, []string{"watch", "clusters.cluster.panorama.io"}, "yes"},
			{apiserver, []string{"create", "tokenreviews.authentication.k8s.io"}, "yes"},
			{apiserver, []string{"create", "subjectaccessreviews.authorization.k8s.io"}, "yes"},
			{apiserver, []string{"get", "configmaps/extension-apiserver-authentication", "-n", "kube-system"}, "yes"},
			{apiserver, []string{"update", "clusters.cluster.panorama.io", "--subresource=status"}, "no"},
			{controller, []string{"get", "secrets", "-n", "search"}, "yes"},
			{controller, []string{"update", "clusters.cluster.panorama.io", "--subresource=finalizers"}, "yes"},
			{controller, []string{"patch", "clusters.cluster.panorama.io", "--subresource=status"}, "yes"},
			{controller, []string{"create", "leases.coordination.k8s.io", "-n", "search"}, "yes"},
			{controller, []string{"create", "secrets", "-n", "search"}, "no"},
			{controller, []string{"create", "clusters.cluster.panorama.io"}, "no"},
		} {
			out, _, _ := host.TryKubectl(append([]string{"auth", "can-i", "--as", c.as}, c.args...)...)
			if got := strings.TrimSpace(out); got != c.want {
				t.Errorf("%s can-i %v: %q, want %q", c.as, c.args, got, c.want)
			}
		}
		sa := host.Kubectl(t, "get", "deploy", "-n", "search", "-o", "jsonpath={range .items[*]}{.metadata.name}={.spec.template.spec.serviceAccountName} {end}")
		if strings.TrimSpace(sa) != "p-apiserver=p-apiserver p-controller-manager=p-controller-manager" {
			t.Fatalf("service accounts: %q", sa)
		}
		// The host verifies the server's certificate, issued by the chart
		// for the Service's name, and an upgrade keeps it.
		tlsOf := func() (caBundle, insecure, crt string) {
			caBundle = host.Kubectl(t, "get", "apiservice", "v1alpha1.search.panorama.io", "-o", "jsonpath={.spec.caBundle}")
			insecure = host.Kubectl(t, "get", "apiservice", "v1alpha1.search.panorama.io", "-o", "jsonpath={.spec.insecureSkipTLSVerify}")
			crt = host.Kubectl(t, "get", "secret", "p-apiserver-tls", "-n", "search", "-o", "jsonpath={.data.tls\\.crt}")
			return
		}
		caBundle, insecure, crt := tlsOf()
		if caBundle == "" || insecure == "true" || crt == "" {
			t.Fatalf("APIService caBundle %q insecureSkipTLSVerify %q, certificate %q", caBundle, insecure, crt)
		}
		verifyServingCert(t, caBundle, crt, "p-apiserver.search.svc")
		if out, err := helm(host.Kubeconfig, "upgrade", "p", chart, "-n", "search", "--reuse-values"); err != nil {
			t.Fatalf("helm upgrade: %v\n%s", err, out)
		}
		if c2, _, crt2 := tlsOf(); c2 != caBundle || crt2 != crt {
			t.Fatal("helm upgrade issued new certificates")
		}
		if out, err := helm(host.Kubeconfig, "template", "p", chart, "--set", "apiserver.tlsSecret=mine"); err == nil || !strings.Contains(out, "needs apiserver.caBundle") {
			t.Fatalf("own Secret without a CA: %v\n%s", err, out)
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

// verifyServingCert checks that the base64 PEM certificate crt is valid for
// dnsName under the base64 PEM CA caBundle, as the aggregator checks it.
func verifyServingCert(t *testing.T, caBundle, crt, dnsName string) {
	t.Helper()
	decode := func(b64 string) []byte {
		b, err := base64.StdEncoding.DecodeString(b64)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(decode(caBundle)) {
		t.Fatal("caBundle holds no certificate")
	}
	block, _ := pem.Decode(decode(crt))
	if block == nil {
		t.Fatal("tls.crt holds no certificate")
	}
	cert, err := x509.ParseCertificate(block.Bytes)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := cert.Verify(x509.VerifyOptions{Roots: pool, DNSName: dnsName}); err != nil {
		t.Fatalf("serving certificate: %v", err)
	}
}
