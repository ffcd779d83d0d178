package e2e

import (
	"strconv"
	"testing"

	"github.com/panorama-io/panorama/test/testenv"
)

// startRegistered runs Panorama as it runs in a cluster, over the database
// of dsn: the controller manager and the API server as processes, the API
// server registered with the host as an APIService, and returns the API
// server and its port once the host finds it available. controllerArgs are
// more flags of the controller manager.
func startRegistered(t *testing.T, host *testenv.Env, dir, dsn string, controllerArgs ...string) (api *process, port int) {
	t.Helper()
	// Both components run as the chart's ServiceAccounts with the chart's
	// RBAC, never as admin: whatever they need and are not shipped with
	// fails the test.
	controllerKC, apiserverKC := testenv.ShippedIdentities(t, host, dir)
	cm := startProcess(t, "controller-manager", append([]string{"--kubeconfig", controllerKC, "--storage=mysql", "--storage-dsn", dsn,
		"--metrics-bind-address=0", "--health-probe-bind-address=0", "--cluster-health-interval=2s"}, controllerArgs...)...)
	// The API server serves with the certificate the chart issues, and the
	// host verifies it against the chart's caBundle.
	serving := testenv.ChartServingCert(t, dir)
	port = freePort(t)
	api = startProcess(t, "apiserver", "--secure-port", strconv.Itoa(port), "--bind-address=127.0.0.1",
		"--tls-cert-file", serving.CertFile, "--tls-private-key-file", serving.KeyFile, "--kubeconfig", apiserverKC,
		"--storage=mysql", "--storage-dsn", dsn, "--watch-cache-poll-interval=200ms")
	failIfDenied(t, cm, api)
	waitReady(t, port)
	host.RegisterAPIService(t, serving.APIService, port)
	waitAvailable(t, host, "True", "")
	return api, port
}
