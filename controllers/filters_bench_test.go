package controllers_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	clusterv1alpha1 "github.com/panorama-io/panorama/apis/cluster/v1alpha1"
	"github.com/panorama-io/panorama/controllers/synchronizer"
	"github.com/panorama-io/panorama/storage"
	"github.com/panorama-io/panorama/storage/storagetest"
	"github.com/panorama-io/panorama/test/testenv"
)

// Shape of BenchmarkFilterBytes's member: its ConfigMaps spread evenly
// over namespaces, as teams share a cluster.
const (
	benchFilterNamespaces = 10
	benchFilterPerNS      = 300
)

// BenchmarkFilterBytes measures what a filter saves the network: the
// bytes of the member's answers (response bodies, counted by a wrapping
// RoundTripper on the member's client config) for a full sync of its
// ConfigMaps, whole and under filters of namespaces, each as a ratio to
// the whole. One namespace of ten is listed on its own; excluding one of
// ten, the member filters by field selector.
func BenchmarkFilterBytes(b *testing.B) {
	member := testenv.Start(b, testenv.WithoutCRDs())
	ctx := context.Background()
	kube := kubernetes.NewForConfigOrDie(member.Config)
	for n := range benchFilterNamespaces {
		ns := fmt.Sprintf("team-%d", n)
		if _, err := kube.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
			b.Fatal(err)
		}
		testenv.CreateAll(b, benchFilterPerNS, func(i int) error {
			_, err := kube.CoreV1().ConfigMaps(ns).Create(ctx, &corev1.ConfigMap{
				ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("cm-%d", i), Labels: map[string]string{"team": ns}},
				Data:       map[string]string{"config.yaml": fmt.Sprintf("replicas: %d\nimage: registry.example/%s:1.%d\n", i%5, ns, i)},
			}, metav1.CreateOptions{})
			return err
		})
	}
	whole := filterSyncBytes(b, member.Config, clusterv1alpha1.GroupResources{}, benchFilterNamespaces*benchFilterPerNS)
	b.Logf("whole: a full sync of %d ConfigMaps received %d bytes from the member", benchFilterNamespaces*benchFilterPerNS, whole)
	for _, c := range []struct {
		name string
		sel  clusterv1alpha1.GroupResources
		kept int
	}{
		{"namespaces=team-0", clusterv1alpha1.GroupResources{Namespaces: []string{"team-0"}}, benchFilterPerNS},
		{"excludeNamespaces=team-0", clusterv1alpha1.GroupResources{ExcludeNamespaces: []string{"team-0"}}, (benchFilterNamespaces - 1) * benchFilterPerNS},
	} {
		b.Run(c.name, func(b *testing.B) {
			got := filterSyncBytes(b, member.Config, c.sel, c.kept)
			b.ReportMetric(float64(got), "member-bytes")
			b.ReportMetric(float64(got)/float64(whole), "x-whole")
			b.Logf("%s: %d ConfigMaps kept, %d bytes received from the member: %.3f × the whole sync's %d (%.1f × fewer)",
				c.name, c.kept, got, float64(got)/float64(whole), whole, float64(whole)/float64(got))
		})
	}
}

// filterSyncBytes syncs the member's ConfigMaps under sel's filter into a
// new SQLite store (what is received does not depend on the database)
// and returns the bytes the member's answers held until the sync was
// done, having checked that kept objects are stored.
func filterSyncBytes(b *testing.B, member *rest.Config, sel clusterv1alpha1.GroupResources, kept int) int64 {
	var received atomic.Int64
	cfg := rest.CopyConfig(member)
	cfg.Wrap(func(rt http.RoundTripper) http.RoundTripper { return countingTransport{rt, &received} })
	client, err := synchronizer.NewClient(cfg)
	if err != nil {
		b.Fatal(err)
	}
	filter, err := synchronizer.NewFilter(sel)
	if err != nil {
		b.Fatal(err)
	}
	store := storagetest.Backends()[0].Open(b)
	res := synchronizer.Resource{Resource: storage.Resource{GVR: configMapsGVR, Kind: "ConfigMap", Namespaced: true}, Filter: filter.For(true)}
	done := make(chan struct{})
	var once sync.Once
	var s *synchronizer.Synchronizer
	s = synchronizer.New("bench", storage.Unfenced, res, client, store, synchronizer.Options{}, func() {
		if s.Status().State == clusterv1alpha1.SyncStateSynced {
			once.Do(func() { close(done) })
		}
	})
	ctx, cancel := context.WithCancel(context.Background())
	finished := make(chan struct{})
	go func() {
		defer close(finished)
		s.Run(ctx)
	}()
	<-done
	bytes := received.Load()
	cancel()
	<-finished
	versions, err := store.MemberVersions(context.Background(), "bench", configMapsGVR)
	if err != nil {
		b.Fatal(err)
	}
	stored := 0
	for k := range versions {
		if strings.HasPrefix(k.Namespace, "team-") {
			stored++
		}
	}
	if stored != kept {
		b.Fatalf("stored %d of the test's ConfigMaps, want %d", stored, kept)
	}
	return bytes
}

// countingTransport adds the bytes of each response body read to n.
type countingTransport struct {
	next http.RoundTripper
	n    *atomic.Int64
}

func (t countingTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := t.next.RoundTrip(req)
	if err == nil {
		resp.Body = countingBody{resp.Body, t.n}
	}
	return resp, err
}

type countingBody struct {
	io.ReadCloser
	n *atomic.Int64
}

func (b countingBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	b.n.Add(int64(n))
	return n, err
}
