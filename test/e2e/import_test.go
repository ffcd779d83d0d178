package e2e

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"github.com/panorama-io/panorama/internal/viewconfig"
	"github.com/panorama-io/panorama/storage/storagetest"
	"github.com/panorama-io/panorama/test/testenv"
)

// TestImportFromClusterAPI imports a real member from a Cluster API
// Cluster, as Cluster API leaves it (a Cluster and its <name>-kubeconfig
// Secret), under the chart's RBAC for the Cluster API namespace, and reads
// the member's pods through the imported Cluster's view with real kubectl.
func TestImportFromClusterAPI(t *testing.T) {
	host := testenv.Start(t, testenv.WithAggregation(t), func(e *envtest.Environment) {
		e.CRDDirectoryPaths = append(e.CRDDirectoryPaths, filepath.Join(testenv.RepoRoot(t), "test", "testdata", "inventory-crds"))
	})
	member := testenv.Start(t, testenv.WithoutCRDs())
	kube := kubernetes.NewForConfigOrDie(member.Config)
	createNS(t, kube, "web")
	for i := range 3 {
		createPod(t, kube, "web", fmt.Sprintf("web-%d", i), "web")
	}
	db := storagetest.Backends()[1].Options(t)
	dir := t.TempDir()

	kubeconfig, err := os.ReadFile(member.Kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	secret, _ := json.Marshal(map[string]string{"value": string(kubeconfig)})
	apply(t, host, dir, `apiVersion: v1
kind: Namespace
metadata: {name: capi-east}
---
apiVersion: cluster.x-k8s.io/v1beta2
kind: Cluster
metadata: {name: shop, namespace: capi-east, labels: {env: prod}}
spec: {}
---
apiVersion: v1
kind: Secret
metadata:
  name: shop-kubeconfig
  namespace: capi-east
  labels: {cluster.x-k8s.io/cluster-name: shop}
type: cluster.x-k8s.io/secret
stringData: `+string(secret)+`
---
apiVersion: cluster.panorama.io/v1alpha1
kind: ClusterImportPolicy
metadata: {name: capi-prod}
spec:
  source: ClusterAPI
  namespaces: [capi-east]
  selector: {matchLabels: {env: prod}}
  template:
    syncResources: [{group: "", resources: [pods, namespaces]}]
`)
	// The chart's grant for the Cluster API namespace, as an admin sets it.
	apply(t, host, dir, "apiVersion: v1\nkind: Namespace\nmetadata: {name: "+testenv.ShippedNamespace+"}\n---\n"+
		testenv.RenderChart(t, "--show-only", "templates/rbac.yaml", "--set", "controllerManager.clusterAPISecretNamespaces={capi-east}"))
	startRegistered(t, host, dir, db.DSN, "--cluster-api-secret-namespaces=capi-east")

	// With Cluster API installed, "clusters" alone is ambiguous: Panorama's
	// are named with their group.
	eventuallyT(t, func() error {
		out, stderr, err := host.TryKubectl("get", "clusters.cluster.panorama.io", "capi-east-shop", "-o", `jsonpath={.status.conditions[?(@.type=="Synced")].status}`)
		if err != nil || out != "True" {
			return fmt.Errorf("imported Cluster synced: %q %v %s", out, err, stderr)
		}
		return nil
	})
	eventuallyT(t, func() error {
		rows := strings.Split(strings.TrimSpace(host.Kubectl(t, "get", "clusterimportpolicies")), "\n")
		if len(rows) != 2 || !strings.HasPrefix(strings.Join(strings.Fields(rows[1]), " "), "capi-prod ClusterAPI 1 True ") {
			return fmt.Errorf("kubectl get clusterimportpolicies:\n%s", strings.Join(rows, "\n"))
		}
		return nil
	})
	user, err := host.Env.AddUser(envtest.User{Name: "ivy", Groups: []string{"system:masters"}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	views := filepath.Join(dir, "ivy.kubeconfig")
	if err := viewconfig.Write(views, user.Config(), "ivy", "capi-east-shop"); err != nil {
		t.Fatal(err)
	}
	eventuallyT(t, func() error {
		out, stderr, err := testenv.Kubectl(views, "--context", "capi-east-shop", "get", "pods", "-n", "web", "--no-headers")
		if err != nil || strings.Count(out, "web-") != 3 {
			return fmt.Errorf("pods through the imported cluster's view: %v %s %s", err, out, stderr)
		}
		return nil
	})

	// The source goes: so do its Cluster and its view.
	host.Kubectl(t, "delete", "clusters.cluster.x-k8s.io", "-n", "capi-east", "shop")
	host.Kubectl(t, "wait", "--for=delete", "--timeout=90s", "clusters.cluster.panorama.io/capi-east-shop")
}
