package e2e

import (
	"context"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	clusterv1alpha1 "github.com/panorama-io/panorama/apis/cluster/v1alpha1"
	"github.com/panorama-io/panorama/test/testenv"
)

// TestClusterCRD installs the generated CRDs into a real kube-apiserver,
// round-trips a Cluster with its status, and reads it back through kubectl.
func TestClusterCRD(t *testing.T) {
	env := testenv.Start(t)
	scheme := runtime.NewScheme()
	if err := clusterv1alpha1.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	c, err := client.New(env.Config, client.Options{Scheme: scheme})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()

	cluster := &clusterv1alpha1.Cluster{
		ObjectMeta: metav1.ObjectMeta{Name: "east"},
		Spec: clusterv1alpha1.ClusterSpec{
			APIServer:      "https://east.example:6443",
			TokenSecretRef: &clusterv1alpha1.SecretKeyRef{Namespace: "panorama-system", Name: "east-token"},
			SyncResources:  []clusterv1alpha1.GroupResources{{Group: "apps", Resources: []string{"deployments"}}},
		},
	}
	if err := c.Create(ctx, cluster); err != nil {
		t.Fatal(err)
	}
	meta.SetStatusCondition(&cluster.Status.Conditions, metav1.Condition{Type: clusterv1alpha1.ConditionReady, Status: metav1.ConditionTrue, Reason: "Healthy", Message: "readyz ok"})
	cluster.Status.Version = "v1.37.2"
	cluster.Status.SyncedResourceCount = 1
	cluster.Status.SyncResources = []clusterv1alpha1.ResourceSyncStatus{{Group: "apps", Version: "v1", Resource: "deployments", Kind: "Deployment", Namespaced: true, State: clusterv1alpha1.SyncStateSynced, Count: 3}}
	if err := c.Status().Update(ctx, cluster); err != nil {
		t.Fatal(err)
	}
	var got clusterv1alpha1.Cluster
	if err := c.Get(ctx, client.ObjectKey{Name: "east"}, &got); err != nil {
		t.Fatal(err)
	}
	if got.Spec.APIServer != cluster.Spec.APIServer || got.Status.Version != "v1.37.2" || len(got.Status.SyncResources) != 1 ||
		got.Status.SyncResources[0].Count != 3 || !meta.IsStatusConditionTrue(got.Status.Conditions, clusterv1alpha1.ConditionReady) {
		t.Fatalf("round trip lost data: %+v", got)
	}

	out := env.Kubectl(t, "get", "clusters")
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) != 2 || strings.Join(strings.Fields(lines[0]), " ") != "NAME READY VERSION RESOURCES AGE" {
		t.Fatalf("kubectl get clusters:\n%s", out)
	}
	if f := strings.Fields(lines[1]); len(f) != 5 || f[0] != "east" || f[1] != "True" || f[2] != "v1.37.2" || f[3] != "1" {
		t.Fatalf("kubectl get clusters row: %q", lines[1])
	}

	// Validation: a Cluster must say how to reach its member.
	bad := &clusterv1alpha1.Cluster{ObjectMeta: metav1.ObjectMeta{Name: "nowhere"}}
	if err := c.Create(ctx, bad); err == nil || !strings.Contains(err.Error(), "one of apiServer, kubeconfigSecretRef or agent is required") {
		t.Fatalf("invalid Cluster accepted or wrong error: %v", err)
	}
	bad.Spec.APIServer = "ftp://x"
	if err := c.Create(ctx, bad); err == nil || !strings.Contains(err.Error(), "spec.apiServer") {
		t.Fatalf("bad apiServer accepted or wrong error: %v", err)
	}
	// Names that are paths of the search API, whose host-side grant every
	// user has, cannot name a cluster.
	for _, name := range []string{"api", "apis", "clusters"} {
		reserved := &clusterv1alpha1.Cluster{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: clusterv1alpha1.ClusterSpec{APIServer: "https://x"}}
		if err := c.Create(ctx, reserved); err == nil || !strings.Contains(err.Error(), "name paths of the search API") {
			t.Fatalf("Cluster named %s accepted or wrong error: %v", name, err)
		}
	}
}
