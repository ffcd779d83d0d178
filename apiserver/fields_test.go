package apiserver

import (
	"context"
	"fmt"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	clusterv1alpha1 "github.com/panorama-io/panorama/apis/cluster/v1alpha1"
	searchv1alpha1 "github.com/panorama-io/panorama/apis/search/v1alpha1"
	"github.com/panorama-io/panorama/storage"
)

// TestImagesSearch asks for every workload that runs an image across two
// clusters and three kinds, in one request to collectionresources/workloads
// (the images parameter, or the search label kubectl -l carries), and by
// field selector on the images field, from storage and from the watch cache.
func TestImagesSearch(t *testing.T) {
	store, cfg, registry := testServer(t)
	workloads := []struct {
		gvr      schema.GroupVersionResource
		kind     string
		template []string // path of the pod spec
	}{
		{schema.GroupVersionResource{Group: "apps", Version: "v1", Resource: "deployments"}, "Deployment", []string{"spec", "template", "spec"}},
		{schema.GroupVersionResource{Group: "apps", Version: "v1", Resource: "statefulsets"}, "StatefulSet", []string{"spec", "template", "spec"}},
		{schema.GroupVersionResource{Group: "batch", Version: "v1", Resource: "cronjobs"}, "CronJob", []string{"spec", "jobTemplate", "spec", "template", "spec"}},
	}
	images := map[string][]string{ // name → container images, then init container images after "|"
		"web":    {"nginx:1.27"},
		"pinned": {"registry.example/library/nginx@sha256:0f1e2d", "|", "busybox"},
		"cache":  {"redis:7"},
		"init":   {"registry.example/app:v2", "|", "registry.example/nginx-init:1"},
		"none":   {},
	}
	for _, cluster := range []string{"east", "west"} {
		cl := &clusterv1alpha1.Cluster{}
		*cl = *clusterServing(cluster, podsGVR, "Pod")
		cl.Status.SyncResources = nil
		for _, w := range workloads {
			cl.Status.SyncResources = append(cl.Status.SyncResources, clusterServing("", w.gvr, w.kind).Status.SyncResources...)
			var changes []storage.Change
			for name, imgs := range images {
				u := &unstructured.Unstructured{Object: map[string]any{"apiVersion": w.gvr.GroupVersion().String(), "kind": w.kind,
					"metadata": map[string]any{"name": name, "namespace": "ns", "resourceVersion": "1"}}}
				containers, key := map[string][]any{}, "containers"
				for _, img := range imgs {
					if img == "|" {
						key = "initContainers"
						continue
					}
					containers[key] = append(containers[key], map[string]any{"name": "c", "image": img})
				}
				for key, cs := range containers {
					_ = unstructured.SetNestedSlice(u.Object, cs, append(slices.Clone(w.template), key)...)
				}
				changes = append(changes, storage.Upsert(u))
			}
			if _, err := store.ForCluster(cluster, storage.Unfenced).Apply(context.Background(), w.gvr, changes); err != nil {
				t.Fatal(err)
			}
		}
		registry.Set(cl)
	}
	base := strings.TrimSuffix(cfg.Host, searchv1alpha1.ViewPath("")) + CollectionsPath + "/workloads?"
	names := func(got map[string]any) string {
		var out []string
		items, _ := got["items"].([]any)
		for _, it := range items {
			o := &unstructured.Unstructured{Object: it.(map[string]any)}
			out = append(out, o.GetAnnotations()[storage.ClusterAnnotation]+"/"+o.GetKind()+"/"+o.GetName())
		}
		slices.Sort(out)
		return strings.Join(out, " ")
	}
	every := func(names ...string) string {
		var out []string
		for _, c := range []string{"east", "west"} {
			for _, w := range workloads {
				for _, n := range names {
					out = append(out, c+"/"+w.kind+"/"+n)
				}
			}
		}
		slices.Sort(out)
		return strings.Join(out, " ")
	}
	for query, want := range map[string]string{
		"images=nginx":               every("web", "pinned", "init"),
		"images=sha256:0f1e":         every("pinned"),
		"images=redis,busybox":       every("cache", "pinned"),
		"images=redis&images=app:v2": every("cache", "init"),
		"images=nothing":             "",
		"labelSelector=" + url.QueryEscape("search.panorama.io/images=nginx"):              every("web", "pinned", "init"),
		"labelSelector=" + url.QueryEscape("search.panorama.io/images in (redis,busybox)"): every("cache", "pinned"),
		"fieldSelector=" + url.QueryEscape("images=nginx:1.27"):                            every("web"),
		"fieldSelector=" + url.QueryEscape("images=busybox,images!=redis:7"):               every("pinned"),
		"fieldSelector=" + url.QueryEscape("images="):                                      every("none"),
		"images=nginx&clusters=west":                                                       strings.Join(slices.DeleteFunc(strings.Fields(every("web", "pinned", "init")), func(s string) bool { return strings.HasPrefix(s, "east/") }), " "),
	} {
		code, _, got := getJSON(t, base+query, "")
		if code != 200 || names(got) != want {
			t.Errorf("%s: %d %v\n got %s\nwant %s", query, code, got["message"], names(got), want)
		}
	}
	for query, want := range map[string]int{
		"fieldSelector=" + url.QueryEscape("team=a"):                       400,
		"images=" + url.QueryEscape("a\x00b"):                              400,
		"labelSelector=" + url.QueryEscape("search.panorama.io/images!=x"): 400,
	} {
		if code, _, got := getJSON(t, base+query, ""); code != want || got["kind"] != "Status" {
			t.Errorf("%s: %d %v, want %d", query, code, got, want)
		}
	}

	// One view, from storage and from the watch cache (resourceVersion=0),
	// before and after a field is declared.
	deployments := viewURL(cfg, "/apis/apps/v1/deployments") + "?"
	for _, rv := range []string{"", "&resourceVersion=0"} {
		code, _, got := getJSON(t, deployments+"fieldSelector="+url.QueryEscape("images=redis:7")+rv, "")
		if code != 200 || names(got) != "east/Deployment/cache west/Deployment/cache" {
			t.Errorf("images=redis:7%s: %d %s", rv, code, names(got))
		}
	}
	if err := store.DeclareFields(context.Background(), []storage.FieldDeclaration{
		{Name: "initImages", Paths: []string{"spec.template.spec.initContainers[*].image"}, Resources: []string{"deployments.apps"}},
	}); err != nil {
		t.Fatal(err)
	}
	for _, rv := range []string{"", "&resourceVersion=0"} {
		deadline := time.Now().Add(10 * time.Second)
		for {
			code, _, got := getJSON(t, deployments+"fieldSelector="+url.QueryEscape("initImages=busybox")+rv, "")
			if code == 200 && names(got) == "east/Deployment/pinned west/Deployment/pinned" {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("initImages=busybox%s: %d %v", rv, code, fmt.Sprint(got))
			}
			time.Sleep(100 * time.Millisecond)
		}
	}
}
