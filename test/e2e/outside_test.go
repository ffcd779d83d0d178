package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	searchv1alpha1 "github.com/panorama-io/panorama/apis/search/v1alpha1"
	"github.com/panorama-io/panorama/storage/storagetest"
	"github.com/panorama-io/panorama/test/testenv"
)

// TestOutsideACluster runs both binaries as one runs them on a laptop:
// given only the host's kubeconfig and storage (and where to listen), each
// becomes ready and does its work. Then it checks that every metric the
// chart's dashboard and alert rules name is exported by them, scraped after
// real traffic: a sync, reads and a watch, and a resource that fails to sync.
func TestOutsideACluster(t *testing.T) {
	host := testenv.Start(t)
	east := testenv.Start(t, testenv.WithoutCRDs())
	createNS(t, kubernetes.NewForConfigOrDie(east.Config), "web")
	createPod(t, kubernetes.NewForConfigOrDie(east.Config), "web", "web-0", "web")
	db := storagetest.Backends()[1].Options(t)
	dir := t.TempDir()
	// Panorama reads east as a user who may list pods, not configmaps: the
	// configmaps' sync fails, as a member's RBAC can make it.
	apply(t, east, dir, grant("limited-pods", "", []string{`{apiGroups: [""], resources: [pods], verbs: [list, watch]}`}, "limited"))
	apply(t, host, dir, limitedClusterManifest(t, east, "east", "limited"))
	controllerKC, apiserverKC := testenv.ShippedIdentities(t, host, dir)

	// No in-cluster configuration, no --authentication-kubeconfig or
	// --authorization-kubeconfig: --kubeconfig is the host for everything.
	// --secure-port and --cert-dir only say where to listen and where to
	// write the self-signed certificate (the defaults are 443 and the
	// working directory).
	port := freePort(t)
	// Nine seats for API Priority and Fairness, one or two of them for an
	// ordinary user's reads: an open watch must not keep one.
	api := startProcess(t, "apiserver", "--kubeconfig", apiserverKC, "--storage=mysql", "--storage-dsn", db.DSN,
		"--secure-port", strconv.Itoa(port), "--cert-dir", dir, "--max-requests-inflight=6", "--max-mutating-requests-inflight=3")
	metricsPort, probePort := freePort(t), freePort(t)
	// Plain HTTP /metrics: what its secure serving admits is
	// TestMetricsServedSecurely's.
	cm := startProcess(t, "controller-manager", "--kubeconfig", controllerKC, "--storage=mysql", "--storage-dsn", db.DSN,
		"--metrics-bind-address", fmt.Sprintf("127.0.0.1:%d", metricsPort), "--metrics-secure=false", "--health-probe-bind-address", fmt.Sprintf("127.0.0.1:%d", probePort),
		"--cluster-health-interval=2s")
	failIfDenied(t, cm, api)
	waitReady(t, port)
	eventuallyT(t, func() error { _, err := httpGet(fmt.Sprintf("http://127.0.0.1:%d/readyz", probePort), nil); return err })
	host.Kubectl(t, "wait", "--for=condition=Ready", "--timeout=90s", "cluster/east")

	// A user of the host reads Panorama's port directly (no aggregator: the
	// API server authenticates her certificate with the host's client CA)
	// and may read its /metrics, as Prometheus would.
	apply(t, host, dir, grant("scraper", "", []string{readRule(`"*"`), `{nonResourceURLs: [/metrics], verbs: [get]}`}, "scraper"))
	user, err := host.Env.AddUser(envtest.User{Name: "scraper"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	direct := rest.CopyConfig(user.Config())
	direct.Host = fmt.Sprintf("https://127.0.0.1:%d%s", port, searchv1alpha1.ViewPath(""))
	direct.TLSClientConfig = rest.TLSClientConfig{Insecure: true, CertData: direct.CertData, KeyData: direct.KeyData}
	pods := dynamic.NewForConfigOrDie(direct).Resource(schema.GroupVersionResource{Version: "v1", Resource: "pods"})
	// A change after the initial list: the sync lag is of watched changes.
	createPod(t, kubernetes.NewForConfigOrDie(east.Config), "web", "web-1", "web")
	eventuallyT(t, func() error {
		list, err := pods.List(context.Background(), metav1.ListOptions{})
		if err == nil && len(list.Items) != 2 {
			err = fmt.Errorf("%d pods", len(list.Items))
		}
		return err
	})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	timeout := int64(1)
	w, err := pods.Watch(ctx, metav1.ListOptions{TimeoutSeconds: &timeout})
	if err != nil {
		t.Fatal(err)
	}
	if ev := <-w.ResultChan(); ev.Type != watch.Added {
		t.Fatalf("watch began with %v", ev)
	}
	w.Stop()
	// Twenty watches stay open; a list still finds a seat, since a watch
	// gives its seat back once it is set up, as kube-apiserver's do.
	watchCtx, stopWatches := context.WithTimeout(context.Background(), 2*time.Minute)
	defer stopWatches()
	for range 20 {
		w, err := pods.Watch(watchCtx, metav1.ListOptions{})
		if err != nil {
			t.Fatal(err)
		}
		defer w.Stop()
	}
	listCtx, cancelList := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancelList()
	if _, err := pods.List(listCtx, metav1.ListOptions{}); err != nil {
		t.Fatalf("a list behind 20 open watches: %v", err)
	}

	scrapeAPI := rest.CopyConfig(direct)
	scrapeAPI.Host = fmt.Sprintf("https://127.0.0.1:%d", port)
	apiClient, err := rest.HTTPClientFor(scrapeAPI)
	if err != nil {
		t.Fatal(err)
	}
	var exported map[string]bool
	eventuallyT(t, func() error {
		exported = map[string]bool{}
		for _, target := range []struct {
			url    string
			client *http.Client
		}{{scrapeAPI.Host + "/metrics", apiClient}, {fmt.Sprintf("http://127.0.0.1:%d/metrics", metricsPort), nil}} {
			body, err := httpGet(target.url, target.client)
			if err != nil {
				return err
			}
			for name := range metricNames(body) {
				exported[name] = true
			}
		}
		if !exported["panorama_sync_errors_total"] {
			return fmt.Errorf("no sync error counted yet")
		}
		return nil
	})

	named := chartMetricNames(t)
	if len(named) < 8 {
		t.Fatalf("the chart names only %d metrics: %v", len(named), named)
	}
	for name, where := range named {
		if !exported[name] {
			t.Errorf("%s names %s, which neither binary exports", where, name)
		}
	}
}

// limitedClusterManifest is a Cluster of member m, syncing pods and
// configmaps, read by the member's admin impersonating user.
func limitedClusterManifest(t *testing.T, m *testenv.Env, name, user string) string {
	t.Helper()
	kc := loadKubeconfig(t, m.Kubeconfig)
	for _, u := range kc.AuthInfos {
		u.Impersonate = user
	}
	data, err := clientcmd.Write(*kc)
	if err != nil {
		t.Fatal(err)
	}
	secret, _ := json.Marshal(map[string]string{"kubeconfig": string(data)})
	return fmt.Sprintf(`apiVersion: v1
kind: Namespace
metadata: {name: panorama-system}
---
apiVersion: v1
kind: Secret
metadata: {name: %[1]s, namespace: panorama-system, annotations: {cluster.panorama.io/clusters: %[1]s}}
stringData: %[2]s
---
apiVersion: cluster.panorama.io/v1alpha1
kind: Cluster
metadata: {name: %[1]s}
spec:
  kubeconfigSecretRef: {namespace: panorama-system, name: %[1]s}
  syncResources: [{group: "", resources: [pods, configmaps]}]
`, name, secret)
}

// httpGet returns the body of a GET that answers 200.
func httpGet(url string, client *http.Client) (string, error) {
	if client == nil {
		client = &http.Client{Timeout: 5 * time.Second}
	}
	resp, err := client.Get(url)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err == nil && resp.StatusCode != http.StatusOK {
		err = fmt.Errorf("GET %s: %s: %s", url, resp.Status, body)
	}
	return string(body), err
}

// metricNames are the names of the samples of a Prometheus text exposition
// (histograms as name_bucket, name_sum and name_count).
func metricNames(exposition string) map[string]bool {
	names := map[string]bool{}
	for _, line := range strings.Split(exposition, "\n") {
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		if i := strings.IndexAny(line, "{ "); i > 0 {
			names[line[:i]] = true
		}
	}
	return names
}
