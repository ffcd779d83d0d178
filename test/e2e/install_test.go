package e2e

import (
	"context"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"

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
// nothing runs), into namespaces that enforce the Pod Security "restricted"
// profile, whose admission each Deployment's pod passes.
func TestInstall(t *testing.T) {
	root := filepath.Join(testenv.RepoRoot(t))
	t.Run("helm, sqlite", func(t *testing.T) {
		host := testenv.Start(t, testenv.WithoutCRDs())
		restrictedNamespace(t, host, "panorama-system")
		if out, err := helm(host.Kubeconfig, "install", "panorama", filepath.Join(root, "charts", "panorama"), "-n", "panorama-system", "--wait=false"); err != nil {
			t.Fatalf("helm install: %v\n%s", err, out)
		}
		checkPodsAdmitted(t, host, "panorama-system")
		out := host.Kubectl(t, "get", "deploy,pvc,svc,sa", "-n", "panorama-system", "-o", "name")
		for _, want := range []string{"deployment.apps/panorama-panorama", "persistentvolumeclaim/panorama-data", "service/panorama-apiserver", "serviceaccount/panorama"} {
			if !strings.Contains(out, want) {
				t.Fatalf("missing %s in:\n%s", want, out)
			}
		}
		host.Kubectl(t, "get", "crd", "clusters.cluster.panorama.io", "clustersyncresources.cluster.panorama.io", "clusterimportpolicies.cluster.panorama.io")
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
		restrictedNamespace(t, host, "search")
		if out, err := helm(host.Kubeconfig, "install", "p", chart, "-n", "search", "--set", "storage.driver=mysql"); err == nil ||
			!strings.Contains(out, "storage.dsnSecret.name is required") {
			t.Fatalf("install without a DSN: %v\n%s", err, out)
		}
		if out, err := helm(host.Kubeconfig, "install", "p", chart, "-n", "search",
			"--set", "storage.driver=postgres", "--set", "storage.dsnSecret.name=db"); err != nil {
			t.Fatalf("helm install: %v\n%s", err, out)
		}
		checkPodsAdmitted(t, host, "search")
		replicas := host.Kubectl(t, "get", "deploy", "-n", "search", "-o", "jsonpath={range .items[*]}{.metadata.name}={.spec.replicas} {end}")
		if strings.TrimSpace(replicas) != "p-apiserver=2 p-controller-manager=1" {
			t.Fatalf("deployments: %q", replicas)
		}
		args := host.Kubectl(t, "get", "deploy", "p-controller-manager", "-n", "search", "-o", "jsonpath={.spec.template.spec.containers[0].args}")
		if !strings.Contains(args, "--storage=postgres") || !strings.Contains(args, "--leader-elect") ||
			!strings.Contains(args, "--tunnel-bind-address=:8444") || !strings.Contains(args, "--tunnel-cert-path=/tunnel-tls") {
			t.Fatalf("controller-manager args: %s", args)
		}
		// The tunnel endpoint of agents: its Service, and a certificate
		// for it whose CA the agents are given.
		if port := host.Kubectl(t, "get", "svc", "p-tunnel", "-n", "search", "-o", "jsonpath={.spec.ports[0].name}={.spec.ports[0].port}"); port != "tunnel=8444" {
			t.Errorf("tunnel Service ports: %q", port)
		}
		verifyServingCert(t,
			host.Kubectl(t, "get", "secret", "p-tunnel-tls", "-n", "search", "-o", `jsonpath={.data.ca\.crt}`),
			host.Kubectl(t, "get", "secret", "p-tunnel-tls", "-n", "search", "-o", `jsonpath={.data.tls\.crt}`), "p-tunnel.search.svc")
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
			// An agent's ServiceAccount, which binds its token to a Cluster.
			{controller, []string{"get", "serviceaccounts", "-n", "search"}, "yes"},
			{controller, []string{"get", "serviceaccounts", "-n", "default"}, "no"},
			{controller, []string{"create", "serviceaccounts/token", "-n", "search"}, "no"},
			// Its /metrics' callers, authenticated and authorized by the host.
			{controller, []string{"create", "tokenreviews.authentication.k8s.io"}, "yes"},
			{controller, []string{"create", "subjectaccessreviews.authorization.k8s.io"}, "yes"},
			// Clusters it makes of inventories (ClusterImportPolicy), whose
			// sources it only reads.
			{controller, []string{"create", "clusters.cluster.panorama.io"}, "yes"},
			{controller, []string{"update", "clusters.cluster.x-k8s.io"}, "no"},
			{controller, []string{"update", "clusterprofiles.multicluster.x-k8s.io", "--subresource=status"}, "no"},
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
		checkReadReplicaValues(t, host, chart)
		checkExtraEnvValues(t, host, chart)
	})
	t.Run("helm, cert-manager", func(t *testing.T) {
		host := testenv.Start(t, testenv.WithoutCRDs())
		installCertManagerAPI(t, host)
		if out, err := helm(host.Kubeconfig, "install", "p", filepath.Join(root, "charts", "panorama"), "-n", "search", "--create-namespace",
			"--set", "storage.driver=postgres", "--set", "storage.dsnSecret.name=db"); err != nil {
			t.Fatalf("helm install: %v\n%s", err, out)
		}
		installed := append(host.Get(t, "apiservice", "v1alpha1.search.panorama.io"), host.Get(t, "certificates,issuers,deployments,secrets", "-n", "search")...)
		checkCertManagerTLS(t, installed, "p-apiserver")
	})
	t.Run("kustomize", func(t *testing.T) {
		host := testenv.Start(t, testenv.WithoutCRDs())
		installCertManagerAPI(t, host)
		// Whatever kubectl builds from config/ verifies the API server:
		// no APIService skips verification, and the default install has
		// cert-manager issue the certificate and inject its CA.
		kustomizations, err := filepath.Glob(filepath.Join(root, "config", "*", "kustomization.yaml"))
		if err != nil {
			t.Fatal(err)
		}
		builds := map[string][]*unstructured.Unstructured{}
		for _, k := range kustomizations {
			b, err := os.ReadFile(k)
			if err != nil {
				t.Fatal(err)
			}
			if strings.Contains(string(b), "\nkind: Component") {
				continue // built as part of an overlay
			}
			dir := filepath.Dir(k)
			objs := testenv.Objects(t, host.Kubectl(t, "kustomize", dir))
			for _, o := range objs {
				if insecure, _, _ := unstructured.NestedBool(o.Object, "spec", "insecureSkipTLSVerify"); o.GetKind() == "APIService" && insecure {
					t.Errorf("%s: the APIService skips TLS verification", dir)
				}
			}
			builds[filepath.Base(dir)] = objs
		}
		checkCertManagerTLS(t, builds["default"], "panorama")
		for _, o := range builds["default"] {
			if o.GetKind() != "Deployment" {
				continue
			}
			var d appsv1.Deployment
			if err := runtime.DefaultUnstructuredConverter.FromUnstructured(o.Object, &d); err != nil {
				t.Fatal(err)
			}
			for _, problem := range podHardeningProblems(d.Spec.Template.Spec) {
				t.Errorf("config/default Deployment %s: %s", d.Name, problem)
			}
		}
		host.Kubectl(t, "apply", "-k", filepath.Join(root, "config", "default"))
		checkPodsAdmitted(t, host, "panorama-system")
		out := host.Kubectl(t, "get", "deploy,svc,certificates", "-n", "panorama-system", "-o", "name")
		for _, want := range []string{"deployment.apps/panorama", "service/panorama-apiserver", "certificate.cert-manager.io/panorama-apiserver",
			"service/panorama-tunnel", "certificate.cert-manager.io/panorama-tunnel"} {
			if !strings.Contains(out, want) {
				t.Fatalf("kustomize install lacks %s:\n%s", want, out)
			}
		}
		if args := host.Kubectl(t, "get", "deploy", "panorama", "-n", "panorama-system", "-o", "jsonpath={.spec.template.spec.containers[0].args}"); !strings.Contains(args, "--tunnel-bind-address=:8444") {
			t.Errorf("kustomize install serves no tunnel endpoint: args %s", args)
		}
		host.Kubectl(t, "apply", "--dry-run=server", "-k", filepath.Join(root, "config", "samples"))
	})
}

// installCertManagerAPI installs cert-manager's Issuer and Certificate
// CRDs (not cert-manager itself) and waits until the host serves them.
func installCertManagerAPI(t *testing.T, host *testenv.Env) {
	t.Helper()
	host.Kubectl(t, "apply", "-f", filepath.Join("testdata", "cert-manager-crds.yaml"))
	host.Kubectl(t, "wait", "--for", "condition=established", "crd/issuers.cert-manager.io", "crd/certificates.cert-manager.io")
	eventuallyT(t, func() error {
		if out, _, err := host.TryKubectl("api-versions"); err != nil || !strings.Contains(out, "cert-manager.io/v1\n") {
			return fmt.Errorf("cert-manager.io/v1 not discovered: %v", err)
		}
		return nil
	})
}

// checkCertManagerTLS checks that in an install's objects cert-manager
// makes the host verify the API server: the APIService neither skips
// verification nor carries a CA of its own, but has cainjector inject the
// CA of a Certificate for the APIService's Service name, issued by an
// Issuer of the install, whose Secret (written by cert-manager, not by
// the install) the API server's Deployment serves with.
func checkCertManagerTLS(t *testing.T, objs []*unstructured.Unstructured, deployment string) {
	t.Helper()
	apiService := testenv.Find(objs, "APIService", "v1alpha1.search.panorama.io")
	if apiService == nil {
		t.Fatal("no APIService")
	}
	spec, _, _ := unstructured.NestedMap(apiService.Object, "spec")
	if spec["insecureSkipTLSVerify"] == true || spec["caBundle"] != nil {
		t.Fatalf("APIService: insecureSkipTLSVerify %v, caBundle %v", spec["insecureSkipTLSVerify"], spec["caBundle"])
	}
	svcName, _, _ := unstructured.NestedString(spec, "service", "name")
	svcNamespace, _, _ := unstructured.NestedString(spec, "service", "namespace")
	from := apiService.GetAnnotations()["cert-manager.io/inject-ca-from"]
	if from != svcNamespace+"/"+svcName {
		t.Fatalf("APIService cert-manager.io/inject-ca-from %q, want the Certificate %s/%s", from, svcNamespace, svcName)
	}
	cert := testenv.Find(objs, "Certificate", svcName)
	if cert == nil || cert.GetNamespace() != svcNamespace {
		t.Fatalf("no Certificate %s", from)
	}
	dnsNames, _, _ := unstructured.NestedStringSlice(cert.Object, "spec", "dnsNames")
	if !slices.Contains(dnsNames, svcName+"."+svcNamespace+".svc") {
		t.Fatalf("Certificate %s is for %v, not %s.%s.svc", from, dnsNames, svcName, svcNamespace)
	}
	issuer, _, _ := unstructured.NestedString(cert.Object, "spec", "issuerRef", "name")
	if testenv.Find(objs, "Issuer", issuer) == nil {
		t.Fatalf("Certificate %s: no Issuer %q", from, issuer)
	}
	secret, _, _ := unstructured.NestedString(cert.Object, "spec", "secretName")
	if testenv.Find(objs, "Secret", secret) != nil {
		t.Fatalf("the install writes Secret %s itself; cert-manager should", secret)
	}
	d := testenv.Find(objs, "Deployment", deployment)
	if d == nil {
		t.Fatalf("no Deployment %s", deployment)
	}
	var dep appsv1.Deployment
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(d.Object, &dep); err != nil {
		t.Fatal(err)
	}
	pod := dep.Spec.Template.Spec
	i := slices.IndexFunc(pod.Volumes, func(v corev1.Volume) bool { return v.Secret != nil && v.Secret.SecretName == secret })
	if i < 0 {
		t.Fatalf("Deployment %s does not mount Secret %s", deployment, secret)
	}
	c := pod.Containers[0]
	m := slices.IndexFunc(c.VolumeMounts, func(m corev1.VolumeMount) bool { return m.Name == pod.Volumes[i].Name })
	if m < 0 {
		t.Fatalf("Deployment %s does not mount volume %s", deployment, pod.Volumes[i].Name)
	}
	dir := c.VolumeMounts[m].MountPath
	for _, arg := range []string{"--tls-cert-file=" + dir + "/tls.crt", "--tls-private-key-file=" + dir + "/tls.key"} {
		if !slices.Contains(c.Args, arg) {
			t.Fatalf("Deployment %s does not serve with %s: args %v", deployment, arg, c.Args)
		}
	}
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

// checkReadReplicaValues: the API servers, and they alone, read from the
// replica whose DSN a Secret holds, given in their environment, not in
// their arguments; a replica without PostgreSQL is refused.
func checkReadReplicaValues(t *testing.T, host *testenv.Env, chart string) {
	t.Helper()
	out, err := helm(host.Kubeconfig, "template", "p", chart, "--set", "storage.driver=postgres", "--set", "storage.dsnSecret.name=db",
		"--set", "storage.readDsnSecret.name=replica")
	if err != nil {
		t.Fatalf("helm template with a read replica: %v\n%s", err, out)
	}
	for _, o := range testenv.Objects(t, out) {
		if o.GetKind() != "Deployment" {
			continue
		}
		c := firstContainer(o)
		args, _, _ := unstructured.NestedStringSlice(c, "args")
		env, _, _ := unstructured.NestedSlice(c, "env")
		inArgs := slices.ContainsFunc(args, func(a string) bool { return strings.HasPrefix(a, "--storage-read-dsn") })
		fromSecret := slices.ContainsFunc(env, func(e any) bool {
			name, _, _ := unstructured.NestedString(e.(map[string]any), "name")
			secret, _, _ := unstructured.NestedString(e.(map[string]any), "valueFrom", "secretKeyRef", "name")
			return name == "PANORAMA_STORAGE_READ_DSN" && secret == "replica"
		})
		if want := o.GetName() == "p-apiserver"; inArgs || fromSecret != want {
			t.Errorf("%s reads from the replica: args %v, env %v", o.GetName(), args, env)
		}
	}
	if out, err := helm(host.Kubeconfig, "template", "p", chart, "--set", "storage.readDsnSecret.name=replica"); err == nil || !strings.Contains(out, "for storage.driver postgres") {
		t.Errorf("a read replica of SQLite: %v\n%s", err, out)
	}
}

// firstContainer is the first container of Deployment o's pods.
func firstContainer(o *unstructured.Unstructured) map[string]any {
	containers, _, _ := unstructured.NestedSlice(o.Object, "spec", "template", "spec", "containers")
	c, _ := containers[0].(map[string]any)
	return c
}

// checkExtraEnvValues: each component gets its own extraEnv; the one pod
// of SQLite the API server's, as its resources; none set is none.
func checkExtraEnvValues(t *testing.T, host *testenv.Env, chart string) {
	t.Helper()
	extra := []string{"--set-json", `controllerManager.extraEnv=[{"name":"GOGC","value":"200"}]`,
		"--set-json", `apiserver.extraEnv=[{"name":"GOMEMLIMIT","value":"900MiB"}]`}
	for _, c := range []struct {
		values []string
		want   map[string]string
	}{
		{[]string{"--set", "storage.driver=postgres", "--set", "storage.dsnSecret.name=db"},
			map[string]string{"p-controller-manager": "GOGC=200", "p-apiserver": "GOMEMLIMIT=900MiB"}},
		{nil, map[string]string{"p-panorama": "GOMEMLIMIT=900MiB"}},
		// As a --reuse-values upgrade from a chart without them has it.
		{[]string{"--set", "storage.driver=postgres", "--set", "storage.dsnSecret.name=db", "--set", "controllerManager.extraEnv=null", "--set", "apiserver.extraEnv=null"},
			map[string]string{}},
	} {
		out, err := helm(host.Kubeconfig, append(append([]string{"template", "p", chart}, extra...), c.values...)...)
		if err != nil {
			t.Fatalf("helm template with extraEnv: %v\n%s", err, out)
		}
		got := map[string]string{}
		for _, o := range testenv.Objects(t, out) {
			if o.GetKind() != "Deployment" {
				continue
			}
			env, _, _ := unstructured.NestedSlice(firstContainer(o), "env")
			for _, e := range env {
				name, _, _ := unstructured.NestedString(e.(map[string]any), "name")
				value, _, _ := unstructured.NestedString(e.(map[string]any), "value")
				if strings.HasPrefix(name, "GO") {
					got[o.GetName()] = name + "=" + value
				}
			}
		}
		if !maps.Equal(got, c.want) {
			t.Errorf("helm template %v: Go's environment by Deployment %v, want %v", c.values, got, c.want)
		}
	}
}

// TestAggregatorVerifiesChartTLS runs the API server with the certificate
// the chart issues (without cert-manager) and registers it with the chart's
// APIService, caBundle set and insecureSkipTLSVerify not: the host's
// aggregator verifies the server, as in a cluster, and proxies to it. With
// another install's CA as caBundle, or a Service name the certificate is not
// for, the host refuses to proxy (503).
func TestAggregatorVerifiesChartTLS(t *testing.T) {
	host := testenv.Start(t, testenv.WithAggregation(t))
	dir := t.TempDir()
	_, apiserverKC := testenv.ShippedIdentities(t, host, dir)
	serving := testenv.ChartServingCert(t, dir)
	if insecure, _, _ := unstructured.NestedBool(serving.APIService.Object, "spec", "insecureSkipTLSVerify"); insecure {
		t.Fatal("the chart's APIService skips TLS verification")
	}
	caBundle, _, _ := unstructured.NestedString(serving.APIService.Object, "spec", "caBundle")
	if caBundle == "" {
		t.Fatal("the chart's APIService has no caBundle")
	}
	port := freePort(t)
	startProcess(t, "apiserver", "--secure-port", strconv.Itoa(port), "--bind-address=127.0.0.1",
		"--tls-cert-file", serving.CertFile, "--tls-private-key-file", serving.KeyFile, "--kubeconfig", apiserverKC,
		"--storage=sqlite", "--storage-dsn", filepath.Join(dir, "panorama.db"))
	waitReady(t, port)

	register := func(apiService *unstructured.Unstructured) {
		t.Helper()
		host.RegisterAPIService(t, apiService, port)
	}
	// Served by Panorama (not by the host): the list of collections.
	collections := func() (string, string, error) {
		return host.TryKubectl("get", "--raw", "/apis/search.panorama.io/v1alpha1/collectionresources")
	}

	t.Run("the chart's CA", func(t *testing.T) {
		register(serving.APIService)
		waitAvailable(t, host, "True", "")
		out, stderr, err := collections()
		if err != nil || !strings.Contains(out, `"workloads"`) {
			t.Fatalf("through the verified aggregator: %v %s %s", err, out, stderr)
		}
	})
	t.Run("another CA", func(t *testing.T) {
		other := serving.APIService.DeepCopy()
		otherCA, _, _ := unstructured.NestedString(testenv.ChartServingCert(t, t.TempDir()).APIService.Object, "spec", "caBundle")
		if otherCA == caBundle {
			t.Fatal("two renders of the chart issued the same CA")
		}
		_ = unstructured.SetNestedField(other.Object, otherCA, "spec", "caBundle")
		register(other)
		waitAvailable(t, host, "False", "x509")
		if _, stderr, err := collections(); err == nil || !strings.Contains(stderr, "ServiceUnavailable") {
			t.Fatalf("with another CA: %v %s", err, stderr)
		}
	})
	t.Run("a Service name the certificate is not for", func(t *testing.T) {
		other := serving.APIService.DeepCopy()
		_ = unstructured.SetNestedField(other.Object, "panorama-elsewhere", "spec", "service", "name")
		register(other)
		waitAvailable(t, host, "False", "panorama-elsewhere.panorama-system.svc")
		if _, stderr, err := collections(); err == nil || !strings.Contains(stderr, "ServiceUnavailable") {
			t.Fatalf("for another name: %v %s", err, stderr)
		}
	})
}

// waitAvailable waits until the APIService's Available condition has status
// and its message contains message.
func waitAvailable(t *testing.T, host *testenv.Env, status, message string) {
	t.Helper()
	eventuallyT(t, func() error {
		out, _, err := host.TryKubectl("get", "apiservice", "v1alpha1.search.panorama.io", "-o",
			`jsonpath={.status.conditions[?(@.type=="Available")].status} {.status.conditions[?(@.type=="Available")].message}`)
		if err != nil || !strings.HasPrefix(out, status+" ") || !strings.Contains(out, message) {
			return fmt.Errorf("APIService Available: %q %v, want %s %q", out, err, status, message)
		}
		return nil
	})
}

// restrictedNamespace creates namespace ns enforcing the Pod Security
// "restricted" profile.
func restrictedNamespace(t *testing.T, host *testenv.Env, ns string) {
	t.Helper()
	host.Kubectl(t, "create", "namespace", ns)
	host.Kubectl(t, "label", "namespace", ns, "pod-security.kubernetes.io/enforce=restricted")
}

// checkPodsAdmitted has the host admit a pod of each Deployment of ns, which
// must enforce the Pod Security "restricted" profile (server-side dry run:
// with no kubelet and no controllers, a Deployment makes no pod). The same
// pod without its seccomp profile is refused, so the check can fail.
func checkPodsAdmitted(t *testing.T, host *testenv.Env, ns string) {
	t.Helper()
	if level := host.Kubectl(t, "get", "namespace", ns, "-o", `jsonpath={.metadata.labels.pod-security\.kubernetes\.io/enforce}`); level != "restricted" {
		t.Fatalf("namespace %s enforces %q, not restricted", ns, level)
	}
	deployments := host.Get(t, "deployments", "-n", ns)
	if len(deployments) == 0 {
		t.Fatalf("no Deployment in %s", ns)
	}
	create := func(pod map[string]any) (string, error) {
		// Not in t.TempDir(): kubectl -f splits paths at the commas of
		// subtests' names.
		f, err := os.CreateTemp("", "panorama-pod-*.json")
		if err != nil {
			t.Fatal(err)
		}
		defer os.Remove(f.Name())
		if err := json.NewEncoder(f).Encode(pod); err != nil {
			t.Fatal(err)
		}
		_ = f.Close()
		_, stderr, err := host.TryKubectl("create", "--dry-run=server", "-f", f.Name())
		return stderr, err
	}
	for _, d := range deployments {
		spec, _, _ := unstructured.NestedMap(d.Object, "spec", "template", "spec")
		pod := map[string]any{"apiVersion": "v1", "kind": "Pod", "metadata": map[string]any{"name": d.GetName(), "namespace": ns}, "spec": spec}
		if stderr, err := create(pod); err != nil {
			t.Errorf("a pod of Deployment %s is refused: %v\n%s", d.GetName(), err, stderr)
		}
		unstructured.RemoveNestedField(pod, "spec", "securityContext", "seccompProfile")
		if stderr, err := create(pod); err == nil || !strings.Contains(stderr, "violates PodSecurity") {
			t.Errorf("a pod of Deployment %s without seccomp profile: %v %s, want refused", d.GetName(), err, stderr)
		}
	}
}
