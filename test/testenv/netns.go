package testenv

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	certutil "k8s.io/client-go/util/cert"
	"k8s.io/client-go/util/keyutil"
)

// NetNS is a network namespace of the test's making, joined to the test's
// own by a veth pair and nothing else: a process run in it (Command)
// reaches the test's namespace at HostIP alone, and what listens in it on
// its loopback no process outside can connect to. It needs root and
// iproute2, as CI has.
type NetNS struct {
	Name string
	// HostIP is the test's end of the veth pair, IP the namespace's, both
	// in Subnet.
	HostIP, IP net.IP
	Subnet     *net.IPNet
}

// netnsPrefix starts the names of the namespaces tests make, followed by
// the test process's id: a namespace left by a process that is gone is
// stale (NewNetNS removes it).
const netnsPrefix = "panorama-test-"

var netnsCount atomic.Int32

// NewNetNS makes a network namespace whose veth pair has hostCIDR on the
// test's side and nsCIDR on the namespace's (one subnet, e.g.
// 10.213.0.1/30 and 10.213.0.2/30), with its loopback up. It is removed,
// with whatever still runs in it, when the test ends. Without root the
// test is skipped, or fails where a control plane is required (CI, which
// runs as root).
func NewNetNS(t testing.TB, hostCIDR, nsCIDR string) *NetNS {
	t.Helper()
	if testing.Short() {
		t.Skip("needs a network namespace, which the unit tier (go test -short) does not make")
	}
	if os.Geteuid() != 0 {
		const notRoot = "making a network namespace needs root"
		if controlPlaneRequired() {
			t.Fatal(notRoot)
		}
		t.Skip(notRoot)
	}
	hostIP, subnet, err := net.ParseCIDR(hostCIDR)
	if err != nil {
		t.Fatal(err)
	}
	nsIP, _, err := net.ParseCIDR(nsCIDR)
	if err != nil || !subnet.Contains(nsIP) {
		t.Fatalf("the namespace's address %s is not in the subnet of %s: %v", nsCIDR, hostCIDR, err)
	}
	removeStaleNetNS(t)
	if holder := interfaceWith(t, hostIP); holder != "" {
		t.Fatalf("%s is already an address of interface %s: another test run's network namespace?", hostIP, holder)
	}
	seq := netnsCount.Add(1)
	n := &NetNS{Name: fmt.Sprintf("%s%d-%d", netnsPrefix, os.Getpid(), seq), HostIP: hostIP, IP: nsIP, Subnet: subnet}
	// Interface names have at most 15 characters.
	hostEnd, nsEnd := fmt.Sprintf("pt%d-%dh", os.Getpid(), seq), fmt.Sprintf("pt%d-%dn", os.Getpid(), seq)
	ip(t, "netns", "add", n.Name)
	t.Cleanup(func() { removeNetNS(t, n.Name) })
	ip(t, "link", "add", hostEnd, "type", "veth", "peer", "name", nsEnd, "netns", n.Name)
	ip(t, "addr", "add", hostCIDR, "dev", hostEnd)
	ip(t, "link", "set", hostEnd, "up")
	ip(t, "-n", n.Name, "addr", "add", nsCIDR, "dev", nsEnd)
	ip(t, "-n", n.Name, "link", "set", nsEnd, "up")
	ip(t, "-n", n.Name, "link", "set", "lo", "up")
	return n
}

// Command runs a program in the namespace (`ip netns exec`, which execs
// it: the process's id is the program's), killed when ctx ends.
func (n *NetNS) Command(ctx context.Context, program string, args ...string) *exec.Cmd {
	return exec.CommandContext(ctx, "ip", append([]string{"netns", "exec", n.Name, program}, args...)...)
}

func ip(t testing.TB, args ...string) {
	t.Helper()
	if out, err := exec.Command("ip", args...).CombinedOutput(); err != nil {
		t.Fatalf("ip %s: %v: %s", strings.Join(args, " "), err, out)
	}
}

// removeNetNS kills what still runs in namespace name, which deletes its
// end of the veth pair and with it the other, and removes it.
func removeNetNS(t testing.TB, name string) {
	out, _ := exec.Command("ip", "netns", "pids", name).Output()
	for _, field := range strings.Fields(string(out)) {
		if pid, err := strconv.Atoi(field); err == nil {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
	}
	if out, err := exec.Command("ip", "netns", "del", name).CombinedOutput(); err != nil {
		t.Logf("removing network namespace %s: %v: %s", name, err, out)
	}
}

// removeStaleNetNS removes the namespaces of test processes that are gone
// (killed before their cleanup ran), which would hold their addresses.
func removeStaleNetNS(t testing.TB) {
	out, err := exec.Command("ip", "netns", "list").Output()
	if err != nil {
		t.Fatalf("ip netns list: %v", err)
	}
	for _, line := range strings.Split(string(out), "\n") {
		name, _, _ := strings.Cut(line, " ")
		rest, ok := strings.CutPrefix(name, netnsPrefix)
		if !ok {
			continue
		}
		owner, _, _ := strings.Cut(rest, "-")
		if pid, err := strconv.Atoi(owner); err == nil && syscall.Kill(pid, 0) == syscall.ESRCH {
			t.Logf("removing network namespace %s, left by a test process that is gone", name)
			removeNetNS(t, name)
		}
	}
}

// interfaceWith names the interface that has address a, if one has.
func interfaceWith(t testing.TB, a net.IP) string {
	ifaces, err := net.Interfaces()
	if err != nil {
		t.Fatal(err)
	}
	for _, iface := range ifaces {
		addrs, _ := iface.Addrs()
		for _, addr := range addrs {
			if ipnet, ok := addr.(*net.IPNet); ok && ipnet.IP.Equal(a) {
				return iface.Name
			}
		}
	}
	return ""
}

// IsolatedMember is a member cluster's control plane, etcd and
// kube-apiserver from Assets, run inside a NetNS and listening on its
// loopback alone, so that only processes in the namespace can reach it.
// Its API server authenticates an admin's static token and ServiceAccount
// tokens (so `kubectl create token` works), and authorizes with Node and
// RBAC, as a real cluster's does.
type IsolatedMember struct {
	NS *NetNS
	// Addr is where the API server listens in the namespace,
	// 127.0.0.1:port, a port free in the test's namespace when it started:
	// nothing answers there outside.
	Addr string
	// CA holds the PEM certificates its serving certificate is verified
	// against.
	CA []byte
	// Kubeconfig is an admin's, for kubectl run in the namespace.
	Kubeconfig string
}

// StartIsolatedMember starts a member's control plane in ns; it stops with
// the test.
func StartIsolatedMember(t testing.TB, ns *NetNS) *IsolatedMember {
	t.Helper()
	assets, dir := Assets(t), t.TempDir()
	port := freeLoopbackPort(t)
	m := &IsolatedMember{NS: ns, Addr: fmt.Sprintf("127.0.0.1:%d", port), Kubeconfig: filepath.Join(dir, "admin.kubeconfig")}
	cert, key, err := certutil.GenerateSelfSignedCertKey("127.0.0.1", nil, []string{"localhost"})
	if err != nil {
		t.Fatal(err)
	}
	m.CA = cert
	saKey, err := keyutil.MakeEllipticPrivateKeyPEM()
	if err != nil {
		t.Fatal(err)
	}
	const adminToken = "isolated-member-admin"
	files := map[string][]byte{
		"tls.crt": cert, "tls.key": key, "sa.key": saKey,
		"tokens.csv": []byte(adminToken + ",admin,admin,system:masters\n"),
	}
	for name, data := range files {
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	if err := m.WriteKubeconfig(m.Kubeconfig, adminToken); err != nil {
		t.Fatal(err)
	}
	// The namespace is the member's alone: etcd takes its usual ports.
	const etcdURL = "http://127.0.0.1:2379"
	runIn(t, ns, filepath.Join(assets, "etcd"), "--data-dir", filepath.Join(dir, "etcd"),
		"--listen-client-urls", etcdURL, "--advertise-client-urls", etcdURL,
		"--listen-peer-urls", "http://127.0.0.1:2380", "--unsafe-no-fsync")
	runIn(t, ns, filepath.Join(assets, "kube-apiserver"), "--etcd-servers", etcdURL,
		"--bind-address=127.0.0.1", "--secure-port", strconv.Itoa(port),
		// With no default route in the namespace there is no address to
		// guess: the namespace's end of the veth is the one it has.
		"--advertise-address", ns.IP.String(),
		"--cert-dir", dir, "--tls-cert-file", filepath.Join(dir, "tls.crt"), "--tls-private-key-file", filepath.Join(dir, "tls.key"),
		"--token-auth-file", filepath.Join(dir, "tokens.csv"), "--authorization-mode=Node,RBAC",
		"--service-account-issuer=https://kubernetes.default.svc", "--service-account-key-file", filepath.Join(dir, "sa.key"),
		"--service-account-signing-key-file", filepath.Join(dir, "sa.key"),
		"--service-cluster-ip-range=10.0.0.0/24",
		// No controller manager makes the default ServiceAccount that the
		// admission plugin would require of each pod (as envtest does).
		"--disable-admission-plugins=ServiceAccount")
	Eventually(t, 2*time.Minute, func() error {
		if _, stderr, err := m.TryKubectl("get", "--raw", "/readyz"); err != nil {
			return fmt.Errorf("the member's API server is not ready: %v: %s", err, stderr)
		}
		return nil
	})
	return m
}

// WriteKubeconfig writes a kubeconfig of the member, for use in its
// namespace, whose user presents token.
func (m *IsolatedMember) WriteKubeconfig(path, token string) error {
	kc := clientcmdapi.NewConfig()
	kc.Clusters["member"] = &clientcmdapi.Cluster{Server: "https://" + m.Addr, CertificateAuthorityData: m.CA}
	kc.AuthInfos["member"] = &clientcmdapi.AuthInfo{Token: token}
	kc.Contexts["member"] = &clientcmdapi.Context{Cluster: "member", AuthInfo: "member"}
	kc.CurrentContext = "member"
	return clientcmd.WriteToFile(*kc, path)
}

// Kubectl runs the real kubectl in the member's namespace as its admin and
// returns its standard output; a failure ends the test.
func (m *IsolatedMember) Kubectl(t testing.TB, args ...string) string {
	t.Helper()
	out, stderr, err := m.TryKubectl(args...)
	if err != nil {
		t.Fatalf("kubectl %v in the member: %v\n%s", args, err, stderr)
	}
	return out
}

// TryKubectl runs kubectl in the member's namespace as its admin and
// returns stdout, stderr and the error.
func (m *IsolatedMember) TryKubectl(args ...string) (string, string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := m.NS.Command(ctx, filepath.Join(os.Getenv("KUBEBUILDER_ASSETS"), "kubectl"), append([]string{"--kubeconfig", m.Kubeconfig}, args...)...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	return stdout.String(), stderr.String(), err
}

// freeLoopbackPort is a port nothing listens on at 127.0.0.1 of the test's
// namespace.
func freeLoopbackPort(t testing.TB) int {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// runIn runs program in ns until the test ends, then stops it with
// SIGTERM (SIGKILL after 30 s), showing its output if the test failed.
func runIn(t testing.TB, ns *NetNS, program string, args ...string) {
	t.Helper()
	var out lockedBuffer
	cmd := ns.Command(context.Background(), program, args...)
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatalf("starting %s in %s: %v", program, ns.Name, err)
	}
	done := make(chan struct{})
	go func() {
		_ = cmd.Wait()
		close(done)
	}()
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-done:
		case <-time.After(30 * time.Second):
			_ = cmd.Process.Kill()
			<-done
		}
		if t.Failed() {
			t.Logf("%s output:\n%s", filepath.Base(program), out.String())
		}
	})
}

// lockedBuffer is a buffer a process's two output streams share.
type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}
