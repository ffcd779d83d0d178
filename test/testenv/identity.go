package testenv

import (
	"os"
	"path/filepath"
	"testing"

	"k8s.io/client-go/tools/clientcmd"
)

// ShippedNamespace and the ServiceAccounts the chart makes for release
// "panorama" with a shared database (one per component).
const (
	ShippedNamespace         = "panorama-system"
	ControllerServiceAccount = "panorama-controller-manager"
	APIServerServiceAccount  = "panorama-apiserver"
)

// ShippedIdentities installs into the host the ServiceAccounts and RBAC
// exactly as the chart renders them (split mode, release "panorama") and
// returns kubeconfigs that act as the controller manager's and the API
// server's accounts (admin credentials impersonating them), so components
// under test run with no more than they are shipped with.
func ShippedIdentities(t testing.TB, host *Env, dir string) (controller, apiserver string) {
	t.Helper()
	manifest := "apiVersion: v1\nkind: Namespace\nmetadata: {name: " + ShippedNamespace + "}\n---\n" + RenderChart(t, "--show-only", "templates/rbac.yaml")
	f := filepath.Join(dir, "shipped-rbac.yaml")
	if err := os.WriteFile(f, []byte(manifest), 0o600); err != nil {
		t.Fatal(err)
	}
	host.Kubectl(t, "apply", "-f", f)
	as := func(sa string) string {
		kc, err := clientcmd.LoadFromFile(host.Kubeconfig)
		if err != nil {
			t.Fatal(err)
		}
		for _, u := range kc.AuthInfos {
			u.Impersonate = "system:serviceaccount:" + ShippedNamespace + ":" + sa
		}
		path := filepath.Join(dir, sa+".kubeconfig")
		if err := clientcmd.WriteToFile(*kc, path); err != nil {
			t.Fatal(err)
		}
		return path
	}
	return as(ControllerServiceAccount), as(APIServerServiceAccount)
}
