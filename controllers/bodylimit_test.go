package controllers_test

import (
	"bytes"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	clusterv1alpha1 "github.com/panorama-io/panorama/apis/cluster/v1alpha1"
	"github.com/panorama-io/panorama/storage/storagetest"
	"github.com/panorama-io/panorama/test/testenv"
)

// TestOversizedReadyzRefused: a member answering /readyz with more than
// the controller manager reads of it is unhealthy, the Ready condition
// naming the limit, and its answer is not read whole.
func TestOversizedReadyzRefused(t *testing.T) {
	const size = 256 << 20 // many times the limit
	written := make(chan int64, 16)
	chunk := bytes.Repeat([]byte("o"), 64<<10)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		if req.URL.Path != "/readyz" {
			http.NotFound(w, req)
			return
		}
		var n int64
		for n < size {
			m, err := w.Write(chunk)
			if n += int64(m); err != nil {
				break
			}
		}
		select {
		case written <- n:
		default: // a client that reads on asks again and again: the first answers tell
		}
	}))
	t.Cleanup(srv.Close)
	host := testenv.Start(t)
	hc := hostClient(t, host)
	startManager(t, host, storagetest.OpenStore(t, storagetest.Backends()[0].Options(t)))
	mustCreate(t, hc, &clusterv1alpha1.Cluster{
		ObjectMeta: metav1.ObjectMeta{Name: "hostile"},
		Spec: clusterv1alpha1.ClusterSpec{
			APIServer:     srv.URL,
			SyncResources: []clusterv1alpha1.GroupResources{{Group: "", Resources: []string{"pods"}}},
		},
	})
	waitCluster(t, hc, "hostile", func(c *clusterv1alpha1.Cluster) error {
		ready := meta.FindStatusCondition(c.Status.Conditions, clusterv1alpha1.ConditionReady)
		if ready == nil || ready.Status != metav1.ConditionFalse || !strings.Contains(ready.Message, "/readyz is larger than the limit of") {
			return fmt.Errorf("Ready condition %+v", ready)
		}
		return nil
	})
	srv.CloseClientConnections()
	if n := <-written; n >= size {
		t.Errorf("the member wrote all of its %d bytes: the controller manager read on", n)
	}
}
