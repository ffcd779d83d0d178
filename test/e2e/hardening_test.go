package e2e

import (
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/panorama-io/panorama/test/testenv"
)

// Values of both layouts: split over a shared database (RenderChart's
// default) and the all-in-one SQLite pod.
var (
	split     []string
	allInOne  = []string{"--set", "storage.driver=sqlite"}
	splitPods = map[string]string{"panorama-apiserver": "https", "panorama-controller-manager": "metrics,tunnel"}
)

// TestChartPodSecurity checks, as rendered, every pod the chart runs
// against the Pod Security "restricted" profile and the rest of its
// hardening: a read-only root filesystem and resource requests. TestInstall
// has a real kube-apiserver's admission judge the same pods.
func TestChartPodSecurity(t *testing.T) {
	for name, values := range map[string][]string{
		"split":      split,
		"all in one": allInOne,
		// The values of an earlier chart, which helm upgrade --reuse-values
		// keeps: a podSecurityContext without runAsNonRoot or seccomp.
		"earlier podSecurityContext": {"--set", "podSecurityContext.seccompProfile=null", "--set", "podSecurityContext.runAsNonRoot=null"},
	} {
		t.Run(name, func(t *testing.T) {
			deployments := chartDeployments(t, values...)
			if len(deployments) == 0 {
				t.Fatal("no Deployment rendered")
			}
			for _, d := range deployments {
				for _, problem := range podHardeningProblems(d.Spec.Template.Spec) {
					t.Errorf("Deployment %s: %s", d.Name, problem)
				}
			}
			// Jobs, hooks or other workloads would need checking too.
			for _, o := range testenv.Objects(t, testenv.RenderChart(t, values...)) {
				_, template, _ := unstructured.NestedMap(o.Object, "spec", "template")
				_, jobTemplate, _ := unstructured.NestedMap(o.Object, "spec", "jobTemplate")
				if o.GetKind() == "Pod" || (o.GetKind() != "Deployment" && (template || jobTemplate)) {
					t.Errorf("%s %s runs pods this test does not check", o.GetKind(), o.GetName())
				}
			}
		})
	}
}

// podHardeningProblems says where pod breaks the restricted profile or
// lacks a read-only root filesystem or resource requests.
func podHardeningProblems(pod corev1.PodSpec) []string {
	var problems []string
	sc := pod.SecurityContext
	if sc == nil {
		sc = &corev1.PodSecurityContext{}
	}
	if sc.SeccompProfile == nil || sc.SeccompProfile.Type != corev1.SeccompProfileTypeRuntimeDefault {
		problems = append(problems, fmt.Sprintf("pod seccompProfile %v, want RuntimeDefault", sc.SeccompProfile))
	}
	for _, c := range append(slices.Clone(pod.InitContainers), pod.Containers...) {
		csc := c.SecurityContext
		if csc == nil {
			csc = &corev1.SecurityContext{}
		}
		runAsNonRoot := csc.RunAsNonRoot
		if runAsNonRoot == nil {
			runAsNonRoot = sc.RunAsNonRoot
		}
		for what, ok := range map[string]bool{
			"runAsNonRoot":                    runAsNonRoot != nil && *runAsNonRoot,
			"allowPrivilegeEscalation: false": csc.AllowPrivilegeEscalation != nil && !*csc.AllowPrivilegeEscalation,
			"capabilities dropping ALL":       csc.Capabilities != nil && slices.Contains(csc.Capabilities.Drop, "ALL") && len(csc.Capabilities.Add) == 0,
			"readOnlyRootFilesystem":          csc.ReadOnlyRootFilesystem != nil && *csc.ReadOnlyRootFilesystem,
			"no privileged":                   csc.Privileged == nil || !*csc.Privileged,
			"a CPU request":                   !c.Resources.Requests.Cpu().IsZero(),
			"a memory request":                !c.Resources.Requests.Memory().IsZero(),
		} {
			if !ok {
				problems = append(problems, fmt.Sprintf("container %s lacks %s", c.Name, what))
			}
		}
	}
	slices.Sort(problems)
	return problems
}

// TestChartNetworkPolicies checks that each component's pods admit ingress
// on the ports they serve, and on no other, from anywhere, with egress
// open; and that networkPolicy.enabled=false renders none.
func TestChartNetworkPolicies(t *testing.T) {
	for _, c := range []struct {
		name   string
		values []string
		want   map[string]string // NetworkPolicy and Deployment name: its ports
	}{
		{"split", split, splitPods},
		{"all in one", allInOne, map[string]string{"panorama-panorama": "https,tunnel"}},
		{"split, no tunnel endpoint", append([]string{"--set", "tunnel.enabled=false"}, split...),
			map[string]string{"panorama-apiserver": "https", "panorama-controller-manager": "metrics"}},
		// An upgrade --reuse-values from a chart without the value.
		{"earlier values", []string{"--set", "networkPolicy=null"}, splitPods},
		{"earlier values, no tunnel", []string{"--set", "tunnel=null"},
			map[string]string{"panorama-apiserver": "https", "panorama-controller-manager": "metrics"}},
		{"split, off", []string{"--set", "networkPolicy.enabled=false"}, map[string]string{}},
		{"all in one, off", append([]string{"--set", "networkPolicy.enabled=false"}, allInOne...), map[string]string{}},
	} {
		t.Run(c.name, func(t *testing.T) {
			objs := testenv.Objects(t, testenv.RenderChart(t, c.values...))
			deployments := chartDeployments(t, c.values...)
			got := map[string]string{}
			for _, o := range objs {
				if o.GetKind() != "NetworkPolicy" {
					continue
				}
				var np networkingv1.NetworkPolicy
				if err := runtime.DefaultUnstructuredConverter.FromUnstructured(o.Object, &np); err != nil {
					t.Fatal(err)
				}
				got[np.Name] = checkNetworkPolicy(t, np, deployments)
			}
			if !maps.Equal(got, c.want) {
				t.Errorf("NetworkPolicies and their ports %v, want %v", got, c.want)
			}
		})
	}
}

// checkNetworkPolicy checks that np selects the pods of the Deployment of
// its name and no other, admits ingress from anywhere on one of their
// ports, and leaves egress open; it returns that port.
func checkNetworkPolicy(t *testing.T, np networkingv1.NetworkPolicy, deployments []appsv1.Deployment) string {
	t.Helper()
	if !slices.Equal(np.Spec.PolicyTypes, []networkingv1.PolicyType{networkingv1.PolicyTypeIngress}) {
		t.Errorf("NetworkPolicy %s restricts %v, want Ingress only (members are anywhere)", np.Name, np.Spec.PolicyTypes)
	}
	selector, err := metav1.LabelSelectorAsSelector(&np.Spec.PodSelector)
	if err != nil {
		t.Fatal(err)
	}
	var selected []string
	for _, d := range deployments {
		if selector.Matches(labels.Set(d.Spec.Template.Labels)) {
			selected = append(selected, d.Name)
		}
	}
	if !slices.Equal(selected, []string{np.Name}) {
		t.Errorf("NetworkPolicy %s selects the pods of %v", np.Name, selected)
	}
	if len(np.Spec.Ingress) != 1 || len(np.Spec.Ingress[0].From) != 0 || len(np.Spec.Ingress[0].Ports) == 0 {
		t.Errorf("NetworkPolicy %s ingress %+v, want named ports from anywhere", np.Name, np.Spec.Ingress)
		return ""
	}
	var ports []string
	i := slices.IndexFunc(deployments, func(d appsv1.Deployment) bool { return d.Name == np.Name })
	for _, p := range np.Spec.Ingress[0].Ports {
		if p.Port == nil {
			t.Errorf("NetworkPolicy %s admits every port", np.Name)
			return ""
		}
		port := p.Port.String()
		if i < 0 || !slices.ContainsFunc(deployments[i].Spec.Template.Spec.Containers[0].Ports, func(p corev1.ContainerPort) bool { return p.Name == port }) {
			t.Errorf("NetworkPolicy %s admits port %s, which its pods do not serve", np.Name, port)
		}
		ports = append(ports, port)
	}
	return strings.Join(ports, ",")
}

// TestChartDSNFromSecrets: the chart takes the DSNs from Secrets only and
// hands them to the binaries in their environment, never in an argument; an
// inline DSN is refused with a pointer to the Secret value, and not echoed.
func TestChartDSNFromSecrets(t *testing.T) {
	const password = "s3cret-password"
	for _, c := range []struct {
		values []string
		use    string
	}{
		{[]string{"--set", "storage.dsn=panorama:" + password + "@tcp(db:3306)/panorama"}, "storage.dsnSecret.name"},
		{[]string{"--set", "storage.driver=postgres", "--set", "storage.readDsn=host=replica password=" + password}, "storage.readDsnSecret.name"},
	} {
		out, err := testenv.TryRenderChart(t, c.values...)
		if err == nil {
			t.Errorf("an inline DSN %v rendered", c.values)
		} else if !strings.Contains(out, c.use) {
			t.Errorf("an inline DSN %v refused without a pointer to %s: %s", c.values, c.use, out)
		}
		if strings.Contains(out, password) {
			t.Errorf("helm's output with an inline DSN %v holds it", c.values)
		}
	}
	deployments := chartDeployments(t, "--set", "storage.driver=postgres", "--set", "storage.readDsnSecret.name=replica")
	if len(deployments) != 2 {
		t.Fatalf("%d Deployments", len(deployments))
	}
	for _, d := range deployments {
		c := d.Spec.Template.Spec.Containers[0]
		if i := slices.IndexFunc(c.Args, func(a string) bool { return strings.Contains(a, "dsn") }); i >= 0 {
			t.Errorf("Deployment %s passes a DSN in an argument: %s", d.Name, c.Args[i])
		}
		want := map[string]string{"PANORAMA_STORAGE_DSN": "db/dsn"}
		if d.Name == "panorama-apiserver" {
			want["PANORAMA_STORAGE_READ_DSN"] = "replica/dsn"
		}
		got := map[string]string{}
		for _, e := range c.Env {
			if strings.Contains(e.Name, "DSN") {
				got[e.Name] = fmt.Sprintf("%v (value %q)", e.ValueFrom, e.Value)
				if ref := e.ValueFrom; ref != nil && ref.SecretKeyRef != nil && e.Value == "" {
					got[e.Name] = ref.SecretKeyRef.Name + "/" + ref.SecretKeyRef.Key
				}
			}
		}
		if !maps.Equal(got, want) {
			t.Errorf("Deployment %s's DSNs %v, want from Secrets %v", d.Name, got, want)
		}
	}
}

// TestDSNFromEnvironment: the binaries the chart runs take their DSNs from
// the environment it sets when no flag gives them. The controller manager
// reaches the database of PANORAMA_STORAGE_DSN; a read DSN of
// PANORAMA_STORAGE_READ_DSN is checked as --storage-read-dsn is.
func TestDSNFromEnvironment(t *testing.T) {
	run := func(name string, env []string, args ...string) string {
		cmd := exec.Command(filepath.Join(binDir, name), args...)
		cmd.Env = append(os.Environ(), env...)
		out, err := cmd.CombinedOutput()
		if err == nil {
			t.Fatalf("%s %v ran on", name, args)
		}
		return string(out)
	}
	// Refused by the flags' validation: the DSNs were read.
	if out := run("apiserver", []string{"PANORAMA_STORAGE_DSN=host=db", "PANORAMA_STORAGE_READ_DSN=host=replica"}, "--storage=mysql"); !strings.Contains(out, "--storage-read-dsn needs --storage=postgres") ||
		strings.Contains(out, "--storage-dsn is required") {
		t.Errorf("apiserver with the DSNs in its environment:\n%s", out)
	}
	// The controller manager dials the address of the DSN, where nothing
	// listens.
	if out := run("controller-manager", []string{"PANORAMA_STORAGE_DSN=panorama@tcp(127.0.0.1:1)/panorama"}, "--storage=mysql", "--kubeconfig=/nonexistent"); !strings.Contains(out, "127.0.0.1:1") {
		t.Errorf("controller-manager with the DSN in its environment:\n%s", out)
	}
}

// chartDeployments renders the chart with values and returns its
// Deployments.
func chartDeployments(t *testing.T, values ...string) []appsv1.Deployment {
	t.Helper()
	var deployments []appsv1.Deployment
	for _, o := range testenv.Objects(t, testenv.RenderChart(t, values...)) {
		if o.GetKind() != "Deployment" {
			continue
		}
		var d appsv1.Deployment
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(o.Object, &d); err != nil {
			t.Fatal(err)
		}
		deployments = append(deployments, d)
	}
	return deployments
}
