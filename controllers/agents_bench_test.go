package controllers_test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"syscall"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/panorama-io/panorama/storage/storagetest"
	"github.com/panorama-io/panorama/test/testenv"
)

// BenchmarkAgentFleet syncs a fleet of PANORAMA_BENCH_AGENTS Clusters
// (default 100), each reached through an agent of its own (the agent
// binary, one process each, with its own token and tunnel) that points at
// one real member of PANORAMA_BENCH_AGENT_OBJECTS objects (default 500:
// ConfigMaps and Secrets, as BenchmarkFleet's), and the same fleet
// reached directly, into each backend. Printed, with their baselines from
// the same run:
//
//   - the hub's memory per tunnel, idle (the heap with every agent
//     connected less the heap before, per agent) and syncing (the heap
//     after the fleet synced through the agents less the heap after it
//     synced directly, per cluster), and each agent's resident memory;
//   - the initial sync rate through the agents as a ratio to the rate of
//     the fleet reached directly.
//
// PANORAMA_BENCH_AGENT_PROFILE=<file> profiles the hub's CPU during the
// sync through the agents.
func BenchmarkAgentFleet(b *testing.B) {
	n := storagetest.EnvInt(b, "PANORAMA_BENCH_AGENTS", 100, 1)
	objects := storagetest.EnvInt(b, "PANORAMA_BENCH_AGENT_OBJECTS", 500, 10)
	host := testenv.Start(b)
	member := testenv.Start(b, testenv.WithoutCRDs())
	ctx := log.IntoContext(context.Background(), logr.Discard())
	kube := kubernetes.NewForConfigOrDie(member.Config)
	testenv.CreateConfigMaps(b, kube, objects-objects/5)
	createSecrets(b, kube, objects/5)
	perCluster, _ := fastestList(b, dynamic.NewForConfigOrDie(member.Config), 1, secretsGVR, configMapsGVR)

	hub, endpoint := startHub(b, host)
	bin := buildAgent(b)
	runtime.GC()
	before := heapInUse()
	agents := make([]*exec.Cmd, n)
	for i := range agents {
		agents[i] = startAgentProcess(b, bin, endpoint, fleetCluster(i), agentToken(b, host, fleetCluster(i)), member.Kubeconfig)
	}
	deadline := time.Now().Add(5 * time.Minute)
	for i := 0; i < n; {
		if hub.Status(fleetCluster(i)).Connected {
			i++
			continue
		}
		if time.Now().After(deadline) {
			b.Fatalf("%d of %d agents connected in 5 minutes", i, n)
		}
		time.Sleep(50 * time.Millisecond)
	}
	runtime.GC()
	idle := heapInUse()
	b.Logf("%d agents connected: the hub's heap %+.0f KiB per idle tunnel", n, kib(idle, before, n))

	direct := func(string) *rest.Config { return member.Config }
	throughAgent := func(cluster string) *rest.Config {
		return &rest.Config{Host: "http://" + cluster + ".agent.panorama.io", Dial: hub.Dialer(cluster, hub.Status(cluster).Agent)}
	}
	for _, be := range storagetest.Backends() {
		b.Run(be.Name, func(b *testing.B) {
			var rates [2]float64
			var heaps [2]uint64
			for i, member := range []func(string) *rest.Config{direct, throughAgent} {
				opts := be.Options(b)
				if opts.Driver != "sqlite" {
					opts.MaxOpenConns = 20 // the controller manager's default
				}
				stopProfile := func() {}
				if i == 1 {
					stopProfile = cpuProfile(b, os.Getenv("PANORAMA_BENCH_AGENT_PROFILE"))
				}
				f := syncFleet(b, ctx, storagetest.OpenStore(b, opts), opts, member, n, perCluster)
				stopProfile()
				rates[i] = float64(n*perCluster) / f.took.Seconds()
				runtime.GC()
				heaps[i] = heapInUse()
				f.stop()
			}
			var rss int64
			for _, a := range agents {
				r, _ := storagetest.ResidentBytes(a.Process.Pid)
				rss += r
			}
			b.ReportMetric(rates[1]/rates[0], "agent-sync-rate/direct")
			b.Logf("%s: %d clusters, %d objects: initial sync through agents %.0f objects/s, %.2fx the rate reached directly (%.0f objects/s)",
				be.Name, n, n*perCluster, rates[1], rates[1]/rates[0], rates[0])
			b.Logf("%s: the hub's heap %+.0f KiB per syncing tunnel (through agents less directly, after the sync); each agent's RSS %.1f MiB on average",
				be.Name, kib(heaps[1], heaps[0], n), float64(rss)/float64(n)/(1<<20))
		})
	}
}

// kib is (after - before) / n in KiB, negative when the heap shrank.
func kib(after, before uint64, n int) float64 {
	return (float64(after) - float64(before)) / float64(n) / 1024
}

// buildAgent builds cmd/agent.
func buildAgent(b *testing.B) string {
	bin := filepath.Join(b.TempDir(), "agent")
	if out, err := exec.Command("go", "build", "-o", bin, filepath.Join(testenv.RepoRoot(b), "cmd", "agent")).CombinedOutput(); err != nil {
		b.Fatalf("building the agent: %v\n%s", err, out)
	}
	return bin
}

// startAgentProcess runs the agent of cluster, reading the member with
// kubeconfig, until the benchmark ends.
func startAgentProcess(b *testing.B, bin string, endpoint *tunnelEndpoint, cluster, token, kubeconfig string) *exec.Cmd {
	tokenFile := filepath.Join(b.TempDir(), "token")
	if err := os.WriteFile(tokenFile, []byte(token), 0o600); err != nil {
		b.Fatal(err)
	}
	cmd := exec.Command(bin, "--hub-url", endpoint.url, "--cluster", cluster, "--token-file", tokenFile,
		"--hub-ca-file", endpoint.caFile, "--kubeconfig", kubeconfig, "--health-addr", "")
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		_ = cmd.Wait()
	})
	return cmd
}
