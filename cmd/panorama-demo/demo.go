package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/klog/v2"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"github.com/panorama-io/panorama/internal/viewconfig"
	"github.com/panorama-io/panorama/test/testenv"
)

// demo is a local host cluster and two members; stop undoes whatever part
// of it started.
type demo struct {
	dir            string
	host           *envtest.Environment
	hostKubeconfig string
	members        map[string]*envtest.Environment
}

var demoMembers = []string{"east", "west"}

// startDemo returns the demo even on error, for its stop.
func startDemo(ctx context.Context) (*demo, error) {
	d := &demo{members: map[string]*envtest.Environment{}}
	assets := os.Getenv("KUBEBUILDER_ASSETS")
	if assets == "" {
		return d, fmt.Errorf("KUBEBUILDER_ASSETS is not set: run `make run`, which builds kube-apiserver and etcd first")
	}
	dir, err := os.MkdirTemp("", "panorama-demo")
	if err != nil {
		return d, err
	}
	d.dir = dir
	flags, err := testenv.AggregationFlags(dir)
	if err != nil {
		return d, err
	}
	wd, _ := os.Getwd()
	host := &envtest.Environment{BinaryAssetsDirectory: assets, CRDDirectoryPaths: []string{filepath.Join(wd, "config", "crd", "bases")}, ErrorIfCRDPathMissing: true}
	testenv.SetFlags(host, flags)
	klog.InfoS("starting the demo host cluster")
	if _, err := host.Start(); err != nil {
		return d, fmt.Errorf("host: %w", err)
	}
	d.host = host
	if d.hostKubeconfig, err = d.adminKubeconfig(d.host, "host"); err != nil {
		return d, err
	}
	var manifest strings.Builder
	manifest.WriteString("apiVersion: v1\nkind: Namespace\nmetadata:\n  name: panorama-system\n")
	for i, name := range demoMembers {
		klog.InfoS("starting a demo member cluster", "name", name)
		m := &envtest.Environment{BinaryAssetsDirectory: assets}
		cfg, err := m.Start()
		if err != nil {
			return d, fmt.Errorf("member %s: %w", name, err)
		}
		d.members[name] = m
		if err := sampleWorkloads(ctx, kubernetes.NewForConfigOrDie(cfg), i); err != nil {
			return d, err
		}
		kc, err := d.adminKubeconfig(m, name)
		if err != nil {
			return d, err
		}
		data, _ := os.ReadFile(kc)
		indented := "    " + strings.ReplaceAll(strings.TrimSpace(string(data)), "\n", "\n    ")
		fmt.Fprintf(&manifest, `---
apiVersion: v1
kind: Secret
metadata: {name: %[1]s, namespace: panorama-system, annotations: {cluster.panorama.io/clusters: %[1]s}}
stringData:
  kubeconfig: |
%s
---
apiVersion: cluster.panorama.io/v1alpha1
kind: Cluster
metadata: {name: %s}
spec:
  kubeconfigSecretRef: {namespace: panorama-system, name: %s}
  syncResources:
  - group: ""
    resources: [pods, configmaps, namespaces, events]
  - group: apps
    resources: ["*"]
`, name, indented, name, name)
	}
	return d, d.apply(manifest.String())
}

// register makes the host serve Panorama and writes the user's kubeconfig.
func (d *demo) register(ctx context.Context, port int, kubeconfig string) error {
	if err := d.apply(testenv.APIServiceManifest(port)); err != nil {
		return err
	}
	err := wait.PollUntilContextTimeout(ctx, time.Second, 2*time.Minute, true, func(context.Context) (bool, error) {
		out, err := d.kubectl(d.hostKubeconfig, "get", "apiservice", "v1alpha1.search.panorama.io",
			"-o", "jsonpath={.status.conditions[?(@.type=='Available')].status}")
		return err == nil && out == "True", nil
	})
	if err != nil {
		return fmt.Errorf("the APIService did not become available: %w", err)
	}
	user, err := d.host.AddUser(envtest.User{Name: "demo", Groups: []string{"system:masters"}}, nil)
	if err != nil {
		return err
	}
	if err := viewconfig.Write(kubeconfig, user.Config(), "demo", demoMembers...); err != nil {
		return err
	}
	fmt.Printf(`
Panorama is serving 2 member clusters. Try:

  kubectl --kubeconfig %[1]s get pods -A                 # every cluster
  kubectl --kubeconfig %[1]s --context east get pods -n shop # one cluster (the demo runs no controllers, so no Deployments)
  kubectl --kubeconfig %[1]s get pods -A -l app=web,search.panorama.io/clusters=west
  kubectl --kubeconfig %[1]s --context east describe pod web-0 -n shop # with its Events
  kubectl --kubeconfig %[1]s --context flat get pods -A      # namespaces east.shop and west.shop: no two rows share a key
  k9s --kubeconfig %[1]s --context flat                      # k9s and informers: use the flat context
  kubectl --kubeconfig %[1]s get pods -A -l search.panorama.io/images=nginx   # every pod running an nginx image
  kubectl --kubeconfig %[2]s get clusters                 # the host's Cluster objects

(kubectl is in %[3]s, and k9s too after make test-assets.) Ctrl-C stops everything.
`, kubeconfig, d.hostKubeconfig, os.Getenv("KUBEBUILDER_ASSETS"))
	return nil
}

func (d *demo) adminKubeconfig(e *envtest.Environment, name string) (string, error) {
	user, err := e.AddUser(envtest.User{Name: "admin", Groups: []string{"system:masters"}}, nil)
	if err != nil {
		return "", err
	}
	data, err := user.KubeConfig()
	if err != nil {
		return "", err
	}
	path := filepath.Join(d.dir, name+".kubeconfig")
	return path, os.WriteFile(path, data, 0o600)
}

func (d *demo) apply(manifest string) error {
	f := filepath.Join(d.dir, fmt.Sprintf("manifest-%d.yaml", time.Now().UnixNano()))
	if err := os.WriteFile(f, []byte(manifest), 0o600); err != nil {
		return err
	}
	_, err := d.kubectl(d.hostKubeconfig, "apply", "-f", f)
	return err
}

func (d *demo) kubectl(kubeconfig string, args ...string) (string, error) {
	out, err := exec.Command(filepath.Join(os.Getenv("KUBEBUILDER_ASSETS"), "kubectl"), append([]string{"--kubeconfig", kubeconfig}, args...)...).CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("kubectl %v: %w: %s", args, err, out)
	}
	return string(out), nil
}

func (d *demo) stop() {
	for _, m := range d.members {
		_ = m.Stop()
	}
	if d.host != nil {
		_ = d.host.Stop()
	}
	if d.dir != "" {
		_ = os.RemoveAll(d.dir)
	}
}

// sampleWorkloads fills member i with a shop: web and db pods (no kubelet
// runs them: they stay Pending) and their configuration.
func sampleWorkloads(ctx context.Context, c kubernetes.Interface, i int) error {
	if _, err := c.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "shop"}}, metav1.CreateOptions{}); err != nil {
		return err
	}
	var web0 *corev1.Pod
	for j := range 3 + i {
		for _, app := range []string{"web", "db"} {
			pod := &corev1.Pod{
				ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: fmt.Sprintf("%s-%d", app, j), Labels: map[string]string{"app": app}},
				Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: app, Image: "nginx:1.27"}}},
			}
			created, err := c.CoreV1().Pods("shop").Create(ctx, pod, metav1.CreateOptions{})
			if err != nil {
				return err
			}
			if pod.Name == "web-0" {
				web0 = created
			}
		}
	}
	// What a scheduler would say, for kubectl describe to show.
	now := metav1.Now()
	if _, err := c.CoreV1().Events("shop").Create(ctx, &corev1.Event{
		ObjectMeta:     metav1.ObjectMeta{Namespace: "shop", Name: "web-0.demo"},
		InvolvedObject: corev1.ObjectReference{Kind: "Pod", APIVersion: "v1", Namespace: "shop", Name: "web-0", UID: web0.UID},
		Type:           corev1.EventTypeWarning, Reason: "FailedScheduling", Source: corev1.EventSource{Component: "panorama-demo"},
		Message: "the demo member runs no scheduler and no nodes", FirstTimestamp: now, LastTimestamp: now, Count: 1,
	}, metav1.CreateOptions{}); err != nil {
		return err
	}
	_, err := c.CoreV1().ConfigMaps("shop").Create(ctx, &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "settings"}, Data: map[string]string{"currency": []string{"EUR", "USD"}[i%2]},
	}, metav1.CreateOptions{})
	return err
}
