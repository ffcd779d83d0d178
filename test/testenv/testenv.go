// Package testenv starts real control planes for tests: kube-apiserver and
// etcd built by hack/test-assets.sh (KUBEBUILDER_ASSETS), with Panorama's
// CRDs installed, and runs the real kubectl against them. Tests that need
// one are not in the unit tier (go test -short): see Assets.
package testenv

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
)

// Env is one running control plane.
type Env struct {
	Env    *envtest.Environment
	Config *rest.Config
	// Kubeconfig is a file with an admin user's credentials.
	Kubeconfig string
}

// Assets returns the folder of the test binaries. A test that needs them
// is skipped in the unit tier (go test -short) and, without
// KUBEBUILDER_ASSETS, skipped with a message naming `make test`, unless
// the control plane is required: under PANORAMA_REQUIRE_DB or CI=true
// (which always have it), a missing one fails the test.
func Assets(t testing.TB) string {
	t.Helper()
	if testing.Short() {
		t.Skip("needs a control plane, which the unit tier (go test -short, make test-unit) does not start: make test runs it")
	}
	dir := os.Getenv("KUBEBUILDER_ASSETS")
	if dir == "" {
		const missing = "KUBEBUILDER_ASSETS is not set: run the tests with `make test` (it builds the control plane with hack/test-assets.sh)"
		if controlPlaneRequired() {
			t.Fatal(missing)
		}
		t.Skip(missing)
	}
	return dir
}

// controlPlaneRequired is true where a test needing a control plane must
// not skip: CI, and whoever asks for every database and server as CI does.
func controlPlaneRequired() bool {
	return os.Getenv("PANORAMA_REQUIRE_DB") != "" || os.Getenv("CI") == "true"
}

// RepoRoot is the folder holding go.mod.
func RepoRoot(t testing.TB) string {
	t.Helper()
	dir, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			t.Fatal("go.mod not found above the test's folder")
		}
		dir = parent
	}
}

// Option changes the environment before it starts.
type Option func(*envtest.Environment)

// WithoutCRDs starts a bare control plane, as a member cluster is.
func WithoutCRDs() Option { return func(e *envtest.Environment) { e.CRDDirectoryPaths = nil } }

// Start starts a control plane with Panorama's CRDs; it stops with the test.
func Start(t testing.TB, opts ...Option) *Env {
	t.Helper()
	e := &envtest.Environment{
		BinaryAssetsDirectory: Assets(t),
		CRDDirectoryPaths:     []string{filepath.Join(RepoRoot(t), "config", "crd", "bases")},
		ErrorIfCRDPathMissing: true,
	}
	for _, o := range opts {
		o(e)
	}
	cfg, err := e.Start()
	if err != nil {
		t.Fatalf("starting control plane: %v", err)
	}
	t.Cleanup(func() {
		if err := e.Stop(); err != nil {
			t.Logf("stopping control plane: %v", err)
		}
	})
	user, err := e.AddUser(envtest.User{Name: "admin", Groups: []string{"system:masters"}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	kubeconfig, err := user.KubeConfig()
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "kubeconfig")
	if err := os.WriteFile(path, kubeconfig, 0o600); err != nil {
		t.Fatal(err)
	}
	return &Env{Env: e, Config: cfg, Kubeconfig: path}
}

// Kubectl runs the real kubectl against the environment and returns its
// standard output; a failure ends the test with kubectl's error output.
func (e *Env) Kubectl(t testing.TB, args ...string) string {
	t.Helper()
	out, stderr, err := e.TryKubectl(args...)
	if err != nil {
		t.Fatalf("kubectl %v: %v\n%s", args, err, stderr)
	}
	return out
}

// TryKubectl runs kubectl and returns stdout, stderr and the error.
func (e *Env) TryKubectl(args ...string) (string, string, error) {
	return Kubectl(e.Kubeconfig, args...)
}

// Kubectl runs the real kubectl (from KUBEBUILDER_ASSETS) with a kubeconfig.
func Kubectl(kubeconfig string, args ...string) (string, string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, filepath.Join(os.Getenv("KUBEBUILDER_ASSETS"), "kubectl"), append([]string{"--kubeconfig", kubeconfig}, args...)...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	return stdout.String(), stderr.String(), err
}

// Eventually retries f until it succeeds, and fails the test with f's last
// error when timeout passes first.
func Eventually(t testing.TB, timeout time.Duration, f func() error) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		err := f()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("not within %v: %v", timeout, err)
		}
		time.Sleep(200 * time.Millisecond)
	}
}
