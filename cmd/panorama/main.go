// Command panorama runs the controller manager and the API server in one
// process over one store: embedded SQLite by default.
//
// With --demo it first starts a local host cluster and two member clusters
// (kube-apiserver and etcd from KUBEBUILDER_ASSETS, as `make run` builds
// them), fills the members with sample workloads, registers Panorama with
// the host and writes a kubeconfig to try it with kubectl.
package main

import (
	"flag"
	"net"
	"os"
	"time"

	"github.com/spf13/pflag"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/klog/v2"
	ctrl "sigs.k8s.io/controller-runtime"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	clusterv1alpha1 "github.com/panorama-io/panorama/apis/cluster/v1alpha1"
	"github.com/panorama-io/panorama/apiserver"
	"github.com/panorama-io/panorama/controllers"
	"github.com/panorama-io/panorama/storage/sqlstore"
)

func main() {
	opts := apiserver.NewOptions()
	var (
		demo           bool
		demoKubeconfig string
		ctrlOpts       controllers.Options
	)
	fs := pflag.CommandLine
	opts.AddFlags(fs)
	fs.BoolVar(&demo, "demo", false, "Start local host and member clusters with sample workloads and serve them.")
	fs.StringVar(&demoKubeconfig, "demo-kubeconfig", "panorama-demo.kubeconfig", "Where --demo writes the kubeconfig to use Panorama with.")
	ctrlOpts.AddFlags(fs)
	klog.InitFlags(nil)
	fs.AddGoFlagSet(flag.CommandLine)
	pflag.Parse()
	ctrl.SetLogger(klog.NewKlogr())
	ctx := ctrl.SetupSignalHandler()

	var hostConfig *rest.Config
	var err error
	if demo {
		d, err := startDemo(ctx)
		if err != nil {
			fail("starting the demo clusters", err)
		}
		defer d.stop()
		hostConfig = d.host.Config
		port, err := freePort()
		if err != nil {
			fail("finding a port", err)
		}
		opts.Recommended.SecureServing.BindAddress = net.ParseIP("127.0.0.1")
		opts.Recommended.SecureServing.BindPort = port
		opts.Recommended.SecureServing.ServerCert.CertDirectory = d.dir
		opts.Recommended.CoreAPI.CoreAPIKubeconfigPath = d.hostKubeconfig
		opts.Recommended.Authentication.RemoteKubeConfigFile = d.hostKubeconfig
		opts.Recommended.Authorization.RemoteKubeConfigFile = d.hostKubeconfig
		ctrlOpts.HealthInterval = 5 * time.Second
		go func() {
			if err := d.register(ctx, port, demoKubeconfig); err != nil {
				fail("registering Panorama with the demo host", err)
			}
		}()
	} else {
		path := opts.Recommended.CoreAPI.CoreAPIKubeconfigPath
		if hostConfig, err = clientcmd.BuildConfigFromFlags("", path); err != nil {
			fail("reading the host kubeconfig (--kubeconfig)", err)
		}
	}

	store, err := sqlstore.Open(ctx, opts.Storage)
	if err != nil {
		fail("opening storage", err)
	}
	defer store.Close()
	scheme := runtime.NewScheme()
	_ = clientgoscheme.AddToScheme(scheme)
	_ = clusterv1alpha1.AddToScheme(scheme)
	mgr, err := ctrl.NewManager(hostConfig, ctrl.Options{Scheme: scheme, Metrics: metricsserver.Options{BindAddress: "0"}})
	if err != nil {
		fail("creating the controller manager", err)
	}
	if err := controllers.SetupWithManager(mgr, store, ctrlOpts); err != nil {
		fail("setting up controllers", err)
	}
	srv, err := opts.New(store)
	if err != nil {
		fail("configuring the API server", err)
	}
	errs := make(chan error, 2)
	go func() { errs <- mgr.Start(ctx) }()
	go func() { errs <- srv.Run(ctx) }()
	if err := <-errs; err != nil {
		fail("running", err)
	}
	<-errs
}

func fail(what string, err error) {
	klog.ErrorS(err, what)
	klog.Flush()
	os.Exit(1)
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}
