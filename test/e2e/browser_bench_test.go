package e2e

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	searchv1alpha1 "github.com/panorama-io/panorama/apis/search/v1alpha1"
	"github.com/panorama-io/panorama/storage/sqlstore"
	"github.com/panorama-io/panorama/storage/storagetest"
	"github.com/panorama-io/panorama/test/testenv"
)

// BenchmarkSearchPage drives the search page in Debian's chromium
// (test/e2e/browser/bench.mjs) through `kubectl proxy` as the host's admin,
// against the API server registered with a real host under the chart's
// identity, over a store seeded directly with PANORAMA_BENCH_PAGE_PODS
// realistic pods (default 100,000) spread over PANORAMA_BENCH_PAGE_CLUSTERS
// Clusters (default 10), on each backend (-bench 'SearchPage/sqlite' picks
// one). It times what the user sees, from the input to the frame that
// shows it: the page opened on a search matching every pod until its first
// rows and its count bars are painted, PANORAMA_BENCH_PAGE_PAGES "Load
// more" clicks (default 20) and the End key after each, and an object's
// YAML opened from a row, PANORAMA_BENCH_PAGE_RUNS times (default 5, after
// one run not timed). Each is printed beside the raw request the page made
// for it, replayed from node through the same proxy right after it, and
// with the rows in the DOM and the JS heap after the paging: the DOM must
// stay bounded however many rows are loaded.
func BenchmarkSearchPage(b *testing.B) {
	script := benchScript(b)
	pods := storagetest.EnvInt(b, "PANORAMA_BENCH_PAGE_PODS", 100_000, storagetest.BenchBatch)
	clusters := storagetest.EnvInt(b, "PANORAMA_BENCH_PAGE_CLUSTERS", 10, 1)
	pages := storagetest.EnvInt(b, "PANORAMA_BENCH_PAGE_PAGES", 20, 1)
	runs := storagetest.EnvInt(b, "PANORAMA_BENCH_PAGE_RUNS", 5, 1)
	for _, backend := range storagetest.Backends() {
		b.Run(backend.Name, func(b *testing.B) {
			dir := b.TempDir()
			opts := backend.Options(b)
			seedPages(b, opts, pods, clusters)
			host := testenv.Start(b, testenv.WithAggregation(b))
			registerPageClusters(b, host, dir, clusters)
			api := startPageAPIServer(b, host, dir, opts)
			proxy := kubectlProxy(b, host.Kubeconfig)
			base := proxy + searchv1alpha1.ViewPath("")
			waitListed(b, host, pods)
			for range b.N {
				got := runBench(b, script, dir, map[string]any{
					"url": base + "/ui/", "query": "kind:pods", "groupBy": "cluster", "pages": pages, "runs": runs,
				})
				got.check(b, pods)
				got.report(b, backend.Name, pods, clusters)
			}
			if rss, err := storagetest.ResidentBytes(api.Process.Pid); err == nil {
				b.Logf("the API server's RSS at the end: %d MiB", rss>>20)
			}
		})
	}
}

// benchPageCluster is the name of Cluster i.
func benchPageCluster(i int) string { return fmt.Sprintf("cluster-%02d", i) }

// seedPages stores n realistic pods, batch by batch, each batch in the
// next of clusters, as the clusters' synchronizers would.
func seedPages(b *testing.B, opts sqlstore.Options, n, clusters int) {
	store := storagetest.OpenStore(b, opts)
	defer store.Close()
	start := time.Now()
	storagetest.StoreRealisticPods(b, store, storagetest.Pods, rand.New(rand.NewPCG(7, 7)), n, 0, func(i int) string {
		return benchPageCluster(i / storagetest.BenchBatch % clusters)
	})
	b.Logf("seeded %d pods over %d clusters in %v", n, clusters, time.Since(start).Round(time.Millisecond))
}

// registerPageClusters creates the Clusters the API server's registry
// learns the clusters and their resources from, as the controller manager
// leaves them: ready, syncing pods and their Events (the page reads an
// object's). No controller manager runs, so their members are never
// reached.
func registerPageClusters(b *testing.B, host *testenv.Env, dir string, clusters int) {
	var manifest strings.Builder
	for i := range clusters {
		fmt.Fprintf(&manifest, "---\napiVersion: cluster.panorama.io/v1alpha1\nkind: Cluster\nmetadata: {name: %s}\nspec: {apiServer: \"https://127.0.0.1:1\", paused: true}\n", benchPageCluster(i))
	}
	f := filepath.Join(dir, "clusters.yaml")
	if err := os.WriteFile(f, []byte(manifest.String()), 0o600); err != nil {
		b.Fatal(err)
	}
	host.Kubectl(b, "apply", "-f", f)
	now := time.Now().UTC().Format(time.RFC3339)
	status := fmt.Sprintf(`{"status": {"conditions": [{"type": "Ready", "status": "True", "reason": "Healthy", "message": "", "lastTransitionTime": %q}],
	 "syncResources": [{"group": "", "version": "v1", "resource": "pods", "kind": "Pod", "namespaced": true, "state": "Synced"},
	  {"group": "", "version": "v1", "resource": "events", "kind": "Event", "namespaced": true, "state": "Synced"}]}}`, now)
	for i := range clusters {
		host.Kubectl(b, "patch", "cluster", benchPageCluster(i), "--subresource=status", "--type=merge", "-p", status)
	}
}

// startPageAPIServer runs Panorama's API server over the seeded database,
// as the chart's ServiceAccount with the chart's certificate, registered
// with host, and returns it once the host finds it available.
func startPageAPIServer(b *testing.B, host *testenv.Env, dir string, opts sqlstore.Options) *exec.Cmd {
	_, apiserverKC := testenv.ShippedIdentities(b, host, dir)
	serving := testenv.ChartServingCert(b, dir)
	port := freePort(b)
	logFile, err := os.Create(filepath.Join(dir, "apiserver.log"))
	if err != nil {
		b.Fatal(err)
	}
	cmd := exec.Command(filepath.Join(binDir, "apiserver"), "--secure-port", strconv.Itoa(port), "--bind-address=127.0.0.1",
		"--tls-cert-file", serving.CertFile, "--tls-private-key-file", serving.KeyFile, "--kubeconfig", apiserverKC,
		"--storage", opts.Driver, "--storage-dsn", opts.DSN)
	cmd.Stdout, cmd.Stderr = logFile, logFile
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		_ = cmd.Wait()
		_ = logFile.Close()
		if b.Failed() {
			out, _ := os.ReadFile(logFile.Name())
			b.Logf("apiserver output:\n%s", out)
		}
	})
	waitReady(b, port)
	host.RegisterAPIService(b, serving.APIService, port)
	return cmd
}

// waitListed waits until the host serves the page's counts across
// clusters with every pod, through the registered API server.
func waitListed(b *testing.B, host *testenv.Env, pods int) {
	path := searchv1alpha1.ViewPath("") + "/api/v1/pods?groupBy=cluster"
	testenv.Eventually(b, 5*time.Minute, func() error {
		out, stderr, err := host.TryKubectl("get", "--raw", path)
		if err != nil {
			return fmt.Errorf("%v: %s", err, stderr)
		}
		var counts struct{ Items []struct{ Count int } }
		if err := json.Unmarshal([]byte(out), &counts); err != nil {
			return err
		}
		total := 0
		for _, c := range counts.Items {
			total += c.Count
		}
		if total != pods {
			return fmt.Errorf("the counts add up to %d pods, want %d", total, pods)
		}
		return nil
	})
}

// benchScript is test/e2e/browser/bench.mjs, once node, chromium and the
// npm packages are there (see browserScript); a benchmark skips without
// them.
func benchScript(b *testing.B) string {
	testenv.Assets(b)
	script, _ := filepath.Abs(filepath.Join("browser", "bench.mjs"))
	for what, ok := range map[string]bool{
		"node":                                lookPath("node"),
		"chromium (apt-get install chromium)": exists("/usr/bin/chromium"),
		"playwright-core (npm ci in test/e2e/browser)": exists(filepath.Join("browser", "node_modules", "playwright-core")),
	} {
		if !ok {
			b.Skipf("the page's benchmark needs %s", what)
		}
	}
	return script
}

func lookPath(name string) bool { _, err := exec.LookPath(name); return err == nil }

func exists(path string) bool { _, err := os.Stat(path); return err == nil }

// benchSeries is one measure of bench.mjs, in milliseconds: the times
// the user waited, the raw requests', the renderer's work (script, style
// and layout) in each wait, and when the page's request started and ended,
// where it measured them.
type benchSeries struct{ Page, Raw, Script, Style, Layout, Issued, Answered []float64 }

// benchResult is what bench.mjs measured.
type benchResult struct {
	Open, Counts, More, End, YAML, Detail benchSeries
	// Per run: the most rows and elements the DOM held, the rows
	// loaded, and the JS heap (after a collection) once the page opened
	// and after the paging.
	DOMRows, DOMElements, Loaded, HeapOpen, HeapPaged []float64
	Counted                                           map[string]int
	ConsoleErrors                                     []string
	// Opening is what the page fetched until its first page's request,
	// in its last run: ms from the navigation.
	Opening []struct {
		Path       string
		Start, End float64
	}
}

// check fails the benchmark when the page showed something else than the
// pods: timings of a wrong page mean nothing.
func (r *benchResult) check(b *testing.B, pods int) {
	total := 0
	for _, n := range r.Counted {
		total += n
	}
	if total != pods {
		b.Errorf("the count bars add up to %d (%v), want %d", total, r.Counted, pods)
	}
	if len(r.Open.Page) == 0 || len(r.More.Page) == 0 || len(r.YAML.Page) == 0 {
		b.Fatalf("nothing measured: %+v", r)
	}
	if len(r.ConsoleErrors) > 0 { // such as the favicon the host does not serve
		b.Logf("the page's console errors: %q", r.ConsoleErrors)
	}
}

func (r *benchResult) report(b *testing.B, backend string, pods, clusters int) {
	quantile := func(v []float64, q float64) float64 {
		s := slices.Sorted(slices.Values(v))
		if len(s) == 0 {
			return 0
		}
		return s[min(len(s)-1, int(q*float64(len(s))))]
	}
	lines := []string{fmt.Sprintf("%s: the search page over %d pods in %d clusters, ms from the input to the frame showing it (median, p90), beside the page's own request replayed raw from node:",
		backend, pods, clusters)}
	lines = append(lines, fmt.Sprintf("  %-52s %5s %9s %9s   %-28s %9s %9s   %s", "what the user sees", "n", "median", "p90", "raw request", "median", "p90", "page/raw"))
	for _, s := range []struct {
		name, raw, metric string
		v                 *benchSeries
	}{
		{"open on kind:pods -> first rows painted", "first page (limit 100)", "open", &r.Open},
		{"open on kind:pods -> count bars painted", "counts (groupBy cluster)", "counts", &r.Counts},
		{"Load more -> next 100 loaded, count painted", "next page (continue)", "more", &r.More},
		{"End -> last loaded rows painted", "(none: no request)", "end", &r.End},
		{"Enter on a row -> YAML painted", "GET the object", "yaml", &r.YAML},
		{"Enter on a row -> YAML, Events, History", "GET, then events | history", "detail", &r.Detail}, // request: the history's
	} {
		p50, p90 := quantile(s.v.Page, 0.5), quantile(s.v.Page, 0.9)
		line := fmt.Sprintf("  %-52s %5d %9.1f %9.1f   %-28s", s.name, len(s.v.Page), p50, p90, s.raw)
		if len(s.v.Raw) > 0 {
			r50, r90 := quantile(s.v.Raw, 0.5), quantile(s.v.Raw, 0.9)
			line += fmt.Sprintf(" %9.1f %9.1f   %5.2fx", r50, r90, p50/r50)
			b.ReportMetric(p50/r50, s.metric+"-p50/raw")
		}
		b.ReportMetric(p50, s.metric+"-p50-ms")
		if len(s.v.Issued) > 0 {
			line += fmt.Sprintf("   request %.1f-%.1f", quantile(s.v.Issued, 0.5), quantile(s.v.Answered, 0.5))
		}
		if len(s.v.Script) > 0 {
			line += fmt.Sprintf("   renderer: script %.1f, style %.1f, layout %.1f", quantile(s.v.Script, 0.5), quantile(s.v.Style, 0.5), quantile(s.v.Layout, 0.5))
		}
		lines = append(lines, line)
	}
	most := func(v []float64) float64 { return quantile(v, 1) }
	lines = append(lines, fmt.Sprintf("  after the paging: at most %.0f rows (%.0f elements) in the DOM with %.0f rows loaded; JS heap %.1f MiB once open, at most %.1f MiB after the paging",
		most(r.DOMRows), most(r.DOMElements), most(r.Loaded), quantile(r.HeapOpen, 0.5)/(1<<20), most(r.HeapPaged)/(1<<20)))
	lines = append(lines, "  what the page fetched before its first page's request (ms from the navigation):")
	for _, o := range r.Opening {
		lines = append(lines, fmt.Sprintf("    %7.1f-%7.1f %s", o.Start, o.End, o.Path))
	}
	b.ReportMetric(most(r.DOMRows), "dom-rows")
	b.ReportMetric(most(r.HeapPaged)/(1<<20), "heap-MiB")
	b.Log(strings.Join(lines, "\n"))
}

// runBench runs bench.mjs with plan and returns what it measured.
func runBench(b *testing.B, script, dir string, plan map[string]any) *benchResult {
	var got benchResult
	if output := runScript(b, script, dir, plan, 30*time.Minute, &got); len(output) > 0 {
		b.Logf("bench.mjs:\n%s", output)
	}
	return &got
}
