package e2e

import (
	"crypto/tls"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/panorama-io/panorama/storage/storagetest"
	"github.com/panorama-io/panorama/test/testenv"
)

// monitoringOn renders the chart with every monitoring switch on, on a
// host with the Prometheus Operator's CRDs.
var monitoringOn = []string{"--api-versions", "monitoring.coreos.com/v1",
	"--set", "monitoring.dashboard.enabled=true", "--set", "monitoring.serviceMonitor.enabled=true",
	"--set", "monitoring.prometheusRule.enabled=true", "--show-only", "templates/monitoring.yaml"}

// TestChartMonitoring checks what the monitoring switches render: the
// dashboard for the release's API server, and the ServiceMonitor and
// PrometheusRule only where the Prometheus Operator's CRDs are.
func TestChartMonitoring(t *testing.T) {
	objs := testenv.Objects(t, testenv.RenderChart(t, monitoringOn...))
	for _, kind := range []string{"ConfigMap", "ServiceMonitor", "PrometheusRule", "Service"} {
		if !hasKind(objs, kind) {
			t.Errorf("no %s rendered", kind)
		}
	}
	dashboard := testenv.Find(objs, "ConfigMap", "panorama-dashboard")
	if dashboard == nil || dashboard.GetLabels()["grafana_dashboard"] != "1" {
		t.Fatalf("no dashboard ConfigMap with the sidecar's label: %v", dashboard)
	}
	if data, _, _ := unstructured.NestedString(dashboard.Object, "data", "panorama.json"); !strings.Contains(data, `"panorama-apiserver"`) || strings.Contains(data, "PANORAMA_APISERVER_JOB") {
		t.Errorf("the dashboard's job is not the release's API server")
	}
	if ca := checkServiceMonitor(t, objs, "https", "metrics"); !reflect.DeepEqual(ca, map[string]any{"secret": map[string]any{"name": "panorama-apiserver-tls", "key": "ca.crt"}}) {
		t.Errorf("the ServiceMonitor verifies with CA %v, not the serving certificate's", ca)
	}
	checkControllerMetricsServing(t)
	reader := testenv.Find(testenv.Objects(t, testenv.RenderChart(t, "--show-only", "templates/rbac.yaml")), "ClusterRole", "panorama-metrics-reader")
	if rules, _, _ := unstructured.NestedSlice(reader.Object, "rules"); !reflect.DeepEqual(rules, []any{map[string]any{"nonResourceURLs": []any{"/metrics"}, "verbs": []any{"get"}}}) {
		t.Errorf("ClusterRole panorama-metrics-reader, installed whatever the monitoring values, has rules %v", rules)
	}
	// Your own serving certificate: the CA is apiserver.caBundle, which the
	// ServiceMonitor needs.
	const caPEM = "-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n"
	own := append([]string{"--set", "apiserver.tlsSecret=mine", "--set", "apiserver.caBundle=" + base64.StdEncoding.EncodeToString([]byte(caPEM))}, monitoringOn...)
	objs = testenv.Objects(t, testenv.RenderChart(t, own...))
	if ca := checkServiceMonitor(t, objs, "https", "metrics"); !reflect.DeepEqual(ca, map[string]any{"configMap": map[string]any{"name": "panorama-serving-ca", "key": "ca.crt"}}) {
		t.Errorf("with apiserver.tlsSecret, the ServiceMonitor verifies with CA %v", ca)
	}
	if cm := testenv.Find(objs, "ConfigMap", "panorama-serving-ca"); cm == nil || cm.Object["data"].(map[string]any)["ca.crt"] != caPEM {
		t.Errorf("ConfigMap of apiserver.caBundle: %v", cm)
	}
	if out, err := testenv.TryRenderChart(t, append([]string{"--set", "apiserver.tlsSecret=mine", "--set", "apiserver.insecureSkipTLSVerify=true"}, monitoringOn...)...); err == nil || !strings.Contains(out, "needs apiserver.caBundle") {
		t.Errorf("a ServiceMonitor that cannot verify: %v\n%s", err, out)
	}
	// Without the CRDs, only the dashboard: the rest would not apply.
	objs = testenv.Objects(t, testenv.RenderChart(t, monitoringOn[2:]...))
	if len(objs) != 1 || objs[0].GetKind() != "ConfigMap" {
		t.Errorf("without monitoring.coreos.com/v1 rendered %d objects", len(objs))
	}
	// Off by default.
	if out := testenv.RenderChart(t, "--api-versions", "monitoring.coreos.com/v1"); strings.Contains(out, "kind: ServiceMonitor") || strings.Contains(out, "grafana_dashboard") {
		t.Error("monitoring rendered by default")
	}
	// The all-in-one pod serves every metric on the API server's port.
	objs = testenv.Objects(t, testenv.RenderChart(t, append([]string{"--set", "storage.driver=sqlite"}, monitoringOn...)...))
	if testenv.Find(objs, "Service", "panorama-controller-manager-metrics") != nil {
		t.Error("a controller manager metrics Service in the all-in-one install")
	}
	checkServiceMonitor(t, objs, "https")
}

// checkServiceMonitor checks that the release's ServiceMonitor scrapes
// ports, each over HTTPS with Prometheus's token, verifying the certificate
// for the API server's Service name with one CA, which it returns.
func checkServiceMonitor(t *testing.T, objs []*unstructured.Unstructured, ports ...string) any {
	t.Helper()
	sm := testenv.Find(objs, "ServiceMonitor", "panorama")
	if sm == nil {
		t.Fatal("no ServiceMonitor")
	}
	endpoints, _, _ := unstructured.NestedSlice(sm.Object, "spec", "endpoints")
	var scraped []string
	var ca any
	for _, e := range endpoints {
		ep := e.(map[string]any)
		scraped = append(scraped, fmt.Sprint(ep["port"]))
		tlsConfig, _ := ep["tlsConfig"].(map[string]any)
		if ep["scheme"] != "https" || ep["bearerTokenFile"] != "/var/run/secrets/kubernetes.io/serviceaccount/token" ||
			tlsConfig["serverName"] != "panorama-apiserver.panorama-system.svc" || tlsConfig["insecureSkipVerify"] != nil || tlsConfig["ca"] == nil {
			t.Errorf("ServiceMonitor endpoint %v does not scrape over verified HTTPS with a token", ep)
		}
		if ca != nil && !reflect.DeepEqual(ca, tlsConfig["ca"]) {
			t.Errorf("ServiceMonitor endpoints verify with CAs %v and %v", ca, tlsConfig["ca"])
		}
		ca = tlsConfig["ca"]
	}
	if !slices.Equal(scraped, ports) {
		t.Errorf("the ServiceMonitor scrapes ports %v, want %v", scraped, ports)
	}
	return ca
}

// checkControllerMetricsServing checks that the controller manager serves
// /metrics securely on the port its metrics Service targets, with the
// certificate of the Secret the ServiceMonitor takes the CA from.
func checkControllerMetricsServing(t *testing.T) {
	t.Helper()
	objs := testenv.Objects(t, testenv.RenderChart(t, "--api-versions", "monitoring.coreos.com/v1", "--set", "monitoring.serviceMonitor.enabled=true"))
	d, svc := testenv.Find(objs, "Deployment", "panorama-controller-manager"), testenv.Find(objs, "Service", "panorama-controller-manager-metrics")
	if d == nil || svc == nil {
		t.Fatal("no controller manager Deployment or metrics Service")
	}
	var dep appsv1.Deployment
	var service corev1.Service
	if err := errors.Join(runtime.DefaultUnstructuredConverter.FromUnstructured(d.Object, &dep), runtime.DefaultUnstructuredConverter.FromUnstructured(svc.Object, &service)); err != nil {
		t.Fatal(err)
	}
	c := dep.Spec.Template.Spec.Containers[0]
	port := slices.IndexFunc(c.Ports, func(p corev1.ContainerPort) bool { return p.Name == service.Spec.Ports[0].TargetPort.String() })
	if port < 0 || !slices.Contains(c.Args, fmt.Sprintf("--metrics-bind-address=:%d", c.Ports[port].ContainerPort)) {
		t.Errorf("the metrics Service targets port %s, not the one /metrics is served on: ports %v, args %v", service.Spec.Ports[0].TargetPort.String(), c.Ports, c.Args)
	}
	if slices.ContainsFunc(c.Args, func(a string) bool { return strings.HasPrefix(a, "--metrics-secure") }) {
		t.Errorf("the controller manager's /metrics is not secure: %v", c.Args)
	}
	mount := slices.IndexFunc(c.VolumeMounts, func(m corev1.VolumeMount) bool { return slices.Contains(c.Args, "--metrics-cert-path="+m.MountPath) })
	if mount < 0 {
		t.Fatalf("the controller manager serves /metrics with no mounted certificate: args %v", c.Args)
	}
	volume := slices.IndexFunc(dep.Spec.Template.Spec.Volumes, func(v corev1.Volume) bool { return v.Name == c.VolumeMounts[mount].Name })
	if v := dep.Spec.Template.Spec.Volumes[volume]; v.Secret == nil || v.Secret.SecretName != "panorama-apiserver-tls" {
		t.Errorf("the controller manager serves /metrics with volume %v, not the API server's certificate", v)
	}
}

// chartMetricNames renders the chart's dashboard and alert rules and
// returns every metric their queries name, with where it is named.
func chartMetricNames(t *testing.T) map[string]string {
	t.Helper()
	objs := testenv.Objects(t, testenv.RenderChart(t, monitoringOn...))
	names := map[string]string{}
	data, _, _ := unstructured.NestedString(testenv.Find(objs, "ConfigMap", "panorama-dashboard").Object, "data", "panorama.json")
	var dashboard any
	if err := json.Unmarshal([]byte(data), &dashboard); err != nil {
		t.Fatalf("the dashboard is not JSON: %v", err)
	}
	walkStrings(dashboard, "", func(key, s string) {
		switch key {
		case "expr", "definition":
			for _, n := range promQLMetrics(s) {
				names[n] = "the dashboard"
			}
		}
	})
	groups, _, _ := unstructured.NestedSlice(testenv.Find(objs, "PrometheusRule", "panorama").Object, "spec", "groups")
	for _, g := range groups {
		for _, r := range g.(map[string]any)["rules"].([]any) {
			rule := r.(map[string]any)
			for _, n := range promQLMetrics(rule["expr"].(string)) {
				names[n] = "alert " + rule["alert"].(string)
			}
		}
	}
	return names
}

var (
	promQLDropped = regexp.MustCompile(`"[^"]*"|\{[^}]*\}|\[[^\]]*\]|\b(by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)`)
	promQLIdent   = regexp.MustCompile(`[a-zA-Z_:][a-zA-Z0-9_:]*(\s*\()?`)
	promQLWords   = map[string]bool{"and": true, "or": true, "unless": true, "bool": true, "offset": true}
	labelValues   = regexp.MustCompile(`^label_values\(\s*([a-zA-Z_:][a-zA-Z0-9_:]*)`)
)

// promQLMetrics are the metric names of a PromQL query (or of Grafana's
// label_values(metric, label)): its identifiers that are not functions,
// operators, labels or durations.
func promQLMetrics(query string) []string {
	if m := labelValues.FindStringSubmatch(query); m != nil {
		return []string{m[1]}
	}
	var out []string
	for _, m := range promQLIdent.FindAllString(promQLDropped.ReplaceAllString(query, " "), -1) {
		if strings.HasSuffix(m, "(") || promQLWords[m] {
			continue
		}
		out = append(out, m)
	}
	return out
}

func walkStrings(v any, key string, f func(key, s string)) {
	switch v := v.(type) {
	case string:
		f(key, v)
	case map[string]any:
		for k, e := range v {
			walkStrings(e, k, f)
		}
	case []any:
		for _, e := range v {
			walkStrings(e, key, f)
		}
	}
}

func hasKind(objs []*unstructured.Unstructured, kind string) bool {
	for _, o := range objs {
		if o.GetKind() == kind {
			return true
		}
	}
	return false
}

// TestMetricsServedSecurely runs both components with what the chart gives
// them, split: its RBAC, its serving certificate, the DSN in their
// environment. It scrapes each /metrics as the chart's ServiceMonitor does:
// over HTTPS, verifying the certificate with the CA and for the name the
// ServiceMonitor names, with the token of a ServiceAccount bound to the
// chart's metrics-reader ClusterRole. Without a token, with the token of
// an account not bound, or over plain HTTP, neither serves them.
func TestMetricsServedSecurely(t *testing.T) {
	host := testenv.Start(t)
	dir := t.TempDir()
	controllerKC, apiserverKC := testenv.ShippedIdentities(t, host, dir)
	serving := testenv.ChartServingCert(t, dir)
	t.Setenv("PANORAMA_STORAGE_DSN", storagetest.Backends()[1].Options(t).DSN)
	apiPort, metricsPort := freePort(t), freePort(t)
	api := startProcess(t, "apiserver", "--kubeconfig", apiserverKC, "--storage=mysql", "--secure-port", strconv.Itoa(apiPort), "--bind-address=127.0.0.1",
		"--tls-cert-file", serving.CertFile, "--tls-private-key-file", serving.KeyFile)
	cm := startProcess(t, "controller-manager", "--kubeconfig", controllerKC, "--storage=mysql", "--health-probe-bind-address=0",
		"--metrics-bind-address", fmt.Sprintf("127.0.0.1:%d", metricsPort), "--metrics-cert-path", dir)
	failIfDenied(t, cm, api)
	waitReady(t, apiPort)

	// The ServiceMonitor's CA is the chart's Secret's ca.crt, the
	// APIService's caBundle.
	monitor := testenv.Objects(t, testenv.RenderChart(t, monitoringOn...))
	if ca := checkServiceMonitor(t, monitor, "https", "metrics"); !reflect.DeepEqual(ca, map[string]any{"secret": map[string]any{"name": "panorama-apiserver-tls", "key": "ca.crt"}}) {
		t.Fatalf("the ServiceMonitor's CA %v", ca)
	}
	caBundle, _, _ := unstructured.NestedString(serving.APIService.Object, "spec", "caBundle")
	caPEM, err := base64.StdEncoding.DecodeString(caBundle)
	if err != nil {
		t.Fatal(err)
	}
	roots := x509.NewCertPool()
	if !roots.AppendCertsFromPEM(caPEM) {
		t.Fatal("no CA in the APIService's caBundle")
	}
	endpoints, _, _ := unstructured.NestedSlice(testenv.Find(monitor, "ServiceMonitor", "panorama").Object, "spec", "endpoints")
	serverName, _, _ := unstructured.NestedString(endpoints[0].(map[string]any), "tlsConfig", "serverName")
	client := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: roots, ServerName: serverName}}}

	host.Kubectl(t, "create", "namespace", "monitoring")
	host.Kubectl(t, "create", "serviceaccount", "prometheus", "-n", "monitoring")
	host.Kubectl(t, "create", "serviceaccount", "intruder", "-n", "monitoring")
	host.Kubectl(t, "create", "clusterrolebinding", "prometheus-panorama", "--clusterrole=panorama-metrics-reader", "--serviceaccount=monitoring:prometheus")
	token := func(sa string) string {
		return strings.TrimSpace(host.Kubectl(t, "create", "token", sa, "-n", "monitoring"))
	}
	prometheus, intruder := token("prometheus"), token("intruder")
	scrape := func(url, token string) (int, string, error) {
		req, err := http.NewRequest(http.MethodGet, url, nil)
		if err != nil {
			t.Fatal(err)
		}
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		resp, err := client.Do(req)
		if err != nil {
			return 0, "", err
		}
		defer resp.Body.Close()
		body, err := io.ReadAll(resp.Body)
		return resp.StatusCode, string(body), err
	}
	for _, target := range []struct {
		name, addr, metric string
	}{
		{"API server", fmt.Sprintf("127.0.0.1:%d", apiPort), "apiserver_request_total"},
		{"controller manager", fmt.Sprintf("127.0.0.1:%d", metricsPort), "controller_runtime_reconcile_total"},
	} {
		url := "https://" + target.addr + "/metrics"
		eventuallyT(t, func() error {
			code, body, err := scrape(url, prometheus)
			if err == nil && (code != http.StatusOK || !metricNames(body)[target.metric]) {
				err = fmt.Errorf("%s: %d, %.200s", url, code, body)
			}
			return err
		})
		for who, token := range map[string]string{"anonymous": "", "an account not granted /metrics": intruder} {
			if code, body, err := scrape(url, token); err != nil || (code != http.StatusUnauthorized && code != http.StatusForbidden) {
				t.Errorf("the %s's /metrics to %s: %d %v %.200s", target.name, who, code, err, body)
			}
		}
		if body, err := httpGet("http://"+target.addr+"/metrics", nil); err == nil {
			t.Errorf("the %s serves /metrics over plain HTTP: %.200s", target.name, body)
		}
	}
}
