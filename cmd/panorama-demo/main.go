// Command panorama-demo is the local demo (`make run`): it starts a host
// cluster and two member clusters (kube-apiserver and etcd from
// KUBEBUILDER_ASSETS, as `make run` builds them), fills the members with
// sample workloads, runs Panorama all in one on embedded SQLite, registers
// it with the host and writes a kubeconfig to try it with kubectl.
//
// It links envtest and the test helpers, which is why it is not a flag of
// the production binary.
package main

import (
	"context"
	"net"
	"os"
	"time"

	"github.com/spf13/pflag"
	"golang.org/x/sync/errgroup"
	"k8s.io/klog/v2"
	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/panorama-io/panorama/internal/allinone"
)

func main() {
	var kubeconfig *string
	opts := allinone.ParseFlags(func(fs *pflag.FlagSet) {
		kubeconfig = fs.String("demo-kubeconfig", "panorama-demo.kubeconfig", "Where the demo writes the kubeconfig to use Panorama with.")
	})
	if err := run(ctrl.SetupSignalHandler(), opts, *kubeconfig); err != nil {
		klog.ErrorS(err, "demo")
		klog.Flush()
		os.Exit(1)
	}
}

// run serves the demo until ctx ends or any part fails; the demo clusters
// are stopped on every way out.
func run(ctx context.Context, opts *allinone.Options, kubeconfig string) error {
	d, err := startDemo(ctx)
	defer d.stop()
	if err != nil {
		return err
	}
	port, err := freePort()
	if err != nil {
		return err
	}
	rec := opts.Server.Recommended
	rec.SecureServing.BindAddress = net.ParseIP("127.0.0.1")
	rec.SecureServing.BindPort = port
	rec.SecureServing.ServerCert.CertDirectory = d.dir
	rec.CoreAPI.CoreAPIKubeconfigPath = d.hostKubeconfig
	rec.Authentication.RemoteKubeConfigFile = d.hostKubeconfig
	rec.Authorization.RemoteKubeConfigFile = d.hostKubeconfig
	opts.Controllers.HealthInterval = 5 * time.Second

	// A failed registration cancels Panorama too, so run returns and the
	// deferred stop takes the clusters down.
	g, ctx := errgroup.WithContext(ctx)
	g.Go(func() error { return allinone.Run(ctx, opts, d.host.Config) })
	g.Go(func() error { return d.register(ctx, port, kubeconfig) })
	return g.Wait()
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}
