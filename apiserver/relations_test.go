package apiserver

import (
	"context"
	"net/url"
	"slices"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	clusterv1alpha1 "github.com/panorama-io/panorama/apis/cluster/v1alpha1"
	searchv1alpha1 "github.com/panorama-io/panorama/apis/search/v1alpha1"
	"github.com/panorama-io/panorama/storage"
)

var (
	servicesGVR   = schema.GroupVersionResource{Version: "v1", Resource: "services"}
	configMapsGVR = schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}
	ingressesGVR  = schema.GroupVersionResource{Group: "networking.k8s.io", Version: "v1", Resource: "ingresses"}
)

// relatedFleet stores, in clusters east and west, pods that refer to
// secrets and config maps, and services that select some of them: west's
// web Service selects none, its pod lacking the tier it asks for.
func relatedFleet(t *testing.T) (*Registry, string) {
	t.Helper()
	store, cfg, registry := testServer(t)
	pod := func(name string, labels map[string]any, secret string) storage.Change {
		return storage.Upsert(&unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "Pod",
			"metadata": map[string]any{"name": name, "namespace": "shop", "resourceVersion": "1", "labels": labels},
			"spec": map[string]any{
				"nodeName": "node-1",
				"volumes": []any{
					map[string]any{"name": "s", "secret": map[string]any{"secretName": secret}},
					map[string]any{"name": "c", "configMap": map[string]any{"name": "cfg-" + name}},
				},
				"containers": []any{map[string]any{"name": "app", "image": "nginx"}},
			},
		}})
	}
	service := func(name string, selector map[string]any) storage.Change {
		spec := map[string]any{"ports": []any{map[string]any{"port": int64(80)}}}
		if name == "alias" {
			spec["type"], spec["externalName"] = "ExternalName", "web.example.com"
		}
		if selector != nil {
			spec["selector"] = selector
		}
		return storage.Upsert(&unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "Service",
			"metadata": map[string]any{"name": name, "namespace": "shop", "resourceVersion": "1"}, "spec": spec}})
	}
	configMap := func(name string) storage.Change {
		return storage.Upsert(&unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "ConfigMap",
			"metadata": map[string]any{"name": name, "namespace": "shop", "resourceVersion": "1"}}})
	}
	fleet := map[string]map[schema.GroupVersionResource][]storage.Change{
		"east": {
			podsGVR: {
				pod("web-0", map[string]any{"app": "web", "tier": "front"}, "db-pass"),
				pod("web-1", map[string]any{"app": "web"}, "db-pass-old"),
				pod("api-0", map[string]any{"app": "api"}, "db-pass"),
			},
			servicesGVR:   {service("web", map[string]any{"app": "web"}), service("api", map[string]any{"app": "api"}), service("external", nil), service("alias", map[string]any{"app": "web"})},
			configMapsGVR: {configMap("cfg-web-0"), configMap("cfg-web-1"), configMap("cfg-api-0"), configMap("unused")},
			ingressesGVR: {storage.Upsert(&unstructured.Unstructured{Object: map[string]any{"apiVersion": "networking.k8s.io/v1", "kind": "Ingress",
				"metadata": map[string]any{"name": "shop", "namespace": "shop", "resourceVersion": "1"},
				"spec":     map[string]any{"defaultBackend": map[string]any{"service": map[string]any{"name": "web"}}}}})},
		},
		"west": {
			podsGVR:       {pod("web-0", map[string]any{"app": "web", "tier": "back"}, "db-pass")},
			servicesGVR:   {service("web", map[string]any{"app": "web", "tier": "front"})},
			configMapsGVR: {configMap("cfg-web-0")},
		},
	}
	for cluster, byGVR := range fleet {
		cl := &clusterv1alpha1.Cluster{}
		*cl = *clusterServing(cluster, podsGVR, "Pod")
		for gvr, changes := range byGVR {
			if gvr != podsGVR {
				kind := map[schema.GroupVersionResource]string{servicesGVR: "Service", configMapsGVR: "ConfigMap", ingressesGVR: "Ingress"}[gvr]
				cl.Status.SyncResources = append(cl.Status.SyncResources, clusterServing("", gvr, kind).Status.SyncResources...)
			}
			if _, err := store.ForCluster(cluster, storage.Unfenced).Apply(context.Background(), gvr, changes); err != nil {
				t.Fatal(err)
			}
		}
		registry.Set(cl)
	}
	return registry, strings.TrimSuffix(viewURL(cfg, "/api/v1"), "/api/v1")
}

// names are the cluster/name of a list's items, sorted.
func relatedNames(t *testing.T, got map[string]any) string {
	t.Helper()
	var out []string
	items, _ := got["items"].([]any)
	for _, it := range items {
		o := &unstructured.Unstructured{Object: it.(map[string]any)}
		out = append(out, o.GetAnnotations()[storage.ClusterAnnotation]+"/"+o.GetName())
	}
	slices.Sort(out)
	return strings.Join(out, " ")
}

// TestRelations asks what refers to an object and what an object refers
// to, by URL parameter and by search label, in every cluster and in one,
// from storage and from the watch cache, and checks each answer against
// the objects stored.
func TestRelations(t *testing.T) {
	_, base := relatedFleet(t)
	label := func(s string) string { return "labelSelector=" + url.QueryEscape(s) }
	for _, tc := range []struct{ path, query, want string }{
		{"/api/v1/pods", "refersTo=secret/db-pass", "east/api-0 east/web-0 west/web-0"},
		{"/api/v1/pods", label("search.panorama.io/refersTo=secret_db-pass"), "east/api-0 east/web-0 west/web-0"},
		{"/api/v1/pods", "refersTo=secrets/shop/db-pass", "east/api-0 east/web-0 west/web-0"},
		{"/api/v1/pods", label("search.panorama.io/refersTo=secret_shop_db-pass,app=web"), "east/web-0 west/web-0"},
		{"/api/v1/pods", "refersTo=secret/elsewhere/db-pass", ""},
		{"/api/v1/pods", "refersTo=secret/db", ""},
		{"/api/v1/pods", "refersTo=secret/db-pass-old,cm/cfg-api-0", "east/api-0 east/web-1"},
		{"/api/v1/pods", "refersTo=node/node-1&clusters=west", "west/web-0"},
		{"/api/v1/namespaces/shop/services", "refersTo=pod/web-0", "east/web"},
		{"/api/v1/services", label("search.panorama.io/refersTo=po_api-0"), "east/api"},
		{"/api/v1/pods", "referredBy=service/web", "east/web-0 east/web-1"},
		{"/api/v1/namespaces/shop/pods", label("search.panorama.io/referredBy=svc_api"), "east/api-0"},
		{"/api/v1/pods", "referredBy=service/external", ""},
		{"/api/v1/pods", "referredBy=service/alias", ""},
		{"/api/v1/configmaps", "referredBy=pod/shop/web-0", "east/cfg-web-0 west/cfg-web-0"},
		{"/api/v1/configmaps", "referredBy=pod/web-0&clusters=east", "east/cfg-web-0"},
		{"/api/v1/configmaps", "referredBy=pod/web-0&refersTo=secret/x", ""},
		{"/api/v1/services", "referredBy=pod/web-0", ""},
		{"/api/v1/services", "refersTo=secret/db-pass&hops=2", "east/api east/web"},
		{"/api/v1/pods", "refersTo=secret/db-pass&hops=2", "east/api-0 east/web-0 west/web-0"},
		{"/apis/networking.k8s.io/v1/ingresses", "refersTo=secret/db-pass-old&hops=3", "east/shop"},
		{"/apis/networking.k8s.io/v1/ingresses", "refersTo=secret/db-pass-old&hops=2", ""},
		{"/api/v1/configmaps", "referredBy=service/web&hops=2", "east/cfg-web-0 east/cfg-web-1"},
		{"/api/v1/configmaps", label("search.panorama.io/referredBy=ingress_shop,search.panorama.io/hops=3"), "east/cfg-web-0 east/cfg-web-1"},
		{"/api/v1/configmaps", "referredBy=ingress/shop&hops=2", ""},
	} {
		for _, rv := range []string{"", "&resourceVersion=0"} {
			code, _, got := getJSON(t, base+tc.path+"?"+tc.query+rv, "")
			if code != 200 || relatedNames(t, got) != tc.want {
				t.Errorf("%s?%s%s: %d %v\n got %s\nwant %s", tc.path, tc.query, rv, code, got["message"], relatedNames(t, got), tc.want)
			}
		}
	}
	// Counts, under the relation, from the rows and from the watch cache.
	for _, rv := range []string{"", "&resourceVersion=0"} {
		for query, want := range map[string]string{
			"refersTo=secret/db-pass&groupBy=cluster":        "east=2 west=1",
			"referredBy=service/web&groupBy=label:app":       "web=2",
			"refersTo=secret/db-pass&hops=2&groupBy=cluster": "east=2 west=1",
		} {
			code, _, body := getCounts(t, base+"/api/v1/pods?"+query+rv, "", "")
			if code != 200 || body.groups() != want {
				t.Errorf("%s%s: %d %s, want %s", query, rv, code, body.groups(), want)
			}
		}
	}
	// In one cluster's view.
	east := strings.Replace(base, "/clusters/_all/", "/clusters/east/", 1)
	if code, _, got := getJSON(t, east+"/api/v1/pods?refersTo=secret/db-pass", ""); code != 200 || relatedNames(t, got) != "east/api-0 east/web-0" {
		t.Errorf("east's view: %d %s", code, relatedNames(t, got))
	}
	for query, want := range map[string]int{
		"refersTo=secret":                              400,
		"refersTo=secret/a/b/c":                        400,
		"refersTo=nokind/x":                            400,
		"refersTo=secret/" + "a%00b":                   400,
		"referredBy=pod/a,pod/b":                       400,
		"referredBy=secret/db-pass":                    400, // no cluster syncs secrets
		"referredBy=pod/web-0&watch=true":              400,
		"refersTo=secret/x&hops=2&watch=true":          400,
		"refersTo=secret/x&hops=4":                     400,
		"hops=2":                                       400,
		"refersTo=node/shop/node-1":                    400,
		label("search.panorama.io/refersTo!=secret_x"): 400,
	} {
		if code, _, got := getJSON(t, base+"/api/v1/pods?"+query, ""); code != want || got["kind"] != "Status" {
			t.Errorf("%s: %d %v, want %d", query, code, got, want)
		}
	}
}

// TestRelationsAuthorized: a user sees a relation only where they may read
// both of its ends.
func TestRelationsAuthorized(t *testing.T) {
	_, base := relatedFleet(t)
	for _, tc := range []struct {
		user, path, query string
		code              int
		want              string
	}{
		{"east", "/api/v1/pods", "refersTo=secret/db-pass", 200, "east/api-0 east/web-0"},
		{"east", "/api/v1/configmaps", "referredBy=pod/web-0", 403, ""},
		{"pods", "/api/v1/configmaps", "referredBy=pod/web-0", 403, ""},
		{"services", "/api/v1/services", "refersTo=pod/web-0", 403, ""},
		{"services", "/api/v1/pods", "referredBy=service/web", 403, ""},
		{"pods", "/api/v1/pods", "referredBy=service/web", 403, ""},
		// A grant of one namespace reads the relations there.
		{"shop", "/api/v1/namespaces/shop/services", "refersTo=pod/web-0", 200, "east/web"},
		{"shop", "/api/v1/namespaces/shop/configmaps", "referredBy=service/web&hops=2", 200, "east/cfg-web-0 east/cfg-web-1"},
		{"shop", "/api/v1/namespaces/shop/services", "refersTo=secret/db-pass&hops=2", 200, "east/api east/web"},
		{"shop", "/api/v1/services", "refersTo=pod/web-0", 403, ""},
		// A walk leaves out what the user may not list: here the pods.
		{"svccm", "/api/v1/configmaps", "referredBy=service/web&hops=2", 200, ""},
		{"svccm", "/api/v1/services", "refersTo=secret/db-pass&hops=2", 200, ""},
	} {
		var got map[string]any
		code, _ := getAs(t, base+tc.path+"?"+tc.query, tc.user, "", &got)
		if code != tc.code || code == 200 && relatedNames(t, got) != tc.want {
			t.Errorf("%s %s?%s: %d %s, want %d %s", tc.user, tc.path, tc.query, code, relatedNames(t, got), tc.code, tc.want)
		}
	}
}

// TestRelationsInCollections: a collection applies the relation to each
// of its types, and refuses it as a list does.
func TestRelationsInCollections(t *testing.T) {
	_, base := relatedFleet(t)
	collections := strings.TrimSuffix(base, searchv1alpha1.ViewPath("")) + CollectionsPath + "/networking?"
	var got map[string]any
	if code, _ := getAs(t, collections+"refersTo=pod/web-0", "", "", &got); code != 200 || relatedNames(t, got) != "east/web" {
		t.Errorf("services and ingresses that refer to pod web-0: %d %s", code, relatedNames(t, got))
	}
	if code, _ := getAs(t, collections+"refersTo=secret/db-pass-old&hops=3", "", "", &got); code != 200 || relatedNames(t, got) != "east/shop east/web" {
		t.Errorf("within 3 hops of secret db-pass-old: %d %s", code, relatedNames(t, got))
	}
	for _, c := range []struct {
		user, query string
		code        int
	}{
		{"", "refersTo=nokind/x", 400},
		{"", "referredBy=pod/a/b/c", 400},
		{"services", "refersTo=pod/web-0", 403},
	} {
		got = nil
		if code, _ := getAs(t, collections+c.query, c.user, "", &got); code != c.code || got["kind"] != "Status" {
			t.Errorf("%s %s: %d %v, want %d", c.user, c.query, code, got["message"], c.code)
		}
	}
}

// TestRelationsBesideAHostileMember: a member that claims the kind Pod
// for another resource, or serves pods at another version, changes no
// other cluster's relations.
func TestRelationsBesideAHostileMember(t *testing.T) {
	registry, base := relatedFleet(t)
	evil := clusterServing("evil", schema.GroupVersionResource{Version: "v1", Resource: "aaa"}, "Pod")
	evil.Status.SyncResources = append(evil.Status.SyncResources, clusterServing("", schema.GroupVersionResource{Version: "v2", Resource: "pods"}, "Pod").Status.SyncResources...)
	registry.Set(evil)
	for _, tc := range []struct{ path, query, want string }{
		{"/api/v1/pods", "referredBy=service/web", "east/web-0 east/web-1"},
		{"/api/v1/configmaps", "referredBy=pod/web-0", "east/cfg-web-0 west/cfg-web-0"},
		{"/api/v1/services", "refersTo=pod/web-0", "east/web"},
		{"/apis/networking.k8s.io/v1/ingresses", "refersTo=secret/db-pass-old&hops=3", "east/shop"},
	} {
		code, _, got := getJSON(t, base+tc.path+"?"+tc.query, "")
		if code != 200 || relatedNames(t, got) != tc.want {
			t.Errorf("%s?%s: %d %v\n got %s\nwant %s", tc.path, tc.query, code, got["message"], relatedNames(t, got), tc.want)
		}
	}
}
