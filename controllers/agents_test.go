package controllers_test

import (
	"context"
	cryptorand "crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"maps"
	"math/rand/v2"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-jose/go-jose/v4"
	"github.com/go-jose/go-jose/v4/jwt"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	certutil "k8s.io/client-go/util/cert"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/panorama-io/panorama/agent"
	clusterv1alpha1 "github.com/panorama-io/panorama/apis/cluster/v1alpha1"
	"github.com/panorama-io/panorama/controllers"
	"github.com/panorama-io/panorama/controllers/sharding"
	"github.com/panorama-io/panorama/storage/storagetest"
	"github.com/panorama-io/panorama/test/testenv"
	"github.com/panorama-io/panorama/tunnel"
)

// TestAgentCluster: a Cluster with spec.agent, whose member the controller
// is given no address or credential of, is synced through its agent, run
// with the identity its chart ships in the member and a host token bound
// to that Cluster alone. While the agent is away the Cluster is not Ready
// and keeps its objects; back, it resumes its watches where they were,
// without listing the member again.
func TestAgentCluster(t *testing.T) {
	host := testenv.Start(t)
	m := startMember(t)
	store := storagetest.Backends()[0].Open(t)
	hc := hostClient(t, host)
	ctx := context.Background()
	endpoint := startTunnelEndpoint(t)
	startManager(t, host, store, func(o *controllers.Options) {
		o.Tunnel = controllers.TunnelOptions{BindAddress: endpoint.addr, CertDir: endpoint.certDir}
	})
	createNamespace(t, m, "web")
	for i := range 3 {
		createFilteredConfigMap(t, m, "web", fmt.Sprintf("cm-%d", i), "front")
	}
	mustCreate(t, hc, &clusterv1alpha1.Cluster{ObjectMeta: metav1.ObjectMeta{Name: "edge"}, Spec: clusterv1alpha1.ClusterSpec{
		Agent:         &clusterv1alpha1.AgentConnection{},
		SyncResources: []clusterv1alpha1.GroupResources{{Group: "", Resources: []string{"configmaps"}, Namespaces: []string{"web"}}},
	}})
	waitReady(t, hc, "edge", false, controllers.ReasonAgentNotConnected)

	token := agentToken(t, host, "edge")
	member := agentIdentity(t, m)
	stopAgent := runAgent(t, endpoint, "edge", token, member)
	waitReady(t, hc, "edge", true, controllers.ReasonHealthy)
	waitConvergedIn(t, store, "edge", m, configMapsGVR, "web")

	t.Run("token of another Cluster", func(t *testing.T) {
		mustCreate(t, hc, &clusterv1alpha1.Cluster{ObjectMeta: metav1.ObjectMeta{Name: "other"}, Spec: clusterv1alpha1.ClusterSpec{Agent: &clusterv1alpha1.AgentConnection{}}})
		l, err := tunnel.Connect(ctx, tunnel.URL(endpoint.url, "other"), token, endpoint.roots)
		var refused *tunnel.RefusedError
		if !errors.As(err, &refused) || refused.Code != http.StatusForbidden {
			if l != nil {
				l.Close()
			}
			t.Fatalf("edge's agent token opening other's tunnel: %v, want 403", err)
		}
		if _, err := tunnel.Connect(ctx, tunnel.URL(endpoint.url, "edge"), "not-a-token", endpoint.roots); !errors.As(err, &refused) || refused.Code != http.StatusUnauthorized {
			t.Errorf("a tunnel with no valid token: %v, want 401", err)
		}
	})

	t.Run("agent away and back", func(t *testing.T) {
		// The watch delivers a change before the agent goes: client-go's
		// reflector relists after a watch that ends with none within its
		// first second, wherever it is served from.
		createFilteredConfigMap(t, m, "web", "before-away", "front")
		waitConvergedIn(t, store, "edge", m, configMapsGVR, "web")
		lists := memberLists(t, "edge", "configmaps")
		stopAgent()
		waitReady(t, hc, "edge", false, controllers.ReasonAgentNotConnected)
		if got, err := store.MemberVersions(ctx, "edge", configMapsGVR); err != nil || len(got) != 4 {
			t.Fatalf("stored while the agent is away: %d objects, %v; want the 4 synced", len(got), err)
		}
		createFilteredConfigMap(t, m, "web", "while-away", "front")
		if err := m.kube.CoreV1().ConfigMaps("web").Delete(ctx, "cm-0", metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
		runAgent(t, endpoint, "edge", token, member)
		waitReady(t, hc, "edge", true, controllers.ReasonHealthy)
		waitConvergedIn(t, store, "edge", m, configMapsGVR, "web")
		if after := memberLists(t, "edge", "configmaps"); after != lists {
			t.Errorf("the member was listed %v times while its agent was away and back, want none: its watches resume", after-lists)
		}
	})
}

// TestAgentRefusesWrites: whatever a hub sends down a tunnel, the agent
// forwards only reads: a create, an exec and a proxied request never
// reach the member.
func TestAgentRefusesWrites(t *testing.T) {
	host := testenv.Start(t)
	m := startMember(t)
	createNamespace(t, m, "web")
	createFilteredConfigMap(t, m, "web", "cm-0", "front")
	hub, endpoint := startHub(t, host)
	runAgent(t, endpoint, "edge", agentToken(t, host, "edge"), agentIdentity(t, m))
	testenv.Eventually(t, timeout, func() error {
		if !hub.Status("edge").Connected {
			return errors.New("the agent has not connected")
		}
		return nil
	})
	viaTunnel := kubernetes.NewForConfigOrDie(&rest.Config{Host: "http://edge", Dial: hub.Dialer("edge", hub.Status("edge").Agent)})

	if list, err := viaTunnel.CoreV1().ConfigMaps("web").List(context.Background(), metav1.ListOptions{}); err != nil || len(list.Items) != 1 {
		t.Fatalf("a list through the tunnel: %v, want the member's one ConfigMap", err)
	}
	_, err := viaTunnel.CoreV1().ConfigMaps("web").Create(context.Background(), &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "planted"}}, metav1.CreateOptions{})
	if code := statusCode(err); code != http.StatusMethodNotAllowed && code != http.StatusForbidden {
		t.Errorf("a create through the tunnel: %v, want refused by the agent", err)
	}
	if _, err := m.kube.CoreV1().ConfigMaps("web").Get(context.Background(), "planted", metav1.GetOptions{}); err == nil {
		t.Error("the create reached the member")
	}
	for _, path := range []string{"/api/v1/namespaces/web/pods/p/exec", "/api/v1/nodes/n/proxy/", "/api/v1/namespaces/web/services/s/proxy/"} {
		err := viaTunnel.CoreV1().RESTClient().Get().AbsPath(path).Do(context.Background()).Error()
		if code := statusCode(err); code != http.StatusForbidden {
			t.Errorf("GET %s through the tunnel: %v, want 403 from the agent", path, err)
		}
	}
}

func statusCode(err error) int32 {
	var status interface{ Status() metav1.Status }
	if errors.As(err, &status) {
		return status.Status().Code
	}
	return 0
}

// tunnelEndpoint is where agents connect: the controller's endpoint, with
// its certificate, or a test's own hub.
type tunnelEndpoint struct {
	addr, url, certDir, caFile string
	roots                      *x509.CertPool
}

// startHub serves a tunnel endpoint of the test's own that accepts the
// agents the host's ServiceAccounts of controllerNamespace bind.
func startHub(t testing.TB, host *testenv.Env) (*tunnel.Hub, *tunnelEndpoint) {
	hub := tunnel.NewHub(tunnel.NewServiceAccounts(kubernetes.NewForConfigOrDie(host.Config), controllerNamespace), tunnel.HubOptions{})
	server := httptest.NewTLSServer(hub)
	t.Cleanup(server.Close)
	t.Cleanup(hub.CloseAll)
	endpoint := &tunnelEndpoint{url: server.URL, roots: x509.NewCertPool()}
	endpoint.roots.AddCert(server.Certificate())
	endpoint.caFile = filepath.Join(t.TempDir(), "ca.crt")
	if err := os.WriteFile(endpoint.caFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: server.Certificate().Raw}), 0o600); err != nil {
		t.Fatal(err)
	}
	kube := kubernetes.NewForConfigOrDie(host.Config)
	if _, err := kube.CoreV1().Namespaces().Create(context.Background(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: controllerNamespace}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	return hub, endpoint
}

// startTunnelEndpoint makes a serving certificate for a free loopback
// address for the controller's tunnel endpoint.
func startTunnelEndpoint(t *testing.T) *tunnelEndpoint {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	certPEM, keyPEM, err := certutil.GenerateSelfSignedCertKey("127.0.0.1", []net.IP{net.ParseIP("127.0.0.1")}, nil)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	for name, data := range map[string][]byte{"tls.crt": certPEM, "tls.key": keyPEM, "ca.crt": certPEM} {
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	roots := x509.NewCertPool()
	roots.AppendCertsFromPEM(certPEM)
	return &tunnelEndpoint{addr: addr, url: "https://" + addr, certDir: dir, caFile: filepath.Join(dir, "ca.crt"), roots: roots}
}

// agentToken makes the host ServiceAccount of cluster's agent, as the
// operator does, and returns a token of it for the tunnel's audience.
func agentToken(t testing.TB, host *testenv.Env, cluster string) string {
	t.Helper()
	kube := kubernetes.NewForConfigOrDie(host.Config)
	ctx := context.Background()
	name := "agent-" + cluster
	if _, err := kube.CoreV1().ServiceAccounts(controllerNamespace).Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{
		Name: name, Annotations: map[string]string{clusterv1alpha1.AnnotationAgentCluster: cluster},
	}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	tr, err := kube.CoreV1().ServiceAccounts(controllerNamespace).CreateToken(ctx, name, &authenticationv1.TokenRequest{
		Spec: authenticationv1.TokenRequestSpec{Audiences: []string{tunnel.Audience}},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return tr.Status.Token
}

// agentIdentity installs in the member the ServiceAccount and RBAC the
// agent's chart ships, and returns a config that acts as it.
func agentIdentity(t *testing.T, m *member) *rest.Config {
	t.Helper()
	const namespace = testenv.AgentNamespace
	out := testenv.RenderAgentChart(t)
	createNamespace(t, m, namespace)
	c, err := client.New(m.env.Config, client.Options{})
	if err != nil {
		t.Fatal(err)
	}
	sa := ""
	for _, o := range testenv.Objects(t, out) {
		switch o.GetKind() {
		case "ServiceAccount":
			sa = o.GetName()
		case "ClusterRole", "ClusterRoleBinding", "Role", "RoleBinding":
		default:
			continue
		}
		if err := c.Create(context.Background(), o); err != nil {
			t.Fatal(err)
		}
	}
	if sa == "" {
		t.Fatal("the agent's chart makes no ServiceAccount")
	}
	cfg := rest.CopyConfig(m.env.Config)
	cfg.Impersonate = rest.ImpersonationConfig{UserName: "system:serviceaccount:" + namespace + ":" + sa}
	return cfg
}

// runAgent runs cluster's agent until the returned func, or the test,
// stops it.
func runAgent(t *testing.T, endpoint *tunnelEndpoint, cluster, token string, member *rest.Config) func() {
	t.Helper()
	tokenFile := filepath.Join(t.TempDir(), "token")
	if err := os.WriteFile(tokenFile, []byte(token), 0o600); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = agent.Run(ctx, agent.Options{HubURL: endpoint.url, Cluster: cluster, TokenFile: tokenFile, CAFile: endpoint.caFile, Member: member})
	}()
	stop := func() {
		cancel()
		<-done
	}
	t.Cleanup(stop)
	return stop
}

func waitReady(t *testing.T, hc client.Client, cluster string, ready bool, reason string) {
	t.Helper()
	waitCluster(t, hc, cluster, func(c *clusterv1alpha1.Cluster) error {
		cond := meta.FindStatusCondition(c.Status.Conditions, clusterv1alpha1.ConditionReady)
		if cond == nil || (cond.Status == metav1.ConditionTrue) != ready || cond.Reason != reason {
			return fmt.Errorf("Ready condition %+v, want ready %v with reason %s", cond, ready, reason)
		}
		return nil
	})
}

// memberLists is how many full lists of resource the synchronizers of
// cluster have made (panorama_sync_lists_total).
func memberLists(t *testing.T, cluster, resource string) float64 {
	t.Helper()
	return gauge(t, "panorama_sync_lists_total", map[string]string{"cluster": cluster, "resource": resource})
}

// TestAgentShardedReplicas: two sharded replicas serve tunnel endpoints
// behind one address that sends each connection to either, as a Service
// does. Each agent's tunnel ends up with the replica that syncs its
// Cluster, whichever it first reached; when that replica stops, the agent
// follows its Cluster to the replica that takes it over.
func TestAgentShardedReplicas(t *testing.T) {
	host := testenv.Start(t)
	m := startMember(t)
	hc := hostClient(t, host)
	opts := storagetest.Backends()[1].Options(t) // MariaDB
	replicas := []string{"r0", "r1"}
	// One Cluster for each replica while both are up.
	owner := map[string]string{}
	for i := 0; len(owner) < len(replicas); i++ {
		name := fmt.Sprintf("edge-%d", i)
		if r := sharding.Assignment(replicas, sharding.ShardOf(name, testShards)); !slices.Contains(slices.Collect(maps.Values(owner)), r) {
			owner[name] = r
		}
	}
	createNamespace(t, m, "web")
	createFilteredConfigMap(t, m, "web", "cm-0", "front")
	mustCreate(t, hc, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: controllerNamespace}})
	endpoints := map[string]*tunnelEndpoint{}
	stops := map[string]func(){}
	for i, r := range replicas {
		endpoints[r] = startTunnelEndpoint(t)
		stops[r] = startReplica(t, host, "", r, opts, &writeLog{}, i == 0, func(o *controllers.Options) {
			o.Tunnel = controllers.TunnelOptions{BindAddress: endpoints[r].addr, CertDir: endpoints[r].certDir}
		})
	}
	// Both certificates are for 127.0.0.1: the agents trust either.
	service := *endpoints["r0"]
	service.url = "https://" + randomBalancer(t, endpoints["r0"].addr, endpoints["r1"].addr)
	service.caFile = filepath.Join(t.TempDir(), "ca.crt")
	var cas []byte
	for _, r := range replicas {
		ca, err := os.ReadFile(endpoints[r].caFile)
		if err != nil {
			t.Fatal(err)
		}
		cas = append(cas, ca...)
	}
	if err := os.WriteFile(service.caFile, cas, 0o600); err != nil {
		t.Fatal(err)
	}
	member := agentIdentity(t, m)
	store := storagetest.OpenStore(t, opts)
	for name := range owner {
		mustCreate(t, hc, &clusterv1alpha1.Cluster{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: clusterv1alpha1.ClusterSpec{
			Agent:         &clusterv1alpha1.AgentConnection{},
			SyncResources: []clusterv1alpha1.GroupResources{{Group: "", Resources: []string{"configmaps"}, Namespaces: []string{"web"}}},
		}})
		runAgent(t, &service, name, agentToken(t, host, name), member)
	}
	for name := range owner {
		waitReady(t, hc, name, true, controllers.ReasonHealthy)
		waitConvergedIn(t, store, name, m, configMapsGVR, "web")
	}

	stops["r1"]()
	createFilteredConfigMap(t, m, "web", "after-r1-stopped", "front")
	for name := range owner {
		waitReady(t, hc, name, true, controllers.ReasonHealthy)
		waitConvergedIn(t, store, name, m, configMapsGVR, "web")
	}
}

// randomBalancer forwards each connection to one of backends at random,
// as a Service's virtual IP does, and returns its address. A backend that
// refuses connections is passed over, as a Service's endpoints leave out a
// pod that stopped: an agent meets a stopped replica only while it runs.
func randomBalancer(t *testing.T, backends ...string) string {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	go func() {
		for {
			in, err := l.Accept()
			if err != nil {
				return
			}
			go func() {
				defer in.Close()
				var out net.Conn
				var err error
				for _, i := range rand.Perm(len(backends)) {
					if out, err = net.Dial("tcp", backends[i]); err == nil {
						break
					}
				}
				if err != nil {
					return
				}
				defer out.Close()
				go func() { _, _ = io.Copy(out, in) }()
				_, _ = io.Copy(in, out)
			}()
		}
	}()
	return l.Addr().String()
}

// TestTunnelFlood: whoever reaches the tunnel endpoint may send it tokens
// as fast as they like, made up or forged (a JWT of the right shape,
// naming an agent, signed by a key not the host's). The host is asked
// about a bounded few of them, and an agent that reconnects meanwhile
// does so at once.
func TestTunnelFlood(t *testing.T) {
	host := testenv.Start(t)
	m := startMember(t)
	store := storagetest.Backends()[0].Open(t)
	hc := hostClient(t, host)
	endpoint := startTunnelEndpoint(t)
	startManager(t, host, store, func(o *controllers.Options) {
		o.Tunnel = controllers.TunnelOptions{BindAddress: endpoint.addr, CertDir: endpoint.certDir}
	})
	mustCreate(t, hc, &clusterv1alpha1.Cluster{ObjectMeta: metav1.ObjectMeta{Name: "edge"}, Spec: clusterv1alpha1.ClusterSpec{
		Agent: &clusterv1alpha1.AgentConnection{}, SyncResources: []clusterv1alpha1.GroupResources{{Group: "", Resources: []string{"namespaces"}}},
	}})
	token, member := agentToken(t, host, "edge"), agentIdentity(t, m)
	stopAgent := runAgent(t, endpoint, "edge", token, member)
	waitReady(t, hc, "edge", true, controllers.ReasonHealthy)

	forged := forgedToken(t, "system:serviceaccount:"+controllerNamespace+":agent-victim")
	reviewsBefore := tokenReviews(t, host)
	ctx, stopFlood := context.WithCancel(context.Background())
	var flood sync.WaitGroup
	started := time.Now()
	for i := range 8 {
		flood.Go(func() {
			for ctx.Err() == nil {
				token, cluster := "made-up", "edge"
				if i%2 == 0 {
					token, cluster = forged, "victim"
				}
				if l, err := tunnel.Connect(ctx, tunnel.URL(endpoint.url, cluster), token, endpoint.roots); err == nil {
					l.Close()
					t.Errorf("a tunnel opened to a flood's token for %s", cluster)
				}
			}
		})
	}
	stopAgent()
	waitReady(t, hc, "edge", false, controllers.ReasonAgentNotConnected)
	runAgent(t, endpoint, "edge", token, member)
	waitReady(t, hc, "edge", true, controllers.ReasonHealthy)
	stopFlood()
	flood.Wait()
	// The forged tokens' bucket: a burst of 5, then one every 2 s.
	if got, most := tokenReviews(t, host)-reviewsBefore, 5+time.Since(started).Seconds()/2+1; got > most {
		t.Errorf("the flood cost the host %v TokenReviews in %v, want at most %.0f", got, time.Since(started).Round(time.Second), most)
	}
}

// forgedToken is a JWT for the tunnel's audience naming subject, of the
// shape the host issues, signed by a key of its own.
func forgedToken(t *testing.T, subject string) string {
	key, err := rsa.GenerateKey(cryptorand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	signer, err := jose.NewSigner(jose.SigningKey{Algorithm: jose.RS256, Key: key}, nil)
	if err != nil {
		t.Fatal(err)
	}
	token, err := jwt.Signed(signer).Claims(jwt.Claims{
		Subject: subject, Audience: jwt.Audience{tunnel.Audience}, Expiry: jwt.NewNumericDate(time.Now().Add(time.Hour)),
	}).Serialize()
	if err != nil {
		t.Fatal(err)
	}
	return token
}

// tokenReviews is how many TokenReviews the host has answered.
func tokenReviews(t *testing.T, host *testenv.Env) float64 {
	t.Helper()
	parser := expfmt.NewTextParser(model.UTF8Validation)
	families, err := parser.TextToMetricFamilies(strings.NewReader(host.Kubectl(t, "get", "--raw", "/metrics")))
	if err != nil {
		t.Fatal(err)
	}
	var n float64
	for _, s := range families["apiserver_request_total"].GetMetric() {
		for _, l := range s.GetLabel() {
			if l.GetName() == "resource" && l.GetValue() == "tokenreviews" {
				n += s.GetCounter().GetValue()
			}
		}
	}
	return n
}
