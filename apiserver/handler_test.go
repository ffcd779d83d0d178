package apiserver

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr/funcr"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/dynamic/dynamicinformer"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/metadata/metadatainformer"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"

	clusterv1alpha1 "github.com/panorama-io/panorama/apis/cluster/v1alpha1"
	searchv1alpha1 "github.com/panorama-io/panorama/apis/search/v1alpha1"
	"github.com/panorama-io/panorama/apiserver/watchcache"
	"github.com/panorama-io/panorama/storage"
	"github.com/panorama-io/panorama/storage/storagetest"
)

var podsGVR = schema.GroupVersionResource{Version: "v1", Resource: "pods"}

// testServer serves the resources path over a real store, without the
// generic server's filters: what the handler itself answers.
func testServer(t testing.TB) (storage.Interface, *rest.Config, *Registry) {
	return testServerWith(t, watchcache.Options{PollInterval: 100 * time.Millisecond})
}

// testServerWith is testServer with a watch cache tuned by opts.
func testServerWith(t testing.TB, opts watchcache.Options) (storage.Interface, *rest.Config, *Registry) {
	h, store := testHandlerWith(t, opts)
	return serveHandler(t, h, store)
}

// serveHandler serves h's paths, read from store, as testServer does.
func serveHandler(t testing.TB, h *Handler, store storage.Interface) (storage.Interface, *rest.Config, *Registry) {
	mux := http.NewServeMux()
	mux.Handle(searchv1alpha1.ViewsPrefix+"/", h)
	mux.Handle(ResourcesPrefix+"/", h)
	mux.HandleFunc(CollectionsPath+"/", h.ServeCollections)
	srv := httptest.NewServer(asUser(mux))
	t.Cleanup(srv.Close)
	return store, &rest.Config{Host: srv.URL + searchv1alpha1.ViewPath("")}, h.registry
}

// testHandler is a handler over a real store (SQLite) and watch cache, with
// clusters east and west serving pods, and the store, to write to: the
// handler only reads it.
func testHandler(t testing.TB) (*Handler, storage.Interface) {
	return testHandlerWith(t, watchcache.Options{PollInterval: 100 * time.Millisecond})
}

// testHandlerWith is testHandler with a watch cache tuned by opts.
func testHandlerWith(t testing.TB, opts watchcache.Options) (*Handler, storage.Interface) {
	store := storagetest.Backends()[0].Open(t)
	return testHandlerOver(t, store, opts), store
}

// testHandlerOver is testHandlerWith over store.
func testHandlerOver(t testing.TB, store storage.Interface, opts watchcache.Options) *Handler {
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	c := watchcache.New(store, opts)
	go func() { _ = c.Run(ctx) }()
	reg := NewRegistry()
	for _, name := range []string{"east", "west"} {
		reg.Set(clusterServing(name, podsGVR, "Pod"))
	}
	return &Handler{registry: reg, store: store, cache: c, crds: crdColumns{store: store}, authz: testGrants}
}

// clusterServing is a ready Cluster that syncs one namespaced resource.
func clusterServing(name string, gvr schema.GroupVersionResource, kind string) *clusterv1alpha1.Cluster {
	cl := &clusterv1alpha1.Cluster{ObjectMeta: metav1.ObjectMeta{Name: name}}
	meta.SetStatusCondition(&cl.Status.Conditions, metav1.Condition{Type: clusterv1alpha1.ConditionReady, Status: metav1.ConditionTrue, Reason: "Healthy"})
	cl.Status.SyncResources = []clusterv1alpha1.ResourceSyncStatus{{Group: gvr.Group, Version: gvr.Version, Resource: gvr.Resource, Kind: kind, Namespaced: true}}
	return cl
}

func putPod(t testing.TB, s storage.Interface, cluster, name string) {
	t.Helper()
	u := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "Pod",
		"metadata": map[string]any{"name": name, "namespace": "ns", "resourceVersion": "1", "uid": cluster + name}}}
	if _, err := s.ForCluster(cluster, storage.Unfenced).Apply(context.Background(), podsGVR, []storage.Change{storage.Upsert(u)}); err != nil {
		t.Fatal(err)
	}
}

// TestInformer runs a client-go informer (watch-list: sendInitialEvents)
// across clusters against the handler.
func TestInformer(t *testing.T) {
	store, cfg, _ := testServer(t)
	putPod(t, store, "east", "a")
	putPod(t, store, "west", "b")
	inf := dynamicinformer.NewDynamicSharedInformerFactory(dynamic.NewForConfigOrDie(cfg), 0).ForResource(podsGVR).Informer()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	go inf.Run(ctx.Done())
	if !cache.WaitForCacheSync(ctx.Done(), inf.HasSynced) {
		t.Fatal("informer did not sync")
	}
	if keys := inf.GetStore().ListKeys(); len(keys) != 2 {
		t.Fatalf("informer keys %v", keys)
	}
	// A metadata informer, as controllers use: PartialObjectMetadata lists
	// and watches.
	meta := metadatainformer.NewSharedInformerFactory(metadata.NewForConfigOrDie(cfg), 0).ForResource(podsGVR).Informer()
	go meta.Run(ctx.Done())
	if !cache.WaitForCacheSync(ctx.Done(), meta.HasSynced) {
		t.Fatal("metadata informer did not sync")
	}
	putPod(t, store, "east", "c")
	for _, i := range []cache.SharedIndexInformer{inf, meta} {
		for {
			if keys := i.GetStore().ListKeys(); len(keys) == 3 {
				break
			}
			select {
			case <-ctx.Done():
				t.Fatalf("informer keys %v", i.GetStore().ListKeys())
			case <-time.After(50 * time.Millisecond):
			}
		}
	}
	obj, exists, err := meta.GetStore().GetByKey("ns/c")
	if err != nil || !exists {
		t.Fatalf("metadata informer lacks ns/c: %v", err)
	}
	if m, ok := obj.(*metav1.PartialObjectMetadata); !ok || m.UID != "eastc" || m.Annotations[storage.ClusterAnnotation] != "east" {
		t.Fatalf("metadata informer object: %#v", obj)
	}
}

func TestBadRequests(t *testing.T) {
	store, cfg, _ := testServer(t)
	putPod(t, store, "east", "a")
	putPod(t, store, "west", "b")
	for path, want := range map[string]string{
		"/api/v1/pods?limit=abc":                                     "400",
		"/api/v1/pods?ownerSeniority=1&ownerUID=x&watch=1":           "400",
		"/api/v1/pods?labelSelector=search.panorama.io/x":            "400",
		"/api/v1/pods?orderby=color":                                 "400",
		"/api/v1/pods?resourceVersion=abc":                           "400",
		"/api/v1/pods?resourceVersion=99&resourceVersionMatch=Exact": "504",
		"/api/v1/widgets":                                            "404",
		"/api/v1/pods?names=a%00b":                                   "400",
		"/clusters/nowhere/api/v1/pods":                              "404",
		"/api/v1/namespaces/ns/pods/a/log":                           "405", // subresources.go
	} {
		resp, err := http.Get(viewURL(cfg, path))
		if err != nil {
			t.Fatal(err)
		}
		body := make([]byte, 512)
		n, _ := resp.Body.Read(body)
		resp.Body.Close()
		if fmt.Sprint(resp.StatusCode) != want || !strings.Contains(string(body[:n]), `"kind":"Status"`) {
			t.Errorf("%s: %d %s, want %s and a Status", path, resp.StatusCode, body[:n], want)
		}
	}
	// A cluster path and a clusters parameter that disagree select nothing.
	if code, _, body := getJSON(t, viewURL(cfg, "/clusters/east/api/v1/pods?clusters=west"), ""); code != 200 || len(body["items"].([]any)) != 0 {
		t.Errorf("disagreeing clusters: %d %v", code, body)
	}
	req, _ := http.NewRequest(http.MethodDelete, viewURL(cfg, "/clusters/east/api/v1/namespaces/ns/pods/a"), nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusMethodNotAllowed {
		t.Fatalf("delete: %d", resp.StatusCode)
	}
}

func getJSON(t *testing.T, url, accept string) (int, http.Header, map[string]any) {
	t.Helper()
	var body map[string]any
	code, header := getAs(t, url, "", accept, &body)
	return code, header, body
}

// getAs gets url as user ("admin" when empty) and decodes the answer into
// body.
func getAs(t *testing.T, url, user, accept string, body any) (int, http.Header) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, url, nil)
	if user != "" {
		req.Header.Set("Impersonate-User", user)
	}
	if accept != "" {
		req.Header.Set("Accept", accept)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	_ = json.NewDecoder(resp.Body).Decode(body)
	return resp.StatusCode, resp.Header
}

// TestListSemantics checks resourceVersion semantics, Table output and the
// warning for clusters that are not ready.
func TestListSemantics(t *testing.T) {
	store, cfg, registry := testServer(t)
	putPod(t, store, "east", "a")
	putPod(t, store, "west", "b")
	putPod(t, store, "east", "c")

	code, _, body := getJSON(t, cfg.Host+"/api/v1/pods?resourceVersion=2&resourceVersionMatch=Exact", "")
	if items := body["items"].([]any); code != 200 || len(items) != 2 || body["metadata"].(map[string]any)["resourceVersion"] != "2" {
		t.Fatalf("exact list at 2: %d %v", code, body)
	}
	// So is a paged list at a resourceVersion (kube's legacy Exact); without
	// a limit, it is NotOlderThan.
	code, _, body = getJSON(t, cfg.Host+"/api/v1/pods?limit=10&resourceVersion=2", "")
	if items := body["items"].([]any); code != 200 || len(items) != 2 || body["metadata"].(map[string]any)["resourceVersion"] != "2" {
		t.Fatalf("paged list at 2: %d %v", code, body)
	}
	if code, _, body = getJSON(t, cfg.Host+"/api/v1/pods?resourceVersion=2", ""); code != 200 || len(body["items"].([]any)) != 3 {
		t.Fatalf("list not older than 2: %d %v", code, body)
	}
	// resourceVersion=0 is served from the watch cache, which catches up.
	for deadline := time.Now().Add(10 * time.Second); ; {
		_, _, body = getJSON(t, cfg.Host+"/api/v1/pods?resourceVersion=0", "")
		if len(body["items"].([]any)) == 3 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("cached list: %v", body)
		}
		time.Sleep(50 * time.Millisecond)
	}
	if err := store.Compact(context.Background(), 3, false); err != nil {
		t.Fatal(err)
	}
	if code, _, body = getJSON(t, cfg.Host+"/api/v1/pods?resourceVersion=1&resourceVersionMatch=Exact", ""); code != http.StatusGone || body["reason"] != "Expired" {
		t.Fatalf("list at a compacted revision: %d %v", code, body)
	}
	code, _, body = getJSON(t, viewURL(cfg, "/clusters/east/api/v1/pods"), "application/json;as=Table;v=v1;g=meta.k8s.io")
	cols := body["columnDefinitions"].([]any)
	var names []string
	for _, c := range cols {
		names = append(names, c.(map[string]any)["name"].(string))
	}
	if code != 200 || strings.Join(names, ",") != "Cluster,Name,Ready,Status,Restarts,Age,IP,Node" || len(body["rows"].([]any)) != 2 {
		t.Fatalf("table: %d %v %v", code, names, body["rows"])
	}

	cl := &clusterv1alpha1.Cluster{ObjectMeta: metav1.ObjectMeta{Name: "down"}}
	meta.SetStatusCondition(&cl.Status.Conditions, metav1.Condition{Type: clusterv1alpha1.ConditionReady, Status: metav1.ConditionFalse, Reason: "Unhealthy", Message: "readyz: connection refused"})
	cl.Status.SyncResources = []clusterv1alpha1.ResourceSyncStatus{{Version: "v1", Resource: "pods", Kind: "Pod", Namespaced: true}}
	registry.Set(cl)
	for _, path := range []string{"/clusters/down/api/v1/pods", "/api/v1/pods?clusters=down,east"} {
		code, header, _ := getJSON(t, viewURL(cfg, path), "")
		if code != 200 || !strings.Contains(header.Get("Warning"), `cluster \"down\" is not ready`) {
			t.Fatalf("%s: %d, warning %q", path, code, header.Get("Warning"))
		}
	}
}

// TestCollections gets several kinds in one answer, at one revision.
func TestCollections(t *testing.T) {
	store, cfg, registry := testServer(t)
	deployments := schema.GroupVersionResource{Group: "apps", Version: "v1", Resource: "deployments"}
	statefulsets := schema.GroupVersionResource{Group: "apps", Version: "v1", Resource: "statefulsets"}
	east := clusterServing("east", deployments, "Deployment")
	east.Status.SyncResources = append(east.Status.SyncResources, clusterServing("", statefulsets, "StatefulSet").Status.SyncResources...)
	registry.Set(east)
	for i, gvr := range []schema.GroupVersionResource{deployments, statefulsets, deployments} {
		u := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "apps/v1", "kind": "Thing",
			"metadata": map[string]any{"name": fmt.Sprintf("w-%d", i), "namespace": "ns", "resourceVersion": "1", "labels": map[string]any{"app": fmt.Sprint(i % 2)}}}}
		if _, err := store.ForCluster("east", storage.Unfenced).Apply(context.Background(), gvr, []storage.Change{storage.Upsert(u)}); err != nil {
			t.Fatal(err)
		}
	}
	base := strings.TrimSuffix(cfg.Host, searchv1alpha1.ViewPath("")) + CollectionsPath
	_, _, list := getJSON(t, base+"/", "")
	if items := list["items"].([]any); len(items) != 2 || len(items[1].(map[string]any)["resourceTypes"].([]any)) != 2 {
		t.Fatalf("collections: %v", list)
	}
	code, _, got := getJSON(t, base+"/workloads?labelSelector=app%3D0", "")
	items := got["items"].([]any)
	var names []string
	for _, it := range items {
		names = append(names, it.(map[string]any)["metadata"].(map[string]any)["name"].(string))
	}
	if code != 200 || strings.Join(names, ",") != "w-0,w-2" || got["metadata"].(map[string]any)["resourceVersion"] != "3" {
		t.Fatalf("workloads app=0: %d %v %v", code, names, got["metadata"])
	}
	if code, _, got := getJSON(t, base+"/workloads?limit=1", ""); code != 200 || len(got["items"].([]any)) != 1 {
		t.Fatalf("limit: %d %v", code, got)
	}
	if code, _, _ := getJSON(t, base+"/nope", ""); code != 404 {
		t.Fatalf("unknown collection: %d", code)
	}
	if code, _, _ := getJSON(t, base+"/workloads?orderby=color", ""); code != 400 {
		t.Fatalf("bad parameter: %d", code)
	}
}

// TestGetClusterScoped gets cluster-scoped objects by name, as
// `kubectl get ns default` and `kubectl get node n1` do: a Namespace's
// path names it twice (.../namespaces/default), once where a namespaced
// object's path names its namespace.
func TestGetClusterScoped(t *testing.T) {
	store, cfg, registry := testServer(t)
	namespaces := schema.GroupVersionResource{Version: "v1", Resource: "namespaces"}
	nodes := schema.GroupVersionResource{Version: "v1", Resource: "nodes"}
	for _, cluster := range []string{"east", "west"} {
		cl := clusterServing(cluster, podsGVR, "Pod")
		for _, r := range []struct {
			gvr  schema.GroupVersionResource
			kind string
		}{{namespaces, "Namespace"}, {nodes, "Node"}} {
			cl.Status.SyncResources = append(cl.Status.SyncResources, clusterv1alpha1.ResourceSyncStatus{
				Version: "v1", Resource: r.gvr.Resource, Kind: r.kind})
			u := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": r.kind,
				"metadata": map[string]any{"name": map[string]string{"Namespace": "default", "Node": "n1"}[r.kind], "resourceVersion": "1"},
				"status":   map[string]any{"phase": "Active"}}}
			if _, err := store.ForCluster(cluster, storage.Unfenced).Apply(context.Background(), r.gvr, []storage.Change{storage.Upsert(u)}); err != nil {
				t.Fatal(err)
			}
		}
		registry.Set(cl)
	}
	for path, want := range map[string]string{
		"/api/v1/namespaces/default":                "Namespace default",
		"/clusters/west/api/v1/namespaces/default":  "Namespace default west",
		"/api/v1/nodes/n1":                          "Node n1",
		"/clusters/east/api/v1/nodes/n1":            "Node n1 east",
		"/api/v1/namespaces/nope":                   "404",
		"/clusters/east/api/v1/namespaces/nope":     "404",
		"/api/v1/namespaces/default/nodes/n1":       "404", // no node lives in a namespace
		"/clusters/east/api/v1/namespaces/x/nodes/": "404",
	} {
		code, _, body := getJSON(t, viewURL(cfg, path), "")
		got := fmt.Sprint(code)
		if code == http.StatusOK {
			u := unstructured.Unstructured{Object: body}
			got = u.GetKind() + " " + u.GetName()
			if strings.Contains(path, "/clusters/") {
				got += " " + u.GetAnnotations()[storage.ClusterAnnotation]
			}
		}
		if got != want {
			t.Errorf("GET %s: %s, want %s (%v)", path, got, want, body)
		}
	}
	// kubectl get ns default: a Table of the Namespace in each cluster.
	code, _, body := getJSON(t, cfg.Host+"/api/v1/namespaces/default", tableContentType)
	rows, _ := body["rows"].([]any)
	if code != http.StatusOK || len(rows) != 2 {
		t.Fatalf("table of namespace default: %d %v", code, body)
	}
	for _, row := range rows {
		if cells := row.(map[string]any)["cells"].([]any); cells[1] != "default" || cells[2] != "Active" {
			t.Errorf("table row of namespace default: %v", cells)
		}
	}
}

// TestRequestContextEnds: a request whose client went away or whose time is
// up is answered 504 Timeout, as kube-apiserver does, and is not logged as
// an internal error.
func TestRequestContextEnds(t *testing.T) {
	h, store := testHandler(t)
	putPod(t, store, "east", "a")
	var (
		mu     sync.Mutex
		logged []string
	)
	klog.SetLogger(funcr.New(func(prefix, args string) {
		if strings.Contains(args, "internal error") {
			mu.Lock()
			logged = append(logged, args)
			mu.Unlock()
		}
	}, funcr.Options{}))
	defer klog.ClearLogger()

	canceled, cancel := context.WithCancel(context.Background())
	cancel()
	expired, cancelExpired := context.WithDeadline(context.Background(), time.Now().Add(-time.Second))
	defer cancelExpired()
	for _, ctx := range []context.Context{canceled, expired} {
		for _, path := range []string{"/api/v1/pods", "/clusters/east/api/v1/namespaces/ns/pods/a", "/api/v1/namespaces/ns/pods/a",
			"/api/v1/pods?resourceVersion=1", "/api/v1/pods?limit=1&resourceVersion=1&resourceVersionMatch=Exact"} {
			rec := httptest.NewRecorder()
			req := httptest.NewRequest(http.MethodGet, viewURL(&rest.Config{}, path), nil).WithContext(ctx)
			asUser(h).ServeHTTP(rec, req)
			var st metav1.Status
			_ = json.Unmarshal(rec.Body.Bytes(), &st)
			if rec.Code != http.StatusGatewayTimeout || st.Reason != metav1.StatusReasonTimeout {
				t.Errorf("GET %s with %v: %d %s, want 504 Timeout", path, ctx.Err(), rec.Code, rec.Body)
			}
		}
	}
	klog.Flush()
	mu.Lock()
	defer mu.Unlock()
	if len(logged) > 0 {
		t.Errorf("logged: %q", logged)
	}
}
