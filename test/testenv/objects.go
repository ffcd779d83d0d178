package testenv

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
)

// CreateConfigMaps creates n small ConfigMaps in namespace default, eight
// at a time: bulk content for benchmarks.
func CreateConfigMaps(t testing.TB, kube kubernetes.Interface, n int) {
	t.Helper()
	CreateAll(t, n, func(i int) error {
		cm := &corev1.ConfigMap{
			ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: fmt.Sprintf("cm-%05d", i), Labels: map[string]string{"app": fmt.Sprintf("a%d", i%10)}},
			Data:       map[string]string{"key": fmt.Sprintf("value-%d", i), "config.yaml": "replicas: 3\nimage: nginx:1.27\n"},
		}
		_, err := kube.CoreV1().ConfigMaps("default").Create(context.Background(), cm, metav1.CreateOptions{})
		return err
	})
}

// CreateAll calls create for 0 to n-1, eight at a time, and fails t on the
// first error.
func CreateAll(t testing.TB, n int, create func(i int) error) {
	t.Helper()
	const workers = 8
	var wg sync.WaitGroup
	errs := make(chan error, workers)
	for w := range workers {
		wg.Go(func() {
			for i := w; i < n; i += workers {
				if err := create(i); err != nil {
					errs <- err
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
}

// CountAll lists every object of gvr, following continue tokens, and returns
// how many there were: a full paged list, as benchmarks time it.
func CountAll(t testing.TB, client dynamic.Interface, gvr schema.GroupVersionResource, opts metav1.ListOptions) int {
	t.Helper()
	n := 0
	for {
		page, err := client.Resource(gvr).List(context.Background(), opts)
		if err != nil {
			t.Fatal(err)
		}
		n += len(page.Items)
		if opts.Continue = page.GetContinue(); opts.Continue == "" {
			return n
		}
	}
}

// CountAllUndecoded is CountAll with the items left as JSON: a list then
// costs the client a scan of the bytes, so its time is the server's and
// the transfer's. Decoding items into maps, as CountAll does, takes most
// of a list's time on the client, whichever the server.
func CountAllUndecoded(t testing.TB, cfg *rest.Config, gvr schema.GroupVersionResource, opts metav1.ListOptions) int {
	t.Helper()
	client, err := rest.HTTPClientFor(cfg)
	if err != nil {
		t.Fatal(err)
	}
	path := "/apis/" + gvr.Group + "/" + gvr.Version + "/" + gvr.Resource
	if gvr.Group == "" {
		path = "/api/" + gvr.Version + "/" + gvr.Resource
	}
	n := 0
	for {
		query := url.Values{}
		if opts.Limit > 0 {
			query.Set("limit", strconv.FormatInt(opts.Limit, 10))
		}
		if opts.Continue != "" {
			query.Set("continue", opts.Continue)
		}
		if opts.ResourceVersion != "" {
			query.Set("resourceVersion", opts.ResourceVersion)
		}
		resp, err := client.Get(strings.TrimSuffix(cfg.Host, "/") + path + "?" + query.Encode())
		if err != nil {
			t.Fatal(err)
		}
		var page struct {
			Metadata struct {
				Continue string `json:"continue"`
			} `json:"metadata"`
			Items []json.RawMessage `json:"items"`
		}
		err = json.NewDecoder(resp.Body).Decode(&page)
		_ = resp.Body.Close()
		if err != nil || resp.StatusCode != http.StatusOK {
			t.Fatalf("list %s: %s, %v", path, resp.Status, err)
		}
		n += len(page.Items)
		if opts.Continue = page.Metadata.Continue; opts.Continue == "" {
			return n
		}
	}
}
