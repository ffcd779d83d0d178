package controllers_test

import (
	"context"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	clusterv1alpha1 "github.com/panorama-io/panorama/apis/cluster/v1alpha1"
	"github.com/panorama-io/panorama/storage"
	"github.com/panorama-io/panorama/storage/storagetest"
	"github.com/panorama-io/panorama/test/testenv"
)

// TestUnshardedWritesFenced checks that an unsharded controller manager
// (--shards 0, one leader) takes each cluster over as a sharded replica
// does: every write of its carries its owner epoch, so once the next leader
// synced a cluster, a write of the previous one (paused, cut off from the
// host, its lease lost) is refused.
func TestUnshardedWritesFenced(t *testing.T) {
	host := testenv.Start(t)
	m := startMember(t)
	hc := hostClient(t, host)
	opts := storagetest.Backends()[2].Options(t) // PostgreSQL: a store for each leader, as two pods
	check := storagetest.OpenStore(t, opts)
	log := &writeLog{}
	const name = "east"

	createPod(t, m, "default", "before", nil)
	mustCreate(t, hc, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: controllerNamespace}})
	mustCreate(t, hc, &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: controllerNamespace, Name: name, Annotations: map[string]string{clusterv1alpha1.AnnotationCredentialClusters: name}},
		Data:       map[string][]byte{"kubeconfig": kubeconfigVia(t, m)},
	})
	mustCreate(t, hc, &clusterv1alpha1.Cluster{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: clusterv1alpha1.ClusterSpec{
			KubeconfigSecretRef: &clusterv1alpha1.SecretKeyRef{Namespace: controllerNamespace, Name: name},
			SyncResources:       []clusterv1alpha1.GroupResources{{Group: "", Resources: []string{"pods"}}},
		},
	})

	leader := func(replica string) func() {
		return startManager(t, host, &recordingStore{Store: storagetest.OpenStore(t, opts), replica: replica, log: log})
	}
	stopFirst := leader("first")
	waitConverged(t, check, name, m, podsGVR)
	stopFirst()
	first := log.lastEpochs("first")[name]
	if first == 0 {
		t.Fatal("the first leader wrote without an owner epoch")
	}

	createPod(t, m, "default", "after", nil)
	leader("second")
	waitConverged(t, check, name, m, podsGVR)
	if _, err := check.ForCluster(name, first).Apply(context.Background(), podsGVR, []storage.Change{storage.Delete("default", "before")}); !storage.IsFenced(err) {
		t.Fatalf("a write at the first leader's epoch %d: %v, want fenced", first, err)
	}
	log.check(t, []string{name})
}
