package apiserver

import (
	"cmp"
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/log"

	clusterv1alpha1 "github.com/panorama-io/panorama/apis/cluster/v1alpha1"
	"github.com/panorama-io/panorama/apiserver/watchcache"
	"github.com/panorama-io/panorama/storage"
	"github.com/panorama-io/panorama/storage/sqlstore"
	"github.com/panorama-io/panorama/storage/storagetest"
)

// relationsPage is the limit of every list BenchmarkRelations times, as
// kubectl and client-go page.
const relationsPage = 500

// BenchmarkRelations stores PANORAMA_BENCH_RELATIONS_PODS realistic pods
// (default 100,000; relatedPod: owner, node, account, secrets and config
// maps by volume, env and envFrom) across PANORAMA_BENCH_RELATIONS_CLUSTERS
// clusters (default 10), with a Service and two ConfigMaps per ReplicaSet,
// on each backend, and lists them across clusters through this handler
// over HTTP, PANORAMA_BENCH_RELATIONS_RUNS times each (default 50, the
// queries taking turns): read from the database (a watch cache holding
// nothing) and from a watch cache holding the resources. It prints each
// relation and keyword query's p50 and p99 as ratios to those of a label
// query selecting the same pods as the commonly used secret (a team's
// label: RealisticPod's app label is its ReplicaSet's), measured in the
// same run, and what the references and the keywords cost the database:
// the bytes their rows and indexes take, per pod and as a ratio to the
// pods' JSON.
func BenchmarkRelations(b *testing.B) {
	pods := storagetest.EnvInt(b, "PANORAMA_BENCH_RELATIONS_PODS", 100_000, storagetest.BenchBatch)
	clusters := storagetest.EnvInt(b, "PANORAMA_BENCH_RELATIONS_CLUSTERS", 10, 1)
	runs := storagetest.EnvInt(b, "PANORAMA_BENCH_RELATIONS_RUNS", 50, 30)
	for _, backend := range storagetest.Backends() {
		b.Run(backend.Name, func(b *testing.B) {
			opts := backend.Options(b)
			store := storagetest.OpenStore(b, opts)
			f := ingestRelatedFleet(b, store, pods, clusters)
			queries := f.queries()
			for range b.N {
				for _, reads := range []struct {
					name  string
					cache watchcache.Options
				}{
					// A budget no resource fits: the cache holds none.
					{"database", watchcache.Options{PollInterval: 100 * time.Millisecond, MemoryBudget: 1}},
					{"watch-cache", watchcache.Options{PollInterval: 100 * time.Millisecond}},
				} {
					srv, cache, stop := relationsServer(store, reads.cache, f.registry())
					b.Cleanup(stop) // before the store closes, when the benchmark fails
					if reads.cache.MemoryBudget == 0 {
						waitCached(b, cache, srv, []schema.GroupVersionResource{podsGVR, configMapsGVR, servicesGVR})
					}
					lat := timeQueries(b, srv, queries, runs)
					if reads.cache.MemoryBudget != 0 && cache.Holds(podsGVR) {
						b.Fatal("the watch cache held the pods: the times are not the database's")
					}
					stop()
					reportRelations(b, backend.Name+" "+reads.name, reads.name, queries, lat)
				}
			}
			// The references' and keywords' rows are measured last:
			// measuring deletes them. The store is closed first, so that
			// nothing reads the database while it is rebuilt.
			_ = store.Close()
			reportReferenceBytes(b, backend.Name, opts, f)
			reportKeywordBytes(b, backend.Name, opts, f)
		})
	}
}

// relatedPod is storagetest.RealisticPod with the references a workload's
// pod makes beyond an owner, a node, an account and the projected token's
// config map: its ReplicaSet's own service account, config map (a volume),
// environment (envFrom) and certificate (a secret volume), its team's
// database password (a secret in env) and the registry's pull secret,
// which every pod has; and the annotations of annotateRelatedPod.
func relatedPod(rng *rand.Rand, i int) *unstructured.Unstructured {
	u := storagetest.RealisticPod(rng, i, 0)
	app, team := u.GetLabels()["app"], u.GetLabels()["team"]
	spec := u.Object["spec"].(map[string]any)
	spec["serviceAccountName"], spec["serviceAccount"] = app, app
	spec["imagePullSecrets"] = []any{map[string]any{"name": "regcred"}}
	spec["volumes"] = append(spec["volumes"].([]any),
		map[string]any{"name": "config", "configMap": map[string]any{"name": app + "-config", "defaultMode": int64(420)}},
		map[string]any{"name": "tls", "secret": map[string]any{"secretName": app + "-tls", "defaultMode": int64(420)}})
	ctr := spec["containers"].([]any)[0].(map[string]any)
	ctr["env"] = append(ctr["env"].([]any), map[string]any{"name": "DB_PASSWORD",
		"valueFrom": map[string]any{"secretKeyRef": map[string]any{"name": team + "-db", "key": "password"}}})
	ctr["envFrom"] = []any{map[string]any{"configMapRef": map[string]any{"name": app + "-env"}}}
	ctr["volumeMounts"] = append(ctr["volumeMounts"].([]any),
		map[string]any{"name": "config", "mountPath": "/etc/app", "readOnly": true},
		map[string]any{"name": "tls", "mountPath": "/etc/tls", "readOnly": true})
	annotateRelatedPod(u, i, app, ctr["image"].(string))
	return u
}

// fleetPod is what the queries' answers are checked against of a pod.
type fleetPod struct {
	cluster, namespace, name, app, team, node string
	// ticket and deployer are its rollout's, incident its own if any.
	ticket, deployer, incident string
}

func (p fleetPod) key() string { return p.cluster + "/" + p.namespace + "/" + p.name }

// relationsFleet is what ingestRelatedFleet stored.
type relationsFleet struct {
	clusters  []string
	pods      []fleetPod
	jsonBytes int64 // the pods' compact JSON, as their members serve it
}

// ingestRelatedFleet stores n relatedPods, 500 at a time (25 ReplicaSets)
// in the next of clusters, each ReplicaSet's Service (selecting its app)
// and ConfigMaps beside them, and every namespace's kube-root-ca.crt, as
// the clusters' synchronizers would.
func ingestRelatedFleet(b *testing.B, s storage.Interface, n, clusters int) *relationsFleet {
	ctx := context.Background()
	f := &relationsFleet{}
	for c := range clusters {
		f.clusters = append(f.clusters, pagingCluster(c))
	}
	apply := func(cluster string, gvr schema.GroupVersionResource, changes []storage.Change) {
		if _, err := s.ForCluster(cluster, storage.Unfenced).Apply(ctx, gvr, changes); err != nil {
			b.Fatal(err)
		}
	}
	for _, cluster := range f.clusters {
		var roots []storage.Change
		for ns := range 50 {
			roots = append(roots, storage.Upsert(benchConfigMap(fmt.Sprintf("ns-%d", ns), "kube-root-ca.crt")))
		}
		apply(cluster, configMapsGVR, roots)
	}
	rng := rand.New(rand.NewPCG(37, 37))
	start := time.Now()
	for i, batch := 0, 0; i < n; i, batch = i+storagetest.BenchBatch, batch+1 {
		cluster := f.clusters[batch%clusters]
		var pods, services, configMaps []storage.Change
		apps := map[string]string{} // app → namespace
		for j := i; j < min(i+storagetest.BenchBatch, n); j++ {
			u := relatedPod(rng, j)
			data, err := json.Marshal(u.Object)
			if err != nil {
				b.Fatal(err)
			}
			f.jsonBytes += int64(len(data))
			p := fleetPod{cluster: cluster, namespace: u.GetNamespace(), name: u.GetName(), app: u.GetLabels()["app"],
				team: u.GetLabels()["team"], node: u.Object["spec"].(map[string]any)["nodeName"].(string), incident: incidentOf(j)}
			r := rolloutOf(p.app)
			p.ticket, p.deployer = r.ticket, r.deployer
			f.pods = append(f.pods, p)
			apps[p.app] = p.namespace
			pods = append(pods, storage.Upsert(u))
		}
		for _, app := range slices.Sorted(maps.Keys(apps)) {
			services = append(services, storage.Upsert(benchService(apps[app], app)))
			configMaps = append(configMaps, storage.Upsert(benchConfigMap(apps[app], app+"-config")), storage.Upsert(benchConfigMap(apps[app], app+"-env")))
		}
		apply(cluster, podsGVR, pods)
		apply(cluster, servicesGVR, services)
		apply(cluster, configMapsGVR, configMaps)
	}
	took := time.Since(start)
	b.ReportMetric(float64(n)/took.Seconds(), "ingest-pods/s")
	b.Logf("ingested %d pods across %d clusters in %v (%.0f pods/s, with their services and config maps)",
		n, clusters, took.Round(time.Millisecond), float64(n)/took.Seconds())
	return f
}

func benchConfigMap(namespace, name string) *unstructured.Unstructured {
	return &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "ConfigMap",
		"metadata": map[string]any{"name": name, "namespace": namespace, "resourceVersion": "1", "uid": namespace + "/" + name},
		"data":     map[string]any{"app.yaml": "listen: :8080\nlog: info\n"}}}
}

func benchService(namespace, app string) *unstructured.Unstructured {
	return &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "Service",
		"metadata": map[string]any{"name": app, "namespace": namespace, "resourceVersion": "1", "uid": namespace + "/" + app},
		"spec": map[string]any{"selector": map[string]any{"app": app}, "type": "ClusterIP",
			"ports": []any{map[string]any{"name": "http", "port": int64(80), "targetPort": int64(8080), "protocol": "TCP"}}}}}
}

// relationsServer serves the resources of reg over store, with a watch
// cache tuned by opts, until stop, which returns once the cache stopped
// reading the store.
func relationsServer(store storage.Interface, opts watchcache.Options, reg *Registry) (base string, cache *watchcache.Cache, stop func()) {
	ctx, cancel := context.WithCancel(log.IntoContext(context.Background(), logr.Discard()))
	cache = watchcache.New(store, opts)
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = cache.Run(ctx)
	}()
	h := &Handler{registry: reg, store: store, cache: cache, crds: crdColumns{store: store}, authz: testGrants}
	srv := httptest.NewServer(asUser(h))
	return srv.URL, cache, sync.OnceFunc(func() {
		srv.Close()
		cancel()
		<-done
	})
}

// registry has the fleet's clusters serve pods, services and config maps.
func (f *relationsFleet) registry() *Registry {
	reg := NewRegistry()
	for _, name := range f.clusters {
		cl := &clusterv1alpha1.Cluster{}
		*cl = *clusterServing(name, podsGVR, "Pod")
		cl.Status.SyncResources = append(cl.Status.SyncResources,
			clusterServing(name, servicesGVR, "Service").Status.SyncResources[0],
			clusterServing(name, configMapsGVR, "ConfigMap").Status.SyncResources[0])
		reg.Set(cl)
	}
	return reg
}

// relationQuery is a list BenchmarkRelations times: path (under the view
// of all clusters) with its parameters but the limit, and the keys
// (cluster/namespace/name) of every object it selects.
type relationQuery struct {
	name, metric, path string
	want               map[string]bool
}

// queries are the label query the others are ratios to (queries()[0]),
// a label query of every pod (beside the reference every pod makes), then
// the relation queries, their ends chosen among the fleet's: the
// team with the most pods (whose database secret is the common one), its
// namespace with the most of them, the node most pods run on, and the pod
// in the middle of the fleet with its ReplicaSet's certificate (the rare
// secret), config maps and Service; and the keyword queries.
func (f *relationsFleet) queries() []relationQuery {
	team := mostCommon(f.pods, func(p fleetPod) string { return p.team })
	ns := mostCommon(f.pods, func(p fleetPod) string {
		if p.team != team {
			return ""
		}
		return p.namespace
	})
	node := mostCommon(f.pods, func(p fleetPod) string { return p.node })
	mid := f.pods[len(f.pods)/2]
	pods := f.selecting
	inMid := func(names ...string) map[string]bool {
		out := map[string]bool{}
		for _, name := range names {
			out[mid.cluster+"/"+mid.namespace+"/"+name] = true
		}
		return out
	}
	param := func(k, v string) string { return k + "=" + url.QueryEscape(v) }
	return append([]relationQuery{
		{"pods labelSelector team=" + team + " (baseline)", "label", "/api/v1/pods?" + param("labelSelector", "team="+team),
			pods(func(p fleetPod) bool { return p.team == team })},
		{"pods refersTo=secret/" + team + "-db (common)", "refersTo-secret-common", "/api/v1/pods?" + param("refersTo", "secret/"+team+"-db"),
			pods(func(p fleetPod) bool { return p.team == team })},
		{"pods refersTo=secret/" + mid.app + "-tls (rare)", "refersTo-secret-rare", "/api/v1/pods?" + param("refersTo", "secret/"+mid.app+"-tls"),
			pods(func(p fleetPod) bool { return p.app == mid.app })},
		{"pods labelSelector tier=back (every pod)", "label-every", "/api/v1/pods?" + param("labelSelector", "tier=back"),
			pods(func(fleetPod) bool { return true })},
		{"pods refersTo=secret/regcred (every pod)", "refersTo-secret-every", "/api/v1/pods?" + param("refersTo", "secret/regcred"),
			pods(func(fleetPod) bool { return true })},
		{"pods refersTo=secret/" + ns + "/" + team + "-db", "refersTo-secret-namespaced", "/api/v1/pods?" + param("refersTo", "secret/"+ns+"/"+team+"-db"),
			pods(func(p fleetPod) bool { return p.team == team && p.namespace == ns })},
		{"pods refersTo=node/" + node, "refersTo-node", "/api/v1/pods?" + param("refersTo", "node/"+node),
			pods(func(p fleetPod) bool { return p.node == node })},
		{"configmaps referredBy=pod/" + mid.namespace + "/" + mid.name, "referredBy-pod", "/api/v1/configmaps?" + param("referredBy", "pod/"+mid.namespace+"/"+mid.name),
			inMid("kube-root-ca.crt", mid.app+"-config", mid.app+"-env")},
		{"services refersTo=pod/" + mid.name, "services-refersTo-pod", "/api/v1/services?" + param("refersTo", "pod/"+mid.name),
			inMid(mid.app)},
		{"pods referredBy=svc/" + mid.app, "pods-referredBy-svc", "/api/v1/pods?" + param("referredBy", "svc/"+mid.app),
			pods(func(p fleetPod) bool { return p.app == mid.app })},
	}, f.keywordQueries(team)...)
}

// selecting is the keys of the fleet's pods that keep keeps.
func (f *relationsFleet) selecting(keep func(p fleetPod) bool) map[string]bool {
	out := map[string]bool{}
	for _, p := range f.pods {
		if keep(p) {
			out[p.key()] = true
		}
	}
	return out
}

// mostCommon is the most frequent non-empty value of pods, the first in
// order of those as frequent.
func mostCommon(pods []fleetPod, value func(fleetPod) string) string {
	counts := map[string]int{}
	for _, p := range pods {
		if v := value(p); v != "" {
			counts[v]++
		}
	}
	return slices.MaxFunc(slices.Sorted(maps.Keys(counts)), func(a, b string) int {
		return cmp.Or(cmp.Compare(counts[a], counts[b]), strings.Compare(b, a))
	})
}

// waitCached lists each of gvrs until the watch cache holds it: the
// first list of a resource starts loading it.
func waitCached(b *testing.B, c *watchcache.Cache, base string, gvrs []schema.GroupVersionResource) {
	deadline := time.Now().Add(10 * time.Minute)
	for _, gvr := range gvrs {
		for !c.Holds(gvr) {
			if time.Now().After(deadline) {
				b.Fatalf("the watch cache did not load %s", gvr.Resource)
			}
			getList(b, base+viewPathOf("/api/v1/"+gvr.Resource+"?limit=1"))
			time.Sleep(100 * time.Millisecond)
		}
	}
}

// timeQueries checks each query's first page against what it selects (a
// wrong answer fails the benchmark, the timing goes on), then times runs of each, the queries taking turns, so that a machine
// busier for a while slows them alike; it returns each query's latencies,
// sorted.
func timeQueries(b *testing.B, base string, queries []relationQuery, runs int) [][]time.Duration {
	urls := make([]string, len(queries))
	for i, q := range queries {
		urls[i] = fmt.Sprintf("%s%s&limit=%d", base, viewPathOf(q.path), relationsPage)
		if err := checkPage(getList(b, urls[i]), q.want); err != nil {
			b.Errorf("%s: %v", q.name, err) // the others are still timed
		}
	}
	lat := make([][]time.Duration, len(queries))
	for range runs {
		for i, u := range urls {
			start := time.Now()
			getList(b, u)
			lat[i] = append(lat[i], time.Since(start))
		}
	}
	for _, l := range lat {
		slices.Sort(l)
	}
	return lat
}

// getList reads the whole answer to a GET of a list, which must be 200.
func getList(b *testing.B, u string) []byte {
	resp, err := http.Get(u)
	if err != nil {
		b.Fatal(err)
	}
	defer func() { _ = resp.Body.Close() }()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		b.Fatal(err)
	}
	if resp.StatusCode != http.StatusOK {
		b.Fatalf("GET %s: %d %.300s", u, resp.StatusCode, body)
	}
	return body
}

// checkPage checks that a first page holds as many of want's objects as
// fit, each once, and nothing else.
func checkPage(body []byte, want map[string]bool) error {
	var list struct {
		Items []struct {
			Metadata struct {
				Name, Namespace string
				Annotations     map[string]string
			}
		}
	}
	if err := json.Unmarshal(body, &list); err != nil {
		return err
	}
	seen := map[string]bool{}
	for _, it := range list.Items {
		key := it.Metadata.Annotations[storage.ClusterAnnotation] + "/" + it.Metadata.Namespace + "/" + it.Metadata.Name
		if !want[key] || seen[key] {
			return fmt.Errorf("listed %s, which it does not select or listed before", key)
		}
		seen[key] = true
	}
	if got, fit := len(list.Items), min(len(want), relationsPage); got != fit {
		return fmt.Errorf("listed %d objects, want %d (of %d selected)", got, fit, len(want))
	}
	return nil
}

// reportRelations prints each query's p50 and p99, and, for the relation
// queries, their ratios to the label query's (the first).
func reportRelations(b *testing.B, title, prefix string, queries []relationQuery, lat [][]time.Duration) {
	p50 := func(i int) time.Duration { return storagetest.Quantile(lat[i], 0.50) }
	p99 := func(i int) time.Duration { return storagetest.Quantile(lat[i], 0.99) }
	lines := []string{fmt.Sprintf("%s: first page (limit %d) across clusters, %d runs each:", title, relationsPage, len(lat[0]))}
	for i, q := range queries {
		r50, r99 := float64(p50(i))/float64(p50(0)), float64(p99(i))/float64(p99(0))
		if i > 0 {
			b.ReportMetric(r50, prefix+"/"+q.metric+"-p50/label")
			b.ReportMetric(r99, prefix+"/"+q.metric+"-p99/label")
		}
		lines = append(lines, fmt.Sprintf("  %-70s p50 %9v (%5.2fx)  p99 %9v (%5.2fx)", q.name,
			p50(i).Round(time.Microsecond), r50, p99(i).Round(time.Microsecond), r99))
	}
	b.Log(strings.Join(lines, "\n"))
}

// reportReferenceBytes prints what the references cost the database:
// their attribute rows and dictionary values, per pod, and the bytes they
// take, data and indexes, as the difference between the database's
// tables rebuilt with them and rebuilt without them (each database then
// holds its rows packed, as written rows are not), per pod and as a ratio
// to the pods' JSON. It deletes the references' rows.
func reportReferenceBytes(b *testing.B, backend string, opts sqlstore.Options, f *relationsFleet) {
	exec, scan, closeDB := rawDB(b, opts)
	defer closeDB()
	// Literals, not parameters: the drivers' placeholders differ.
	key := scan("SELECT id FROM attribute_keys WHERE kind = 'f' AND name = '" + storage.ReferencesField + "'")
	rows := scan(fmt.Sprintf("SELECT COUNT(*) FROM object_attributes WHERE key_id = %d", key))
	values := scan(fmt.Sprintf("SELECT COUNT(*) FROM attribute_values WHERE key_id = %d", key))
	before := rebuiltBytes(b, opts.Driver, referenceTables, exec, scan)
	exec(fmt.Sprintf("DELETE FROM object_attributes WHERE key_id = %d", key))
	exec(fmt.Sprintf("DELETE FROM attribute_values WHERE key_id = %d", key))
	exec(fmt.Sprintf("DELETE FROM attribute_keys WHERE id = %d", key))
	after := rebuiltBytes(b, opts.Driver, referenceTables, exec, scan)
	n := float64(len(f.pods))
	perPod := float64(before-after) / n
	ratio := float64(before-after) / float64(f.jsonBytes)
	b.ReportMetric(float64(rows)/n, "reference-rows/pod")
	b.ReportMetric(perPod, "reference-B/pod")
	b.ReportMetric(ratio, "reference-bytes/json")
	b.Logf("%s: references: %.2f attribute rows per pod, %d dictionary values (%.3f per pod): %.0f B per pod (tables rebuilt: %d B with them, %d B without), %.3fx the pods' JSON (%.0f B each)",
		backend, float64(rows)/n, values, float64(values)/n, perPod, before, after, ratio, float64(f.jsonBytes)/n)
}

// rawDB opens the database of opts outside the store, for statements
// that no store method makes: exec runs one, scan reads one's one number.
func rawDB(b *testing.B, opts sqlstore.Options) (exec func(string), scan func(string) int64, closeDB func()) {
	db, err := sql.Open(map[string]string{"sqlite": "sqlite", "mysql": "mysql", "postgres": "pgx"}[opts.Driver], opts.DSN)
	if err != nil {
		b.Fatal(err)
	}
	exec = func(query string) {
		if _, err := db.Exec(query); err != nil {
			b.Fatalf("%s: %v", query, err)
		}
	}
	scan = func(query string) int64 {
		var n sql.NullInt64
		if err := db.QueryRow(query).Scan(&n); err != nil {
			b.Fatalf("%s: %v", query, err)
		}
		return n.Int64
	}
	return exec, scan, func() { _ = db.Close() }
}

// referenceTables are the tables the references' rows are in.
var referenceTables = []string{"object_attributes", "attribute_values", "attribute_keys"}

// rebuiltBytes rebuilds tables and returns the bytes they then take, data
// and indexes: SQLite rebuilds the whole database (whose other tables
// stay as they were) and returns its bytes, InnoDB rebuilds the tables,
// and PostgreSQL copies of them.
func rebuiltBytes(b *testing.B, driver string, tables []string, exec func(string), scan func(string) int64) int64 {
	switch driver {
	case "sqlite":
		exec("VACUUM")
		return (scan("PRAGMA page_count") - scan("PRAGMA freelist_count")) * scan("PRAGMA page_size")
	case "mysql":
		exec("OPTIMIZE TABLE " + strings.Join(tables, ", "))
		exec("ANALYZE TABLE " + strings.Join(tables, ", "))
		return scan("SELECT SUM(data_length + index_length) FROM information_schema.tables WHERE table_schema = DATABASE() AND table_name IN ('" +
			strings.Join(tables, "', '") + "')")
	case "postgres":
		// Copies, not VACUUM FULL, which keeps the deleted rows that a
		// hot standby's or another session's snapshot may still read.
		var total int64
		for _, t := range tables {
			exec("CREATE TABLE packed (LIKE " + t + " INCLUDING ALL)")
			exec("INSERT INTO packed SELECT * FROM " + t)
			total += scan("SELECT pg_total_relation_size('packed')")
			exec("DROP TABLE packed")
		}
		return total
	}
	b.Fatalf("no rebuild for %s", driver)
	return 0
}
