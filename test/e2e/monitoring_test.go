package e2e

import (
	"encoding/json"
	"regexp"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

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
	for _, kind := range []string{"ConfigMap", "ServiceMonitor", "PrometheusRule", "ClusterRole", "Service"} {
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
