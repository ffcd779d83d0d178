package testenv

import (
	"context"
	"fmt"
	"sync"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// CreateConfigMaps creates n small ConfigMaps in namespace default, eight
// at a time: bulk content for benchmarks.
func CreateConfigMaps(t testing.TB, kube kubernetes.Interface, n int) {
	t.Helper()
	const workers = 8
	var wg sync.WaitGroup
	errs := make(chan error, workers)
	for w := range workers {
		wg.Go(func() {
			for i := w; i < n; i += workers {
				cm := &corev1.ConfigMap{
					ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: fmt.Sprintf("cm-%05d", i), Labels: map[string]string{"app": fmt.Sprintf("a%d", i%10)}},
					Data:       map[string]string{"key": fmt.Sprintf("value-%d", i), "config.yaml": "replicas: 3\nimage: nginx:1.27\n"},
				}
				if _, err := kube.CoreV1().ConfigMaps("default").Create(context.Background(), cm, metav1.CreateOptions{}); err != nil {
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
