package e2e

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	searchv1alpha1 "github.com/panorama-io/panorama/apis/search/v1alpha1"
	"github.com/panorama-io/panorama/storage/storagetest"
	"github.com/panorama-io/panorama/test/testenv"
)

// TestKubeconfigCommand runs `panorama kubeconfig` as a user of a real host
// whose credentials come from an exec plugin, against Clusters the running
// controller manager found Ready and not Ready, and uses what it wrote with
// real kubectl through a running Panorama.
func TestKubeconfigCommand(t *testing.T) {
	host := testenv.Start(t, testenv.WithAggregation(t))
	east := testenv.Start(t, testenv.WithoutCRDs())
	eastKube := kubernetes.NewForConfigOrDie(east.Config)
	db := storagetest.Backends()[1].Options(t)
	createNS(t, eastKube, "web")
	for i := range 3 {
		createPod(t, eastKube, "web", "web-"+strconv.Itoa(i), "web")
	}
	dir := t.TempDir()
	// east is a real member; down's API server does not answer.
	apply(t, host, dir, clustersManifest(t, east)+`---
apiVersion: cluster.panorama.io/v1alpha1
kind: Cluster
metadata: {name: down}
spec:
  apiServer: https://127.0.0.1:1
  syncResources: [{group: "", resources: [pods]}]
`)
	startRegistered(t, host, dir, db.DSN)
	host.Kubectl(t, "wait", "--for=condition=Ready", "--timeout=90s", "cluster/east")
	host.Kubectl(t, "wait", "--for=condition=Ready=False", "--timeout=90s", "cluster/down")

	// kate reads Panorama and lists Clusters; lou only reads Panorama.
	apply(t, host, dir, grant("kate-search", "", []string{readRule(`"*"`), `{apiGroups: [cluster.panorama.io], resources: [clusters], verbs: [list]}`}, "kate")+
		grant("lou-search", "", []string{readRule(`"*"`)}, "lou"))
	kate, lou := execUserKubeconfig(t, host, dir, "kate"), execUserKubeconfig(t, host, dir, "lou")
	hostServer := strings.TrimSuffix(loadKubeconfig(t, kate).Clusters["host"].Server, "/")

	out := filepath.Join(dir, "views.kubeconfig")
	stderr := runCommand(t, "kubeconfig", "--kubeconfig", kate, "-o", out)
	if !strings.Contains(stderr, "left out cluster down: Ready is False") {
		t.Errorf("the command did not say why down is left out:\n%s", stderr)
	}
	kubectl := func(args ...string) string {
		t.Helper()
		stdout, stderr, err := testenv.Kubectl(out, args...)
		if err != nil {
			t.Fatalf("kubectl %v: %v\n%s", args, err, stderr)
		}
		return stdout
	}
	if got := strings.Fields(kubectl("config", "get-contexts", "-o", "name")); !slices.Equal(got, []string{"panorama", "panorama-east", "panorama-flat"}) {
		t.Fatalf("contexts %v, want panorama, panorama-east and panorama-flat (down is not Ready)", got)
	}
	if cur := strings.TrimSpace(kubectl("config", "current-context")); cur != "panorama" {
		t.Errorf("current context %q", cur)
	}
	written := loadKubeconfig(t, out)
	for name, want := range map[string]string{"panorama": hostServer + searchv1alpha1.ViewPath(""), "panorama-east": hostServer + searchv1alpha1.ViewPath("east"),
		"panorama-flat": hostServer + searchv1alpha1.ViewPath(searchv1alpha1.FlatClusters)} {
		if got := written.Clusters[name].Server; got != want {
			t.Errorf("context %s: server %q, want %q", name, got, want)
		}
		if !bytes.Equal(written.Clusters[name].CertificateAuthorityData, loadKubeconfig(t, kate).Clusters["host"].CertificateAuthorityData) {
			t.Errorf("context %s does not trust the host's CA", name)
		}
	}
	// kate's user as she has it: the exec plugin, not what it printed.
	user := written.AuthInfos["panorama"]
	if user == nil || user.Exec == nil || user.Exec.Command != "/bin/sh" || len(user.ClientCertificateData) != 0 || user.Token != "" {
		t.Fatalf("user entry not kept as it is: %+v", user)
	}
	if rows := strings.Split(strings.TrimSpace(kubectl("--context", "panorama-east", "get", "pods", "-n", "web")), "\n"); len(rows) != 4 {
		t.Fatalf("pods of east through panorama-east:\n%s", strings.Join(rows, "\n"))
	}
	eventuallyT(t, func() error {
		stdout, stderr, err := testenv.Kubectl(out, "get", "pods", "-A", "--no-headers")
		if err != nil || strings.Count(stdout, "east") != 3 {
			return fmt.Errorf("every cluster: %v %s %s", err, stdout, stderr)
		}
		return nil
	})
	if stdout := kubectl("--context", "panorama-flat", "get", "pods", "-n", "east.web", "-o", "name"); strings.Count(stdout, "pod/web-") != 3 {
		t.Errorf("pods of east.web through panorama-flat:\n%s", stdout)
	}

	t.Run("merge", func(t *testing.T) {
		merged := filepath.Join(dir, "merged.kubeconfig")
		copyFile(t, kate, merged)
		runCommand(t, "kubeconfig", "--kubeconfig", kate, "--merge", "-o", merged, "--prefix", "pano-", "--all-context", "all")
		got, stderr, err := testenv.Kubectl(merged, "config", "get-contexts", "-o", "name")
		if err != nil {
			t.Fatal(stderr)
		}
		if names := strings.Fields(got); !slices.Equal(names, []string{"all", "all-flat", "host", "pano-east"}) {
			t.Fatalf("merged contexts %v", names)
		}
		if cur, _, _ := testenv.Kubectl(merged, "config", "current-context"); strings.TrimSpace(cur) != "host" {
			t.Errorf("merge changed the current context to %q", cur)
		}
		if _, stderr, err := testenv.Kubectl(merged, "--context", "pano-east", "get", "pods", "-n", "web", "web-1"); err != nil {
			t.Fatalf("through the merged context: %v %s", err, stderr)
		}
	})
	t.Run("a user who may not list Clusters", func(t *testing.T) {
		cmd := exec.Command(filepath.Join(binDir, "panorama"), "kubeconfig", "--kubeconfig", lou)
		if msg, err := cmd.CombinedOutput(); err == nil || !strings.Contains(string(msg), "forbidden") || !strings.Contains(string(msg), "--clusters") {
			t.Fatalf("lou listing Clusters: %v %s", err, msg)
		}
		named := filepath.Join(dir, "lou-views.kubeconfig")
		runCommand(t, "kubeconfig", "--kubeconfig", lou, "--clusters", "east", "-o", named)
		if _, stderr, err := testenv.Kubectl(named, "--context", "panorama-east", "get", "pods", "-n", "web", "web-2"); err != nil {
			t.Fatalf("lou through panorama-east: %v %s", err, stderr)
		}
	})
}

// execUserKubeconfig writes a kubeconfig for a new user of the host, with
// one context "host", whose credentials an exec plugin prints.
func execUserKubeconfig(t *testing.T, host *testenv.Env, dir, name string) string {
	t.Helper()
	user, err := host.Env.AddUser(envtest.User{Name: name}, nil)
	if err != nil {
		t.Fatal(err)
	}
	cfg := user.Config()
	cred, _ := json.Marshal(map[string]any{
		"apiVersion": "client.authentication.k8s.io/v1", "kind": "ExecCredential",
		"status": map[string]string{"clientCertificateData": string(cfg.CertData), "clientKeyData": string(cfg.KeyData)},
	})
	credFile := filepath.Join(dir, name+"-credential.json")
	if err := os.WriteFile(credFile, cred, 0o600); err != nil {
		t.Fatal(err)
	}
	kc := clientcmdapi.NewConfig()
	kc.Clusters["host"] = &clientcmdapi.Cluster{Server: cfg.Host, CertificateAuthorityData: cfg.CAData}
	kc.AuthInfos[name] = &clientcmdapi.AuthInfo{Exec: &clientcmdapi.ExecConfig{
		APIVersion: "client.authentication.k8s.io/v1", Command: "/bin/sh", Args: []string{"-c", "cat " + credFile},
		InteractiveMode: clientcmdapi.NeverExecInteractiveMode,
	}}
	kc.Contexts["host"] = &clientcmdapi.Context{Cluster: "host", AuthInfo: name}
	kc.CurrentContext = "host"
	path := filepath.Join(dir, name+".kubeconfig")
	if err := clientcmd.WriteToFile(*kc, path); err != nil {
		t.Fatal(err)
	}
	return path
}

// runPanorama runs the panorama command, fails the test if it fails, and
// returns its standard error.
func runCommand(t *testing.T, args ...string) string {
	t.Helper()
	var stderr bytes.Buffer
	cmd := exec.Command(filepath.Join(binDir, "panorama"), args...)
	cmd.Stderr = &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("panorama %v: %v\n%s", args, err, stderr.String())
	}
	return stderr.String()
}

func loadKubeconfig(t *testing.T, path string) *clientcmdapi.Config {
	t.Helper()
	kc, err := clientcmd.LoadFromFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return kc
}

func copyFile(t *testing.T, from, to string) {
	t.Helper()
	b, err := os.ReadFile(from)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(to, b, 0o600); err != nil {
		t.Fatal(err)
	}
}
