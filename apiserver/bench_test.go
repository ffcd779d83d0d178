package apiserver

import (
	"context"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	searchv1alpha1 "github.com/panorama-io/panorama/apis/search/v1alpha1"
	"github.com/panorama-io/panorama/storage"
	"github.com/panorama-io/panorama/storage/storagetest"
	"github.com/panorama-io/panorama/test/testenv"
)

const benchObjects = 10_000

// BenchmarkList lists the same objects from a real kube-apiserver and from
// Panorama (one cluster, SQLite, this handler), with the same client, and
// prints Panorama's times as ratios to kube-apiserver's, measured in the
// same run: a paged consistent list (limit 500) and a resourceVersion=0
// list (both servers answer it from their watch cache); and the flat
// view's times as ratios to the all-clusters view's, which it translates.
func BenchmarkList(b *testing.B) {
	kube := testenv.Start(b, testenv.WithoutCRDs())
	cms := schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}
	testenv.CreateConfigMaps(b, kubernetes.NewForConfigOrDie(kube.Config), benchObjects)

	store, cfg, registry := testServer(b)
	registry.Set(clusterServing("east", cms, "ConfigMap"))
	list, err := dynamic.NewForConfigOrDie(kube.Config).Resource(cms).List(context.Background(), metav1.ListOptions{})
	if err != nil {
		b.Fatal(err)
	}
	for start := 0; start < len(list.Items); start += 500 {
		var changes []storage.Change
		for i := start; i < min(start+500, len(list.Items)); i++ {
			changes = append(changes, storage.Upsert(&list.Items[i]))
		}
		if _, err := store.ForCluster("east", storage.Unfenced).Apply(context.Background(), cms, changes); err != nil {
			b.Fatal(err)
		}
	}
	n := len(list.Items)
	for _, c := range []struct {
		name string
		opts metav1.ListOptions
	}{
		{"paged-500", metav1.ListOptions{Limit: 500}},
		{"resourceVersion=0", metav1.ListOptions{ResourceVersion: "0"}},
	} {
		for _, decoded := range []bool{true, false} {
			name := c.name
			if !decoded {
				name += "-undecoded"
			}
			kubeTime := timeList(b, kube.Config, cms, c.opts, n, decoded)
			panoramaTime := timeList(b, cfg, cms, c.opts, n, decoded)
			b.ReportMetric(float64(panoramaTime)/float64(kubeTime), name+"-ratio")
			b.Logf("%-28s %d objects: kube-apiserver %v, Panorama %v (%.2fx)", name, n,
				kubeTime.Round(time.Millisecond), panoramaTime.Round(time.Millisecond), float64(panoramaTime)/float64(kubeTime))
			flatTime := timeList(b, as(cfg, "admin", searchv1alpha1.FlatClusters), cms, c.opts, n, decoded)
			b.ReportMetric(float64(flatTime)/float64(panoramaTime), name+"-flat-ratio")
			b.Logf("%-28s %d objects: flat view %v (%.2fx the view across clusters)", name, n,
				flatTime.Round(time.Millisecond), float64(flatTime)/float64(panoramaTime))
		}
	}
}

// timeList is the best of three full lists, their items decoded or not.
func timeList(b *testing.B, cfg *rest.Config, gvr schema.GroupVersionResource, opts metav1.ListOptions, want int, decoded bool) time.Duration {
	cfg = rest.CopyConfig(cfg)
	cfg.QPS, cfg.Burst = -1, 0 // no client-side throttling: time the servers
	client := dynamic.NewForConfigOrDie(cfg)
	count := func() int {
		if decoded {
			return testenv.CountAll(b, client, gvr, opts)
		}
		return testenv.CountAllUndecoded(b, cfg, gvr, opts)
	}
	return storagetest.BestOf3(storagetest.Timed(func() {
		if got := count(); got != want {
			b.Fatalf("listed %d of %d", got, want)
		}
	}))[0]
}
