// Command controller-manager reconciles Cluster objects and syncs every
// member cluster's selected resources into storage.
package main

import (
	"flag"
	"net/http"
	"os"

	"github.com/spf13/pflag"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/healthz"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	clusterv1alpha1 "github.com/panorama-io/panorama/apis/cluster/v1alpha1"
	"github.com/panorama-io/panorama/controllers"
	"github.com/panorama-io/panorama/storage/sqlstore"
)

func main() {
	var (
		metricsAddr, probeAddr, leaderNamespace string
		leaderElect                             bool
		storageOpts                             sqlstore.Options
		opts                                    controllers.Options
	)
	fs := pflag.CommandLine
	fs.StringVar(&metricsAddr, "metrics-bind-address", ":8080", "Address of the /metrics endpoint; 0 disables it.")
	fs.StringVar(&probeAddr, "health-probe-bind-address", ":8081", "Address of the /healthz and /readyz endpoints.")
	fs.BoolVar(&leaderElect, "leader-elect", false, "Elect a leader, so that only one replica syncs (with --shards, compacts, indexes fields and imports, while all sync).")
	fs.StringVar(&leaderNamespace, "leader-election-namespace", "", "Namespace of the leader election lease and the sharding Leases (default: the pod's namespace).")
	opts.AddFlags(fs)
	storageOpts.AddFlags(fs)
	zapOpts := zap.Options{}
	zapOpts.BindFlags(flag.CommandLine)
	fs.AddGoFlagSet(flag.CommandLine) // --kubeconfig and the zap flags
	pflag.Parse()
	ctrl.SetLogger(zap.New(zap.UseFlagOptions(&zapOpts)))
	log := ctrl.Log.WithName("setup")
	opts.Sharding.Namespace = leaderNamespace
	if err := opts.Validate(); err != nil {
		log.Error(err, "invalid flags")
		os.Exit(1)
	}

	scheme := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		panic(err)
	}
	if err := clusterv1alpha1.AddToScheme(scheme); err != nil {
		panic(err)
	}
	ctx := ctrl.SetupSignalHandler()
	store, err := sqlstore.Open(ctx, storageOpts)
	if err != nil {
		log.Error(err, "opening storage")
		os.Exit(1)
	}
	defer store.Close()

	mgr, err := ctrl.NewManager(ctrl.GetConfigOrDie(), ctrl.Options{
		Scheme:                  scheme,
		Metrics:                 metricsserver.Options{BindAddress: metricsAddr},
		HealthProbeBindAddress:  probeAddr,
		LeaderElection:          leaderElect,
		LeaderElectionID:        "panorama-controller-manager",
		LeaderElectionNamespace: leaderNamespace,
		// The next leader may start at once: every write is a transaction and
		// a resumed synchronizer rewrites nothing unchanged.
		LeaderElectionReleaseOnCancel: true,
	})
	if err != nil {
		log.Error(err, "creating manager")
		os.Exit(1)
	}
	if err := controllers.SetupWithManager(mgr, store, opts); err != nil {
		log.Error(err, "setting up controllers")
		os.Exit(1)
	}
	if err := mgr.AddHealthzCheck("healthz", healthz.Ping); err != nil {
		os.Exit(1)
	}
	if err := mgr.AddReadyzCheck("storage", func(req *http.Request) error {
		_, _, err := store.Revision(req.Context())
		return err
	}); err != nil {
		os.Exit(1)
	}
	log.Info("starting controller manager", "storage", storageOpts.Driver)
	if err := mgr.Start(ctx); err != nil {
		log.Error(err, "running manager")
		os.Exit(1)
	}
}
