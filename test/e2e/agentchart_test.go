package e2e

import (
	"encoding/base64"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/panorama-io/panorama/test/testenv"
)

// hubCA stands for the CA bundle of the hub's tunnel endpoint.
const hubCA = "-----BEGIN CERTIFICATE-----\nMIIBhub\n-----END CERTIFICATE-----\n"

// TestAgentChart renders the agent's chart and applies it to a real
// kube-apiserver, as a member would be installed: the server validates
// every object (dry run, then for real into a namespace enforcing the Pod
// Security "restricted" profile, whose admission the agent's pod passes),
// the agent's account may read everything and change nothing, and the
// pod is hardened.
func TestAgentChart(t *testing.T) {
	member := testenv.Start(t, testenv.WithoutCRDs())
	ns, sa := testenv.AgentNamespace, testenv.AgentServiceAccount
	restrictedNamespace(t, member, ns)
	manifest := testenv.RenderAgentChart(t, "--set-string", "hub.caBundle="+hubCA)
	f := filepath.Join(t.TempDir(), "agent.yaml")
	if err := os.WriteFile(f, []byte(manifest), 0o600); err != nil {
		t.Fatal(err)
	}
	if out := member.Kubectl(t, "apply", "--dry-run=server", "-f", f); !strings.Contains(out, "deployment.apps/panorama-agent created (server dry run)") {
		t.Fatalf("server dry run:\n%s", out)
	}
	member.Kubectl(t, "apply", "-f", f)
	checkPodsAdmitted(t, member, ns)

	objs := testenv.Objects(t, manifest)
	var kinds []string
	for _, o := range objs {
		kinds = append(kinds, o.GetKind()+"/"+o.GetName())
	}
	slices.Sort(kinds)
	if want := []string{"ClusterRole/panorama-agent", "ClusterRoleBinding/panorama-agent", "ConfigMap/panorama-agent-hub-ca",
		"Deployment/panorama-agent", "Secret/panorama-agent-token", "ServiceAccount/panorama-agent"}; !slices.Equal(kinds, want) {
		t.Errorf("the chart renders %v, want %v", kinds, want)
	}
	checkAgentRole(t, testenv.Find(objs, "ClusterRole", "panorama-agent"))
	checkAgentDeployment(t, testenv.Find(objs, "Deployment", "panorama-agent"))
	token, _, _ := unstructured.NestedString(testenv.Find(objs, "Secret", "panorama-agent-token").Object, "data", "token")
	if b, _ := base64.StdEncoding.DecodeString(token); string(b) != "agent-token" {
		t.Errorf("the Secret holds token %q", b)
	}
	if ca, _, _ := unstructured.NestedString(testenv.Find(objs, "ConfigMap", "panorama-agent-hub-ca").Object, "data", "ca.crt"); ca != hubCA {
		t.Errorf("the ConfigMap holds CA %q", ca)
	}

	// What the agent's account may do in the member: list and watch, and
	// nothing else: no get, which is how subresources (pods/log,
	// pods/exec's GET, nodes/proxy) are read.
	as := "system:serviceaccount:" + ns + ":" + sa
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"list", "pods", "-n", "kube-system"}, "yes"},
		{[]string{"get", "pods", "-n", "kube-system"}, "no"},
		{[]string{"get", "nodes", "--subresource=proxy"}, "no"},
		{[]string{"get", "pods", "--subresource=exec", "-n", "default"}, "no"},
		{[]string{"get", "services", "--subresource=proxy", "-n", "default"}, "no"},
		{[]string{"list", "secrets", "-A"}, "yes"},
		{[]string{"watch", "deployments.apps", "-A"}, "yes"},
		{[]string{"list", "customresourcedefinitions.apiextensions.k8s.io"}, "yes"},
		{[]string{"get", "/version"}, "yes"},
		{[]string{"get", "/openapi/v3/apis/apps/v1"}, "yes"},
		{[]string{"get", "/apis/apps/v1"}, "yes"},
		{[]string{"get", "pods", "--subresource=log", "-n", "default"}, "no"},
		{[]string{"get", "/metrics"}, "no"},
		{[]string{"get", "/logs"}, "no"},
		{[]string{"get", "/debug/pprof/"}, "no"},
		{[]string{"create", "pods", "-n", "default"}, "no"},
		{[]string{"create", "pods", "--subresource=exec", "-n", "default"}, "no"},
		{[]string{"update", "deployments.apps", "-n", "default"}, "no"},
		{[]string{"patch", "nodes"}, "no"},
		{[]string{"delete", "namespaces"}, "no"},
		{[]string{"deletecollection", "configmaps", "-n", "default"}, "no"},
		{[]string{"impersonate", "users"}, "no"},
		{[]string{"escalate", "clusterroles.rbac.authorization.k8s.io"}, "no"},
	} {
		out, _, _ := member.TryKubectl(append([]string{"auth", "can-i", "--as", as}, c.args...)...)
		if got := strings.TrimSpace(out); got != c.want {
			t.Errorf("%s can-i %v: %q, want %q", as, c.args, got, c.want)
		}
	}
	if out := member.Kubectl(t, "get", "deploy", "panorama-agent", "-n", ns, "-o", "jsonpath={.spec.template.spec.serviceAccountName}"); out != sa {
		t.Errorf("the agent runs as %q", out)
	}

	t.Run("existing token Secret", func(t *testing.T) {
		objs := testenv.Objects(t, testenv.RenderAgentChart(t, "--set", "token=", "--set", "tokenSecret=mine"))
		for _, o := range objs {
			if o.GetKind() == "Secret" || o.GetKind() == "ConfigMap" {
				t.Errorf("rendered %s %s", o.GetKind(), o.GetName())
			}
		}
		d := deployment(t, testenv.Find(objs, "Deployment", "panorama-agent"))
		sources := d.Spec.Template.Spec.Volumes[0].Projected.Sources
		if len(sources) != 1 || sources[0].Secret == nil || sources[0].Secret.Name != "mine" {
			t.Errorf("the agent's files come from %+v, want Secret mine alone", sources)
		}
		if args := strings.Join(d.Spec.Template.Spec.Containers[0].Args, " "); strings.Contains(args, "--hub-ca-file") {
			t.Errorf("without a CA bundle the agent is given one: %s", args)
		}
	})
	t.Run("refused values", func(t *testing.T) {
		for _, c := range []struct {
			args []string
			want string
		}{
			{[]string{"--set", "hub.url="}, "hub.url is required"},
			{[]string{"--set", "hub.url=http://hub.example.com"}, "hub.url is required: the https://"},
			{[]string{"--set", "cluster="}, "cluster is required"},
			{[]string{"--set", "token="}, "token or tokenSecret is required"},
			{[]string{"--set", "tokenSecret=mine"}, "set token or tokenSecret, not both"},
		} {
			if out, err := testenv.TryRenderAgentChart(t, c.args...); err == nil || !strings.Contains(out, c.want) {
				t.Errorf("helm template %v: %v, want it refused: %q\n%s", c.args, err, c.want, out)
			}
		}
	})
}

// checkAgentRole checks that the agent's ClusterRole only reads.
func checkAgentRole(t *testing.T, o *unstructured.Unstructured) {
	t.Helper()
	if o == nil {
		t.Fatal("the chart renders no ClusterRole panorama-agent")
	}
	var role rbacv1.ClusterRole
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(o.Object, &role); err != nil {
		t.Fatal(err)
	}
	if len(role.Rules) == 0 {
		t.Fatal("the agent's ClusterRole has no rule")
	}
	for _, r := range role.Rules {
		allowed := []string{"list", "watch"}
		if len(r.NonResourceURLs) > 0 {
			allowed = []string{"get"}
		}
		for _, v := range r.Verbs {
			if !slices.Contains(allowed, v) {
				t.Errorf("the agent's ClusterRole grants %s in %+v", v, r)
			}
		}
		if slices.ContainsFunc(r.NonResourceURLs, func(u string) bool {
			return u == "*" || strings.HasPrefix(u, "/metrics") || strings.HasPrefix(u, "/logs") || strings.HasPrefix(u, "/debug")
		}) {
			t.Errorf("the agent's ClusterRole grants %v", r.NonResourceURLs)
		}
	}
}

// checkAgentDeployment checks the agent's pod: one replica, hardened, its
// flags and its files.
func checkAgentDeployment(t *testing.T, o *unstructured.Unstructured) {
	t.Helper()
	d := deployment(t, o)
	if d.Spec.Replicas == nil || *d.Spec.Replicas != 1 || d.Spec.Strategy.Type != appsv1.RecreateDeploymentStrategyType {
		t.Errorf("replicas %v, strategy %q: want one agent at a time", d.Spec.Replicas, d.Spec.Strategy.Type)
	}
	pod := d.Spec.Template.Spec
	for _, problem := range podHardeningProblems(pod) {
		t.Errorf("the agent's pod: %s", problem)
	}
	c := pod.Containers[0]
	if len(c.Command) != 1 || c.Command[0] != "/agent" {
		t.Errorf("command %v", c.Command)
	}
	args := strings.Join(c.Args, " ")
	for _, want := range []string{"--hub-url=https://hub.example.com:8444", "--cluster=east", "--token-file=/var/run/secrets/panorama/token",
		"--hub-ca-file=/var/run/secrets/panorama/ca.crt", "--health-addr=:8081"} {
		if !strings.Contains(args, want) {
			t.Errorf("args %s lack %s", args, want)
		}
	}
	if c.ReadinessProbe == nil || c.ReadinessProbe.HTTPGet == nil || c.ReadinessProbe.HTTPGet.Path != "/readyz" ||
		c.LivenessProbe == nil || c.LivenessProbe.HTTPGet == nil || c.LivenessProbe.HTTPGet.Path != "/healthz" {
		t.Errorf("probes: readiness %+v, liveness %+v", c.ReadinessProbe, c.LivenessProbe)
	}
	// The token's Secret is mounted whole, so that a rotation reaches it.
	for _, m := range c.VolumeMounts {
		if m.SubPath != "" {
			t.Errorf("volume %s mounted by subPath", m.Name)
		}
	}
}

func deployment(t *testing.T, o *unstructured.Unstructured) *appsv1.Deployment {
	t.Helper()
	if o == nil {
		t.Fatal("the chart renders no Deployment panorama-agent")
	}
	var d appsv1.Deployment
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(o.Object, &d); err != nil {
		t.Fatal(err)
	}
	return &d
}
