package apiserver

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/dynamic/dynamicinformer"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"

	clusterv1alpha1 "github.com/panorama-io/panorama/apis/cluster/v1alpha1"
	searchv1alpha1 "github.com/panorama-io/panorama/apis/search/v1alpha1"
	"github.com/panorama-io/panorama/apiserver/watchcache"
	"github.com/panorama-io/panorama/storage"
)

// TestFlatNames: flat namespaces and names stand for exactly the member
// ones they were made of, with dots in cluster names and in cluster-scoped
// names; only clusters named as dotted prefixes of each other share one.
func TestFlatNames(t *testing.T) {
	for _, c := range []struct{ cluster, namespace string }{
		{"east", "shop"}, {"eu.prod", "shop"}, {"a.b.c", "kube-system"}, {"e", "s"},
	} {
		flat := flatNamespace(c.cluster, c.namespace)
		cluster, ns, ok := splitFlatNamespace(flat)
		if !ok || cluster != c.cluster || ns != c.namespace {
			t.Errorf("%+v: %q splits into %q %q %v", c, flat, cluster, ns, ok)
		}
	}
	if got := flatNamespace("east", ""); got != "" {
		t.Errorf("no namespace is flat %q", got)
	}
	for _, flat := range []string{"", "shop", ".shop", "east.", "."} {
		if c, ns, ok := splitFlatNamespace(flat); ok {
			t.Errorf("%q split into %q %q", flat, c, ns)
		}
	}

	clusters := []string{"east", "prod", "prod.eu", "west"}
	for flat, want := range map[string]string{
		"east.n1":                   "east/n1",
		"east.widgets.example.com":  "east/widgets.example.com", // a CRD
		"west.system:node-proxier":  "west/system:node-proxier", // a ClusterRole
		"prod.eu.n1":                "prod/eu.n1 prod.eu/n1",    // nested cluster names: both
		"prod.eu.":                  "prod/eu.",
		"prod.":                     "",
		"north.n1":                  "", // no such cluster
		"east":                      "",
		"eastern.n1":                "",
		"prod.eu.ip-10-0-0-1.local": "prod/eu.ip-10-0-0-1.local prod.eu/ip-10-0-0-1.local",
	} {
		var got []string
		for _, k := range splitFlatName(flat, clusters) {
			got = append(got, k.cluster+"/"+k.value)
			if flatName(k.cluster, k.value) != flat {
				t.Errorf("%q: %s does not make it again", flat, k)
			}
		}
		if strings.Join(got, " ") != want {
			t.Errorf("%q splits into %q, want %q", flat, got, want)
		}
	}
}

func (k memberKey) String() string { return k.cluster + "/" + k.value }

// TestFlatten: flattening changes only metadata's namespace (or a
// cluster-scoped object's name) and drops its selfLink; every other byte
// is kept, numbers beyond float64 and a nested "metadata" included, and
// the object's shared JSON is left as it was.
func TestFlatten(t *testing.T) {
	for _, c := range []struct {
		namespace, name, data, want string
	}{
		{"web", "db-0",
			`{"apiVersion":"v1","kind":"Pod","metadata":{"name":"db-0","namespace":"web","selfLink":"/api/v1/x","uid":"u"},"spec":{"n":12345678901234567890,"metadata":{"namespace":"web"},"s":"é\u003c"}}`,
			`{"apiVersion":"v1","kind":"Pod","metadata":{"name":"db-0","namespace":"east.web","uid":"u"},"spec":{"n":12345678901234567890,"metadata":{"namespace":"web"},"s":"é\u003c"}}`},
		{"", "n1.local",
			`{"kind":"Node","metadata":{"name":"n1.local","labels":{"name":"n1.local"}}}`,
			`{"kind":"Node","metadata":{"name":"east.n1.local","labels":{"name":"n1.local"}}}`},
	} {
		shared := []byte(c.data)
		o := &storage.Object{Key: storage.Key{Cluster: "east", Namespace: c.namespace, Name: c.name}, Data: shared}
		if err := flatten(o); err != nil {
			t.Fatal(err)
		}
		if string(o.Data) != c.want || string(shared) != c.data {
			t.Errorf("flatten:\n got %s\nwant %s\nthe shared JSON is now %s", o.Data, c.want, shared)
		}
	}
}

// TestFlatQuery: a query of the flat view selects in member terms exactly
// the objects whose flat namespace or name it asks, checked against every
// object of a small universe by the query's own reference (Matches) and
// the view's filter.
func TestFlatQuery(t *testing.T) {
	var universe []storage.Object
	for _, c := range []string{"east", "west", "prod", "prod.eu"} {
		for _, ns := range []string{"shop", "web", ""} {
			for _, name := range []string{"a", "eu.a"} {
				universe = append(universe, storage.Object{Key: storage.Key{Cluster: c, GVR: podsGVR, Namespace: ns, Name: name}})
			}
		}
	}
	flatKey := func(o storage.Object) string {
		if o.Namespace == "" {
			return flatName(o.Cluster, o.Name)
		}
		return flatNamespace(o.Cluster, o.Namespace) + "/" + o.Name
	}
	clusters := []string{"east", "prod", "prod.eu", "west"}
	for _, c := range []struct {
		namespaced bool
		clusters   []string
		namespaces []string
		names      []string
		fields     string
		want       func(flatKey string, o storage.Object) bool
	}{
		{namespaced: true, namespaces: []string{"east.shop"},
			want: func(k string, _ storage.Object) bool { return strings.HasPrefix(k, "east.shop/") }},
		{namespaced: true, namespaces: []string{"east.shop", "west.web"},
			want: func(k string, _ storage.Object) bool {
				return strings.HasPrefix(k, "east.shop/") || strings.HasPrefix(k, "west.web/")
			}},
		{namespaced: true, namespaces: []string{"east.shop", "west.web"}, clusters: []string{"west"},
			want: func(k string, _ storage.Object) bool { return strings.HasPrefix(k, "west.web/") }},
		{namespaced: true, namespaces: []string{"shop"}, want: func(string, storage.Object) bool { return false }},
		{namespaced: true, namespaces: []string{"east.shop"}, clusters: []string{"west"}, want: func(string, storage.Object) bool { return false }},
		{namespaced: true, fields: "metadata.namespace=prod.eu.web",
			want: func(k string, _ storage.Object) bool { return strings.HasPrefix(k, "prod.eu.web/") }},
		{namespaced: true, fields: "metadata.namespace!=prod.eu.web",
			want: func(k string, _ storage.Object) bool { return !strings.HasPrefix(k, "prod.eu.web/") }},
		{namespaced: true, fields: "metadata.namespace!=shop", want: func(string, storage.Object) bool { return true }},
		{namespaced: true, fields: "metadata.namespace=", want: func(string, storage.Object) bool { return false }},
		{fields: "metadata.namespace=", want: func(string, storage.Object) bool { return true }},
		{namespaced: true, fields: "metadata.namespace=east.shop,metadata.name=eu.a",
			want: func(k string, _ storage.Object) bool { return k == "east.shop/eu.a" }},
		{namespaced: true, names: []string{"eu.a"}, want: func(_ string, o storage.Object) bool { return o.Name == "eu.a" }},
		// Cluster-scoped: names are flat.
		{names: []string{"prod.eu.a"}, want: func(k string, o storage.Object) bool { return o.Namespace == "" && k == "prod.eu.a" }},
		{names: []string{"prod.eu.a", "east.a"},
			want: func(k string, o storage.Object) bool { return o.Namespace == "" && (k == "prod.eu.a" || k == "east.a") }},
		{fields: "metadata.name=prod.eu.a", want: func(k string, o storage.Object) bool { return o.Namespace == "" && k == "prod.eu.a" }},
		{fields: "metadata.name=west.a", want: func(k string, o storage.Object) bool { return o.Namespace == "" && k == "west.a" }},
		{fields: "metadata.name!=prod.eu.a", want: func(k string, o storage.Object) bool { return o.Namespace != "" || k != "prod.eu.a" }},
		{fields: "metadata.name=a", want: func(string, storage.Object) bool { return false }},
	} {
		name := fmt.Sprintf("%v %v %v %q", c.clusters, c.namespaces, c.names, c.fields)
		q := storage.ListQuery{GVR: podsGVR, Clusters: c.clusters, Namespaces: c.namespaces, Names: c.names}
		sel, err := fields.ParseSelector(c.fields)
		if err != nil {
			t.Fatal(err)
		}
		q.Fields = sel.Requirements()
		v := &flatView{clusters: clusters}
		if err := v.query(&q, c.namespaced); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if err := q.Validate(); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		for _, o := range universe {
			if (o.Namespace != "") != c.namespaced {
				continue // an object of the other scope
			}
			got := q.Matches(&o, nil) && (v.keep == nil || v.keep(&o))
			if want := c.want(flatKey(o), o); got != want {
				t.Errorf("%s: %s selected %v, want %v (query %+v)", name, flatKey(o), got, want, q)
			}
		}
	}
	q := storage.ListQuery{GVR: podsGVR, Fields: fields.OneTermNotEqualSelector("involvedObject.namespace", "east.shop").Requirements()}
	if err := (&flatView{clusters: clusters}).query(&q, true); err == nil {
		t.Error("involvedObject.namespace!= was taken")
	}
	outside := memberView("")
	q = storage.ListQuery{GVR: schema.GroupVersionResource{Version: "v1", Resource: "nodes"}, Names: []string{"east.a"}}
	if err := outside.query(&q, false); err != nil || !slices.Equal(q.Names, []string{"east.a"}) || len(q.Clusters) > 0 {
		t.Errorf("no view changed the query: %+v %v", q, err)
	}
}

// flatItems are the "namespace/name uid" of a list's items (name alone
// for cluster-scoped ones), and its continue token.
func flatItems(t *testing.T, url string) ([]string, string) {
	t.Helper()
	code, _, body := getJSON(t, url, "")
	if code != http.StatusOK {
		t.Fatalf("GET %s: %d %v", url, code, body)
	}
	var out []string
	for _, it := range body["items"].([]any) {
		u := unstructured.Unstructured{Object: it.(map[string]any)}
		key := u.GetName()
		if u.GetNamespace() != "" {
			key = u.GetNamespace() + "/" + key
		}
		out = append(out, key+" "+string(u.GetUID()))
	}
	cont, _ := body["metadata"].(map[string]any)["continue"].(string)
	return out, cont
}

// checkItems lists each path of want under view and checks its items, as
// flatItems has them, against want's.
func checkItems(t *testing.T, view func(path string) string, want map[string]string) {
	t.Helper()
	for path, items := range want {
		if got, _ := flatItems(t, view(path)); strings.Join(got, ",") != items {
			t.Errorf("GET %s: %q, want %q", path, got, items)
		}
	}
}

// getOne is the object at url as describe has it, or the status code.
func getOne(t *testing.T, url string, describe func(u *unstructured.Unstructured) string) (string, http.Header) {
	t.Helper()
	code, header, body := getJSON(t, url, "")
	if code != http.StatusOK {
		return fmt.Sprint(code), header
	}
	return describe(&unstructured.Unstructured{Object: body}), header
}

// TestFlatView: in the flat view, same-named pods of two clusters are two
// objects for get, list, Table, watch and informers, selected by flat
// namespaces in paths, field selectors and search parameters, paged and
// authorized as across clusters.
func TestFlatView(t *testing.T) {
	store, cfg, _ := testServer(t)
	putPod(t, store, "east", "a")
	putPod(t, store, "west", "a")
	putPod(t, store, "east", "b")
	flat := func(path string) string { return viewURL(cfg, "/clusters/"+searchv1alpha1.FlatClusters+path) }

	checkItems(t, flat, map[string]string{
		"/api/v1/pods":                                                                 "east.ns/a easta,east.ns/b eastb,west.ns/a westa",
		"/api/v1/namespaces/east.ns/pods":                                              "east.ns/a easta,east.ns/b eastb",
		"/api/v1/namespaces/ns/pods":                                                   "", // no flat namespace
		"/api/v1/namespaces/north.ns/pods":                                             "",
		"/api/v1/pods?clusters=west":                                                   "west.ns/a westa",
		"/api/v1/pods?namespaces=west.ns":                                              "west.ns/a westa",
		"/api/v1/pods?namespaces=east.ns,x.y":                                          "east.ns/a easta,east.ns/b eastb",
		"/api/v1/pods?labelSelector=search.panorama.io/namespaces%3Dwest.ns":           "west.ns/a westa",
		"/api/v1/pods?fieldSelector=metadata.namespace%3Dwest.ns":                      "west.ns/a westa",
		"/api/v1/pods?fieldSelector=metadata.namespace%21%3Dwest.ns":                   "east.ns/a easta,east.ns/b eastb",
		"/api/v1/pods?fieldSelector=metadata.name%3Da":                                 "east.ns/a easta,west.ns/a westa",
		"/api/v1/namespaces/west.ns/pods?fieldSelector=metadata.namespace%3Dwest.ns":   "west.ns/a westa",
		"/api/v1/namespaces/west.ns/pods?namespaces=east.ns":                           "",
		"/api/v1/pods?resourceVersion=0&fieldSelector=metadata.namespace%21%3Deast.ns": "west.ns/a westa", // the watch cache's
	})

	// Paging: every object once, also when the view filters pages short.
	for query, want := range map[string]string{
		"limit=1": "east.ns/a easta,east.ns/b eastb,west.ns/a westa",
		"limit=1&fieldSelector=metadata.namespace%21%3Dwest.ns": "east.ns/a easta,east.ns/b eastb",
		"limit=2&namespaces=west.ns,east.x":                     "west.ns/a westa",
	} {
		var all []string
		for cont, pages := "", 0; ; pages++ {
			items, next := flatItems(t, flat("/api/v1/pods?"+query+"&continue="+cont))
			all = append(all, items...)
			if next == "" || pages > 5 {
				break
			}
			cont = next
		}
		if strings.Join(all, ",") != want {
			t.Errorf("pages of %s: %q, want %q", query, all, want)
		}
	}

	// Get: one object, its namespace flat.
	for path, want := range map[string]string{
		"/api/v1/namespaces/west.ns/pods/a": "west.ns/a westa",
		"/api/v1/namespaces/east.ns/pods/a": "east.ns/a easta",
		"/api/v1/namespaces/west.ns/pods/b": "404",
		"/api/v1/namespaces/ns/pods/a":      "404",
		"/api/v1/namespaces/.ns/pods/a":     "404",
	} {
		got, header := getOne(t, flat(path), func(u *unstructured.Unstructured) string {
			return u.GetNamespace() + "/" + u.GetName() + " " + string(u.GetUID())
		})
		if got != want || header.Get("Warning") != "" {
			t.Errorf("GET %s: %s, want %s (warning %q)", path, got, want, header.Get("Warning"))
		}
	}

	// Table (kubectl's default): the rows' objects have flat namespaces.
	for path, want := range map[string]string{
		"/api/v1/pods": "east a east.ns,east b east.ns,west a west.ns",
		"/api/v1/namespaces/west.ns/pods/a?includeObject=Object": "west a west.ns",
	} {
		code, _, body := getJSON(t, flat(path), tableContentType)
		var got []string
		rows, _ := body["rows"].([]any)
		for _, row := range rows {
			cells := row.(map[string]any)["cells"].([]any)
			meta := row.(map[string]any)["object"].(map[string]any)["metadata"].(map[string]any)
			got = append(got, fmt.Sprintf("%v %v %v", cells[0], cells[1], meta["namespace"]))
		}
		if code != http.StatusOK || strings.Join(got, ",") != want {
			t.Errorf("table of %s: %d %q, want %q", path, code, got, want)
		}
	}

	// Informers key objects by namespace/name: across clusters they keep
	// one pod a of two; in the flat view, both.
	for cluster, want := range map[string]string{"": "ns/a,ns/b", searchv1alpha1.FlatClusters: "east.ns/a,east.ns/b,west.ns/a"} {
		inf := dynamicinformer.NewDynamicSharedInformerFactory(dynamic.NewForConfigOrDie(as(cfg, "admin", cluster)), 0).ForResource(podsGVR).Informer()
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		go inf.Run(ctx.Done())
		if !cache.WaitForCacheSync(ctx.Done(), inf.HasSynced) {
			t.Fatalf("%q: informer did not sync", cluster)
		}
		cancel()
		keys := inf.GetStore().ListKeys()
		slices.Sort(keys)
		if strings.Join(keys, ",") != want {
			t.Errorf("informer of view %q: keys %v, want %s", cluster, keys, want)
		}
	}

	// Watch: events with flat namespaces, selected by flat namespaces,
	// through the query (==) and through the view's filter (!=).
	_, _, list := getJSON(t, flat("/api/v1/pods"), "")
	rv := list["metadata"].(map[string]any)["resourceVersion"].(string)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var watches []*http.Response
	for _, sel := range []string{"metadata.namespace%3Dwest.ns", "metadata.namespace%21%3Deast.ns"} {
		resp := startWatch(t, ctx, flat("/api/v1/pods?watch=1&allowWatchBookmarks=true&resourceVersion="+rv+"&fieldSelector="+sel), "admin")
		defer resp.Body.Close()
		watches = append(watches, resp)
	}
	putPod(t, store, "east", "c")
	putPod(t, store, "west", "c")
	for i, resp := range watches {
		dec := json.NewDecoder(resp.Body)
		for {
			var e struct {
				Type   string
				Object unstructured.Unstructured
			}
			if err := dec.Decode(&e); err != nil {
				t.Fatalf("watch %d: %v", i, err)
			}
			if e.Type == "BOOKMARK" {
				continue
			}
			if got := e.Type + " " + e.Object.GetNamespace() + "/" + e.Object.GetName(); got != "ADDED west.ns/c" {
				t.Errorf("watch %d: first event %s, want ADDED west.ns/c", i, got)
			}
			break
		}
	}
}

// TestFlatViewAround: in the flat view, cluster-scoped objects have flat
// names, reads are authorized as across clusters on the member namespaces,
// and discovery, /version, self reviews and subresource refusals answer
// as across clusters, in member terms.
func TestFlatViewAround(t *testing.T) {
	store, cfg, registry := testServer(t)
	putPod(t, store, "east", "a")
	putPod(t, store, "west", "a")
	namespaces := schema.GroupVersionResource{Version: "v1", Resource: "namespaces"}
	nodes := schema.GroupVersionResource{Version: "v1", Resource: "nodes"}
	for _, cluster := range []string{"east", "west", "eu.prod"} {
		cl := clusterServing(cluster, podsGVR, "Pod")
		for kind, gvr := range map[string]schema.GroupVersionResource{"Namespace": namespaces, "Node": nodes} {
			cl.Status.SyncResources = append(cl.Status.SyncResources, clusterv1alpha1.ResourceSyncStatus{Version: "v1", Resource: gvr.Resource, Kind: kind})
			name := map[string]string{"Namespace": "ns", "Node": "n1.local"}[kind]
			u := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": kind,
				"metadata": map[string]any{"name": name, "resourceVersion": "1", "selfLink": "/api/v1/" + gvr.Resource + "/" + name}}}
			if _, err := store.ForCluster(cluster, storage.Unfenced).Apply(context.Background(), gvr, []storage.Change{storage.Upsert(u)}); err != nil {
				t.Fatal(err)
			}
		}
		registry.Set(cl)
	}
	flat := func(path string) string { return viewURL(cfg, "/clusters/"+searchv1alpha1.FlatClusters+path) }
	checkItems(t, flat, map[string]string{
		"/api/v1/namespaces": "east.ns ,eu.prod.ns ,west.ns ",
		"/api/v1/nodes":      "east.n1.local ,eu.prod.n1.local ,west.n1.local ",
		"/api/v1/nodes?fieldSelector=metadata.name%3Deu.prod.n1.local": "eu.prod.n1.local ",
		"/api/v1/nodes?fieldSelector=metadata.name%21%3Deast.n1.local": "eu.prod.n1.local ,west.n1.local ",
		"/api/v1/nodes?names=west.n1.local,east.nope":                  "west.n1.local ",
		"/api/v1/nodes?fieldSelector=metadata.name%3Dn1.local":         "",
	})
	for path, want := range map[string]string{
		"/api/v1/namespaces/eu.prod.ns":     "eu.prod.ns eu.prod",
		"/api/v1/nodes/west.n1.local":       "west.n1.local west",
		"/api/v1/nodes/eu.prod.n1.local":    "eu.prod.n1.local eu.prod",
		"/api/v1/nodes/n1.local":            "404",
		"/api/v1/namespaces/ns":             "404",
		"/api/v1/namespaces/eu.prod.ns/x/y": "404",
	} {
		got, _ := getOne(t, flat(path), func(u *unstructured.Unstructured) string {
			return u.GetName() + " " + u.GetAnnotations()[storage.ClusterAnnotation] + u.GetSelfLink()
		})
		if got != want {
			t.Errorf("GET %s: %s, want %s", path, got, want)
		}
	}

	// Authorization is that of the member namespace: nsuser may read pods
	// in namespace ns of every cluster, not across namespaces; east only
	// in cluster east.
	for _, c := range []struct {
		user, namespace string
		want            []string // nil: 403
	}{
		{"nsuser", "east.ns", []string{"a"}},
		{"nsuser", "", nil},
		{"nsuser", "ns", []string{}},
		{"east", "", []string{"a"}},
		{"east", "west.ns", nil},
		{"services", "east.ns", nil},
	} {
		got, _, err := listNames(t, as(cfg, c.user, searchv1alpha1.FlatClusters), c.namespace)
		if c.want == nil {
			if !apierrors.IsForbidden(err) {
				t.Errorf("%+v: want 403, got %v %v", c, got, err)
			}
			continue
		}
		if err != nil || strings.Join(got, ",") != strings.Join(c.want, ",") {
			t.Errorf("%+v: got %v %v", c, got, err)
		}
	}

	// Self reviews speak of the member namespace.
	for _, c := range []struct {
		user, namespace string
		allowed         bool
		reason          string
	}{
		{"nsuser", "east.ns", true, "in namespace ns of clusters east"},
		{"nsuser", "eu.prod.ns", true, "in namespace ns of clusters eu.prod"},
		{"nsuser", "east.other", false, "in namespace other of no cluster"},
		{"nsuser", "ns", false, `"ns" is none`},
		{"nsuser", "", false, "of no cluster"},
	} {
		st, err := accessReview(t, as(cfg, c.user, searchv1alpha1.FlatClusters), read("list", "pods", c.namespace))
		if err != nil || st.Allowed != c.allowed || !strings.Contains(st.Reason, c.reason) {
			t.Errorf("%+v: %+v %v", c, st, err)
		}
	}
	rules, err := kubernetes.NewForConfigOrDie(as(cfg, "nsuser", searchv1alpha1.FlatClusters)).AuthorizationV1().SelfSubjectRulesReviews().Create(context.Background(),
		&authorizationv1.SelfSubjectRulesReview{Spec: authorizationv1.SelfSubjectRulesReviewSpec{Namespace: "west.ns"}}, metav1.CreateOptions{})
	if err != nil || !slices.ContainsFunc(rules.Status.ResourceRules, func(r authorizationv1.ResourceRule) bool { return slices.Contains(r.Resources, "pods") }) {
		t.Errorf("rules of nsuser in west.ns: %+v %v", rules, err)
	}

	// A refused subresource names the member's cluster, namespace and name.
	_, err = kubernetes.NewForConfigOrDie(as(cfg, "admin", searchv1alpha1.FlatClusters)).CoreV1().Pods("east.ns").GetLogs("a", &corev1.PodLogOptions{}).Stream(context.Background())
	if !apierrors.IsMethodNotSupported(err) || !strings.Contains(err.Error(), `ask cluster "east" directly: kubectl --context <context of east> logs -n ns pods/a`) {
		t.Errorf("logs: %v", err)
	}

	// Discovery and /version as across clusters; the deprecated prefix has
	// no flat view.
	for path, want := range map[string]int{
		searchv1alpha1.ViewPath(searchv1alpha1.FlatClusters) + "/version":                          http.StatusOK,
		searchv1alpha1.ViewPath(searchv1alpha1.FlatClusters) + "/api/v1":                           http.StatusOK,
		searchv1alpha1.ViewPath(searchv1alpha1.FlatClusters) + "/apis":                             http.StatusOK,
		ResourcesPrefix + "/clusters/_flat/api/v1/pods":                                            http.StatusNotFound,
		searchv1alpha1.ViewPath(searchv1alpha1.FlatClusters) + "/api/v1/namespaces/east.ns/pods/a": http.StatusOK,
	} {
		if code, _, body := getJSON(t, strings.TrimSuffix(cfg.Host, searchv1alpha1.ViewPath(""))+path, ""); code != want {
			t.Errorf("GET %s: %d %v, want %d", path, code, body, want)
		}
	}
}

// dottedNamespaces serves pod x in namespace "b.c" of cluster "a" and in
// namespace "c" of cluster "a.b", and both Namespaces: what the flat view
// spells alike. It returns the flat view's URL of a member path.
func dottedNamespaces(t *testing.T) (flat func(path string) string, registry *Registry) {
	store, cfg, registry := testServer(t)
	namespaces := schema.GroupVersionResource{Version: "v1", Resource: "namespaces"}
	put := func(cluster string, gvr schema.GroupVersionResource, kind, namespace, name string) {
		meta := map[string]any{"name": name, "resourceVersion": "1", "uid": cluster + "/" + namespace + "/" + name}
		if namespace != "" {
			meta["namespace"] = namespace
		}
		putObject(t, store, cluster, gvr, map[string]any{"apiVersion": "v1", "kind": kind, "metadata": meta})
	}
	for cluster, ns := range map[string]string{"a": "b.c", "a.b": "c"} {
		cl := clusterServing(cluster, podsGVR, "Pod")
		cl.Status.SyncResources = append(cl.Status.SyncResources, clusterv1alpha1.ResourceSyncStatus{Version: "v1", Resource: "namespaces", Kind: "Namespace"})
		registry.Set(cl)
		put(cluster, podsGVR, "Pod", ns, "x")
		put(cluster, namespaces, "Namespace", "", ns)
	}
	return func(path string) string { return viewURL(cfg, "/clusters/"+searchv1alpha1.FlatClusters+path) }, registry
}

// TestFlatCountsDottedNamespace: a count of the flat view counts what its
// list returns, whatever it groups by: objects of a dotted member
// namespace, and the Namespace named with a dot, which the list leaves
// out, are in no group, whatever else selects.
func TestFlatCountsDottedNamespace(t *testing.T) {
	flat, _ := dottedNamespaces(t)
	for path, want := range map[string]string{
		"/api/v1/pods?groupBy=cluster":                   "a.b=1",
		"/api/v1/pods?groupBy=namespace":                 "a.b.c=1",
		"/api/v1/pods?groupBy=cluster,namespace":         "a.b/a.b.c=1",
		"/api/v1/pods?groupBy=label:app":                 "<none>=1",
		"/api/v1/namespaces?groupBy=cluster":             "a.b=1",
		"/api/v1/namespaces?groupBy=label:app":           "<none>=1",
		"/api/v1/namespaces?groupBy=cluster&fuzzyName=c": "a.b=1",
	} {
		if code, _, body := getCounts(t, flat(path), "", ""); code != http.StatusOK || body.groups() != want {
			t.Errorf("%s: %d %+v, want %s", path, code, body, want)
		}
	}
}

// TestFlatViewDottedNamespace: member namespaces have no dots, so that
// flat namespaces split back into one cluster and namespace. Namespace
// "b.c" of cluster "a", which a member may claim, would read as namespace
// "c" of cluster "a.b": its objects, and the Namespace itself, are left
// out of the flat view, and never shown as, or in place of, a.b's.
func TestFlatViewDottedNamespace(t *testing.T) {
	flat, registry := dottedNamespaces(t)
	checkItems(t, flat, map[string]string{
		"/api/v1/pods":                      "a.b.c/x a.b/c/x",
		"/api/v1/pods?resourceVersion=0":    "a.b.c/x a.b/c/x",
		"/api/v1/namespaces/a.b.c/pods":     "a.b.c/x a.b/c/x",
		"/api/v1/namespaces":                "a.b.c a.b//c",
		"/api/v1/namespaces?names=a.b.c":    "a.b.c a.b//c",
		"/api/v1/pods?namespaces=a.b.c,a.x": "a.b.c/x a.b/c/x",
	})
	for path, want := range map[string]string{
		"/api/v1/namespaces/a.b.c/pods/x": "a.b/c/x",
		"/api/v1/namespaces/a.b.c":        "a.b//c",
	} {
		if got, _ := getOne(t, flat(path), func(u *unstructured.Unstructured) string { return string(u.GetUID()) }); got != want {
			t.Errorf("GET %s: %s, want %s", path, got, want)
		}
	}
	if code, _, body := getCounts(t, flat("/api/v1/pods?groupBy=namespace"), "", ""); code != http.StatusOK || body.groups() != "a.b.c=1" {
		t.Errorf("count by namespace: %d %+v", code, body)
	}

	// Watch events too.
	v := &flatView{clusters: registry.Names()}
	if err := v.query(&storage.ListQuery{GVR: podsGVR}, true); err != nil {
		t.Fatal(err)
	}
	for ns, want := range map[string]bool{"b.c": false, "c": true} {
		e := watchcache.Event{Object: &storage.Object{Key: storage.Key{Cluster: "a", Namespace: ns, Name: "x"}, Data: []byte(`{"metadata":{}}`)}}
		if keep, err := v.event(&e); err != nil || keep != want {
			t.Errorf("event of namespace %q: %v %v, want %v", ns, keep, err, want)
		}
	}
}
