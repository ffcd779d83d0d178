package e2e

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	certutil "k8s.io/client-go/util/cert"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"github.com/panorama-io/panorama/internal/viewconfig"
	"github.com/panorama-io/panorama/storage/storagetest"
	"github.com/panorama-io/panorama/test/testenv"
	"github.com/panorama-io/panorama/tunnel"
)

// TestAgentBehindFirewall runs a member the controller manager cannot
// reach: its control plane listens inside a network namespace of the
// test's making, whose one link leads to the hub's tunnel endpoint. The
// agent binary, in that namespace, reads the member under the RBAC its
// chart ships there and presents a host token bound to the Cluster; the
// controller manager and the API server run as processes under the
// Panorama chart's RBAC in the host. Through Panorama, kubectl lists,
// searches, describes and watches what the member holds; edge's token
// opens no other Cluster's tunnel; the agent forwards no write down the
// tunnel; and an agent killed and restarted leaves the Cluster not Ready,
// then Ready with the changes made meanwhile, without a full list of the
// member.
func TestAgentBehindFirewall(t *testing.T) {
	ns := testenv.NewNetNS(t, "10.213.0.1/30", "10.213.0.2/30")
	member := testenv.StartIsolatedMember(t, ns)
	checkUnreachable(t, ns, member)
	dir := t.TempDir()
	memberApply(t, member, dir, `apiVersion: v1
kind: Namespace
metadata: {name: web}
---
apiVersion: v1
kind: Namespace
metadata: {name: elsewhere}
`+memberPod("web", "web-0", "web")+memberPod("web", "web-1", "web")+memberPod("web", "db-0", "db")+
		// Kept out by edge's filter, which syncs namespace web alone.
		memberPod("elsewhere", "web-9", "web"))
	agentMember := agentMemberKubeconfig(t, member, dir)

	host := testenv.Start(t, testenv.WithAggregation(t))
	db := storagetest.Backends()[1].Options(t)
	controllerKC, apiserverKC := testenv.ShippedIdentities(t, host, dir)
	apply(t, host, dir, `apiVersion: cluster.panorama.io/v1alpha1
kind: Cluster
metadata: {name: edge}
spec:
  agent: {}
  syncResources: [{group: "", resources: [pods], namespaces: [web]}]
---
apiVersion: cluster.panorama.io/v1alpha1
kind: Cluster
metadata: {name: other}
spec:
  agent: {}
  syncResources: [{group: "", resources: [pods]}]
---
apiVersion: v1
kind: ServiceAccount
metadata:
  name: agent-edge
  namespace: `+testenv.ShippedNamespace+`
  annotations: {cluster.panorama.io/agent-for: edge}
`)
	endpoint := newTunnelCert(t, ns.HostIP)
	tunnelAddr := freeAddr(t, ns.HostIP)
	metricsPort, apiPort := freePort(t), freePort(t)
	cm := startProcess(t, "controller-manager", "--kubeconfig", controllerKC, "--storage=mysql", "--storage-dsn", db.DSN,
		"--metrics-bind-address", fmt.Sprintf("127.0.0.1:%d", metricsPort), "--metrics-secure=false", "--health-probe-bind-address=0",
		"--cluster-health-interval=2s", "--tunnel-bind-address", tunnelAddr, "--tunnel-cert-path", endpoint.dir)
	api := startProcess(t, "apiserver", "--kubeconfig", apiserverKC, "--storage=mysql", "--storage-dsn", db.DSN,
		"--secure-port", strconv.Itoa(apiPort), "--bind-address=127.0.0.1", "--cert-dir", dir, "--watch-cache-poll-interval=200ms")
	failIfDenied(t, cm, api)
	waitReady(t, apiPort)
	apply(t, host, dir, testenv.APIServiceManifest(apiPort))
	waitAvailable(t, host, "True", "")
	waitClusterReady(t, host, "edge", "False/AgentNotConnected")

	token := strings.TrimSpace(host.Kubectl(t, "create", "token", "agent-edge", "-n", testenv.ShippedNamespace, "--audience", tunnel.Audience))
	tokenFile := filepath.Join(dir, "edge.token")
	if err := os.WriteFile(tokenFile, []byte(token), 0o600); err != nil {
		t.Fatal(err)
	}
	agentArgs := []string{"--cluster", "edge", "--token-file", tokenFile, "--hub-ca-file", endpoint.caFile,
		"--kubeconfig", agentMember, "--health-addr="}
	agent := startAgentIn(t, ns, append([]string{"--hub-url", "https://" + tunnelAddr}, agentArgs...)...)
	waitClusterReady(t, host, "edge", "True/Healthy")

	viewer := viewerKubeconfig(t, host, dir)
	// edgePods are the member's pods of namespace web, which edge syncs.
	edgePods := func(t *testing.T, args ...string) []string {
		t.Helper()
		return memberPodKeys(t, member, append([]string{"-n", "web"}, args...)...)
	}
	eventuallyT(t, func() error { return samePods(viewer, edgePods(t), "get", "pods", "-A") })

	t.Run("synced, searched and described", func(t *testing.T) {
		out := kubectlAs(t, viewer, "get", "pods", "-A")
		if header := strings.Join(strings.Fields(strings.Split(out, "\n")[0]), " "); !strings.HasPrefix(header, "NAMESPACE CLUSTER NAME") {
			t.Errorf("kubectl get pods -A header %q", header)
		}
		if want := edgePods(t, "-l", "app=web"); len(want) != 2 {
			t.Fatalf("the member's pods of app=web in web: %v", want)
		} else if err := samePods(viewer, want, "get", "pods", "-A", "-l", "app=web"); err != nil {
			t.Error(err)
		}
		if err := samePods(viewer, edgePods(t), "--context", "edge", "get", "pods", "-n", "web"); err != nil {
			t.Error(err)
		}
		described := host.Kubectl(t, "describe", "cluster", "edge")
		if status := conditionInDescribe(described, "Ready"); status != "True" {
			t.Errorf("kubectl describe cluster edge: Ready is %q, want True:\n%s", status, described)
		}
		if !strings.Contains(strings.Join(strings.Fields(described), " "), "Filter: namespaces=web") {
			t.Errorf("kubectl describe cluster edge does not show the filter namespaces=web:\n%s", described)
		}
		pod := kubectlAs(t, viewer, "--context", "edge", "describe", "pod", "web-0", "-n", "web")
		for _, want := range []string{"Name: web-0", "Namespace: web", "app=web", "Image: nginx"} {
			if !strings.Contains(strings.Join(strings.Fields(pod), " "), want) {
				t.Errorf("kubectl describe pod web-0 through edge lacks %q:\n%s", want, pod)
			}
		}
	})

	// The watch outlives the agent's restart below: Panorama serves it.
	w := startWatch(t, viewer, "--context", "edge", "get", "pods", "-n", "web", "-w", "-o", `jsonpath={.metadata.name}{"\n"}`)
	t.Run("watched", func(t *testing.T) {
		waitLine(t, w.lines, "web-0") // the initial listing
		// It also makes the synchronizer's watch of the member deliver an
		// event before the agent goes below: client-go's reflector relists
		// after a watch that ends within its first second with none.
		memberApply(t, member, dir, memberPod("web", "watched", "web"))
		waitLine(t, w.lines, "watched")
		eventuallyT(t, func() error { return samePods(viewer, edgePods(t), "get", "pods", "-A") })
	})

	t.Run("another Cluster's credential", func(t *testing.T) {
		ctx := context.Background()
		l, err := tunnel.Connect(ctx, tunnel.URL("https://"+tunnelAddr, "other"), token, endpoint.roots)
		var refused *tunnel.RefusedError
		if !errors.As(err, &refused) || refused.Code != http.StatusForbidden {
			if l != nil {
				l.Close()
			}
			t.Errorf("edge's agent token opening other's tunnel: %v, want 403", err)
		}
		if _, err := tunnel.Connect(ctx, tunnel.URL("https://"+tunnelAddr, "edge"), "not-a-token", endpoint.roots); !errors.As(err, &refused) || refused.Code != http.StatusUnauthorized {
			t.Errorf("a tunnel with a garbage token: %v, want 401", err)
		}
	})

	t.Run("writes refused by the agent", func(t *testing.T) {
		hub := startOwnHub(t, host, endpoint, ns.HostIP)
		second := startAgentIn(t, ns, append([]string{"--hub-url", hub.url}, agentArgs...)...)
		defer second.stop()
		eventuallyT(t, func() error {
			if !hub.Status("edge").Connected {
				return errors.New("the second agent has not connected to the test's hub")
			}
			return nil
		})
		viaTunnel := kubernetes.NewForConfigOrDie(&rest.Config{Host: "http://edge", Dial: hub.Dialer("edge", hub.Status("edge").Agent)})
		ctx := context.Background()
		if list, err := viaTunnel.CoreV1().Pods("web").List(ctx, metav1.ListOptions{}); err != nil || len(list.Items) != len(edgePods(t)) {
			t.Fatalf("a read through the tunnel: %v, want the member's pods of web", err)
		}
		_, err := viaTunnel.CoreV1().ConfigMaps("web").Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "planted"}}, metav1.CreateOptions{})
		if !apierrors.IsMethodNotSupported(err) {
			t.Errorf("a create through the tunnel: %v, want 405 from the agent", err)
		}
		err = viaTunnel.CoreV1().RESTClient().Get().AbsPath("/api/v1/namespaces/web/pods/web-0/exec").Param("command", "id").Do(ctx).Error()
		if !apierrors.IsForbidden(err) {
			t.Errorf("GET pods/web-0/exec through the tunnel: %v, want 403 from the agent", err)
		}
		if out, stderr, err := member.TryKubectl("get", "configmap", "planted", "-n", "web"); err == nil || !strings.Contains(stderr, "NotFound") {
			t.Errorf("the create reached the member: %v %s %s", err, out, stderr)
		}
		for _, want := range []string{`method="POST"`, `path="/api/v1/namespaces/web/pods/web-0/exec"`} {
			if !strings.Contains(second.output(), want) {
				t.Errorf("the agent logged no refusal with %s:\n%s", want, second.output())
			}
		}
	})

	t.Run("agent killed and restarted", func(t *testing.T) {
		fullLists := func() (int, float64) {
			return strings.Count(cm.output(), "listing the member in full"), syncListsTotal(t, metricsPort, "edge", "pods")
		}
		logged, counted := fullLists()
		if logged == 0 || counted == 0 {
			t.Fatalf("before the kill: %d full lists logged, %v counted; want the initial ones", logged, counted)
		}
		agent.kill()
		waitClusterReady(t, host, "edge", "False/AgentNotConnected")
		memberApply(t, member, dir, memberPod("web", "while-away", "web"))
		member.Kubectl(t, "delete", "pod", "web-1", "-n", "web", "--grace-period=0", "--force")
		agent.start()
		waitClusterReady(t, host, "edge", "True/Healthy")
		eventuallyT(t, func() error { return samePods(viewer, edgePods(t), "get", "pods", "-A") })
		waitLine(t, w.lines, "while-away")
		if l, c := fullLists(); l != logged || c != counted {
			t.Errorf("full lists of the member across the agent's restart: logged %d then %d, counted %v then %v; want none: its watches resume", logged, l, counted, c)
		}
	})
}

// checkUnreachable fails the test if anything outside ns can connect to
// the member: neither at its address (the namespace's loopback, which
// outside is another's) nor at the namespace's end of the veth, which is
// its only route out.
func checkUnreachable(t *testing.T, ns *testenv.NetNS, member *testenv.IsolatedMember) {
	t.Helper()
	_, port, _ := net.SplitHostPort(member.Addr)
	for _, addr := range []string{member.Addr, net.JoinHostPort(ns.IP.String(), port)} {
		if conn, err := net.DialTimeout("tcp", addr, 2*time.Second); err == nil {
			conn.Close()
			t.Fatalf("connected to %s from outside the member's network namespace", addr)
		}
	}
	out, err := ns.Command(context.Background(), "ip", "route").Output()
	if err != nil {
		t.Fatal(err)
	}
	if routes := strings.Split(strings.TrimSpace(string(out)), "\n"); len(routes) != 1 || !strings.HasPrefix(routes[0], ns.Subnet.String()+" ") {
		t.Fatalf("the member's namespace has routes %q, want its veth's subnet alone", routes)
	}
}

func memberPod(ns, name, app string) string {
	return fmt.Sprintf(`---
apiVersion: v1
kind: Pod
metadata: {name: %s, namespace: %s, labels: {app: %s}}
spec: {containers: [{name: c, image: nginx}]}
`, name, ns, app)
}

func memberApply(t *testing.T, member *testenv.IsolatedMember, dir, manifest string) {
	t.Helper()
	f, err := os.CreateTemp(dir, "member-*.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteString(manifest); err != nil {
		t.Fatal(err)
	}
	_ = f.Close()
	member.Kubectl(t, "apply", "-f", f.Name())
}

// agentMemberKubeconfig installs in the member the ServiceAccount and RBAC
// of the agent's chart, as helm renders them, and returns a kubeconfig of
// a token of that ServiceAccount, verifying the member's certificate.
func agentMemberKubeconfig(t *testing.T, member *testenv.IsolatedMember, dir string) string {
	t.Helper()
	memberApply(t, member, dir, "apiVersion: v1\nkind: Namespace\nmetadata: {name: "+testenv.AgentNamespace+"}\n---\n"+
		testenv.RenderAgentChart(t, "--set", "cluster=edge", "--show-only", "templates/rbac.yaml"))
	token := strings.TrimSpace(member.Kubectl(t, "create", "token", testenv.AgentServiceAccount, "-n", testenv.AgentNamespace))
	path := filepath.Join(dir, "agent-member.kubeconfig")
	if err := member.WriteKubeconfig(path, token); err != nil {
		t.Fatal(err)
	}
	return path
}

// memberPodKeys are the member's pods, as kubectl in its namespace lists
// them with args, as edge/<namespace>/<name>, sorted.
func memberPodKeys(t *testing.T, member *testenv.IsolatedMember, args ...string) []string {
	t.Helper()
	out := member.Kubectl(t, append([]string{"get", "pods", "--no-headers", "-o", "custom-columns=NS:.metadata.namespace,NAME:.metadata.name"}, args...)...)
	return podKeys(out, "edge/")
}

// samePods is nil when kubectl through Panorama with args lists the pods
// want (cluster/namespace/name), and no other.
func samePods(kubeconfig string, want []string, args ...string) error {
	out, stderr, err := testenv.Kubectl(kubeconfig, append(args, "--no-headers", "-o",
		`custom-columns=CLUSTER:.metadata.annotations.panorama\.io/cluster,NS:.metadata.namespace,NAME:.metadata.name`)...)
	if err != nil {
		return fmt.Errorf("kubectl %v: %v: %s", args, err, stderr)
	}
	if got := podKeys(out, ""); !slices.Equal(got, want) {
		return fmt.Errorf("kubectl %v through Panorama lists %v, the member has %v", args, got, want)
	}
	return nil
}

// podKeys joins the columns of each row of kubectl's output with "/",
// after prefix, sorted.
func podKeys(out, prefix string) []string {
	keys := []string{}
	for _, row := range strings.Split(strings.TrimSpace(out), "\n") {
		if fields := strings.Fields(row); len(fields) > 0 {
			keys = append(keys, prefix+strings.Join(fields, "/"))
		}
	}
	slices.Sort(keys)
	return keys
}

func kubectlAs(t *testing.T, kubeconfig string, args ...string) string {
	t.Helper()
	out, _ := kubectlOut(t, kubeconfig, args...)
	return out
}

// kubectlOut runs kubectl as kubeconfig's user, failing t if it fails,
// and returns what it printed and its warnings.
func kubectlOut(t *testing.T, kubeconfig string, args ...string) (stdout, stderr string) {
	t.Helper()
	stdout, stderr, err := testenv.Kubectl(kubeconfig, args...)
	if err != nil {
		t.Fatalf("kubectl %v: %v\n%s", args, err, stderr)
	}
	return stdout, stderr
}

// viewerKubeconfig is a host user's who may read every cluster through
// Panorama, with a context per view: all (the current one) and edge.
func viewerKubeconfig(t *testing.T, host *testenv.Env, dir string) string {
	t.Helper()
	apply(t, host, dir, grant("viewer", "", []string{pathsRule, seeClusters, readRule(`"*"`)}, "viewer"))
	user, err := host.Env.AddUser(envtest.User{Name: "viewer"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "viewer.kubeconfig")
	if err := viewconfig.Write(path, user.Config(), "viewer", "edge"); err != nil {
		t.Fatal(err)
	}
	return path
}

// waitClusterReady waits until the Cluster's Ready condition is
// status/reason.
func waitClusterReady(t *testing.T, host *testenv.Env, cluster, want string) {
	t.Helper()
	eventuallyT(t, func() error {
		out, stderr, err := host.TryKubectl("get", "cluster", cluster, "-o",
			`jsonpath={.status.conditions[?(@.type=="Ready")].status}/{.status.conditions[?(@.type=="Ready")].reason}`)
		if err != nil || out != want {
			return fmt.Errorf("Cluster %s Ready %q (%v %s), want %s", cluster, out, err, stderr, want)
		}
		return nil
	})
}

// conditionInDescribe is the status of condition typ in kubectl
// describe's output: the Status line of the entry whose Type it is
// (describe prints an entry's fields in alphabetical order).
func conditionInDescribe(describe, typ string) string {
	status := ""
	for _, line := range strings.Split(describe, "\n") {
		switch fields := strings.Fields(line); {
		case len(fields) == 2 && fields[0] == "Status:":
			status = fields[1]
		case len(fields) == 2 && fields[0] == "Type:" && fields[1] == typ:
			return status
		}
	}
	return ""
}

// tunnelCert is a self-signed serving certificate for a tunnel endpoint at
// an IP: dir holds tls.crt and tls.key, caFile the certificate agents
// verify it against, roots the same for the test.
type tunnelCert struct {
	dir, caFile string
	pair        tls.Certificate
	roots       *x509.CertPool
}

func newTunnelCert(t *testing.T, ip net.IP) *tunnelCert {
	t.Helper()
	certPEM, keyPEM, err := certutil.GenerateSelfSignedCertKey(ip.String(), []net.IP{ip}, nil)
	if err != nil {
		t.Fatal(err)
	}
	c := &tunnelCert{dir: t.TempDir(), roots: x509.NewCertPool()}
	c.caFile = filepath.Join(c.dir, "tls.crt")
	for name, data := range map[string][]byte{"tls.crt": certPEM, "tls.key": keyPEM} {
		if err := os.WriteFile(filepath.Join(c.dir, name), data, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	if c.pair, err = tls.X509KeyPair(certPEM, keyPEM); err != nil {
		t.Fatal(err)
	}
	c.roots.AppendCertsFromPEM(certPEM)
	return c
}

// freeAddr is host:port with a port free at ip.
func freeAddr(t *testing.T, ip net.IP) string {
	t.Helper()
	l, err := net.Listen("tcp", net.JoinHostPort(ip.String(), "0"))
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
}

// ownHub is a tunnel hub the test runs, accepting the tunnels of the host's
// agent ServiceAccounts as the controller manager's does, whose tunnels
// the test sends what it likes down.
type ownHub struct {
	*tunnel.Hub
	url string
}

func startOwnHub(t *testing.T, host *testenv.Env, cert *tunnelCert, ip net.IP) *ownHub {
	t.Helper()
	hub := tunnel.NewHub(tunnel.NewServiceAccounts(kubernetes.NewForConfigOrDie(host.Config), testenv.ShippedNamespace), tunnel.HubOptions{})
	l, err := net.Listen("tcp", net.JoinHostPort(ip.String(), "0"))
	if err != nil {
		t.Fatal(err)
	}
	server := httptest.NewUnstartedServer(hub)
	_ = server.Listener.Close()
	server.Listener = l
	server.TLS = &tls.Config{Certificates: []tls.Certificate{cert.pair}}
	server.StartTLS()
	t.Cleanup(server.Close)
	t.Cleanup(hub.CloseAll) // first: the server waits for its handlers, which last as long as their tunnels
	return &ownHub{Hub: hub, url: server.URL}
}

// startAgentIn runs the agent binary in ns, through a script in binDir
// that execs it there, so that the process is the agent's (kill kills it).
func startAgentIn(t *testing.T, ns *testenv.NetNS, args ...string) *process {
	t.Helper()
	name := "agent-in-" + ns.Name
	script := fmt.Sprintf("#!/bin/sh\nexec ip netns exec %s %s \"$@\"\n", ns.Name, filepath.Join(binDir, "agent"))
	if err := os.WriteFile(filepath.Join(binDir, name), []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	return startProcess(t, name, args...)
}

// syncListsTotal is panorama_sync_lists_total of cluster and resource,
// scraped from the controller manager's plain HTTP /metrics.
func syncListsTotal(t *testing.T, metricsPort int, cluster, resource string) float64 {
	t.Helper()
	body, err := httpGet(fmt.Sprintf("http://127.0.0.1:%d/metrics", metricsPort), nil)
	if err != nil {
		t.Fatal(err)
	}
	parser := expfmt.NewTextParser(model.UTF8Validation)
	families, err := parser.TextToMetricFamilies(strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range families["panorama_sync_lists_total"].GetMetric() {
		labels := map[string]string{}
		for _, l := range m.GetLabel() {
			labels[l.GetName()] = l.GetValue()
		}
		if labels["cluster"] == cluster && labels["resource"] == resource {
			return m.GetCounter().GetValue()
		}
	}
	return 0
}
