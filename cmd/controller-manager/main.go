// Command controller-manager reconciles Cluster objects and syncs every
// member cluster's selected resources into storage.
package main

import (
	"cmp"
	"crypto/tls"
	"flag"
	"net/http"
	"os"

	"github.com/spf13/pflag"
	"k8s.io/component-base/logs"
	logsapi "k8s.io/component-base/logs/api/v1"
	_ "k8s.io/component-base/logs/json/register" // --logging-format=json
	"k8s.io/klog/v2"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/healthz"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"
	"sigs.k8s.io/controller-runtime/pkg/metrics/filters"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/panorama-io/panorama/controllers"
	"github.com/panorama-io/panorama/internal/containermemory"
	"github.com/panorama-io/panorama/storage/sqlstore"
)

// dsnEnv holds the DSN when --storage-dsn is not given: unlike an argument,
// which every user of the node sees (ps), the environment of a process is
// its owner's to read, and the chart sets it from a Secret.
const dsnEnv = "PANORAMA_STORAGE_DSN"

// Storage's metrics are served with controller-runtime's.
func init() { ctrlmetrics.Registry.MustRegister(sqlstore.Collectors()...) }

func main() {
	var (
		probeAddr, leaderNamespace string
		leaderElect                bool
		metrics                    metricsOptions
		storageOpts                sqlstore.Options
		opts                       controllers.Options
		logOpts                    = logs.NewOptions()
	)
	fs := pflag.CommandLine
	metrics.AddFlags(fs)
	fs.StringVar(&probeAddr, "health-probe-bind-address", ":8081", "Address of the /healthz and /readyz endpoints.")
	fs.BoolVar(&leaderElect, "leader-elect", false, "Elect a leader, so that only one replica syncs (with --shards, compacts, indexes fields and imports, while all sync).")
	fs.StringVar(&leaderNamespace, "leader-election-namespace", "", "Namespace of the leader election lease and the sharding Leases (default: the pod's namespace).")
	opts.AddFlags(fs)
	storageOpts.AddFlags(fs)
	logsapi.AddFlags(logOpts, fs)
	fs.AddGoFlagSet(flag.CommandLine) // --kubeconfig
	pflag.Parse()
	// No feature gate: the logging features are at their defaults.
	if err := logsapi.ValidateAndApply(logOpts, nil); err != nil {
		fail("invalid flags", err)
	}
	ctrl.SetLogger(klog.NewKlogr())
	containermemory.FitGo(containermemory.CgroupRoot, 0)
	storageOpts.DSN = cmp.Or(storageOpts.DSN, os.Getenv(dsnEnv))
	opts.Sharding.Namespace = leaderNamespace
	if err := opts.Validate(); err != nil {
		fail("invalid flags", err)
	}

	ctx := ctrl.SetupSignalHandler()
	store, err := sqlstore.Open(ctx, storageOpts)
	if err != nil {
		fail("opening storage", err)
	}
	defer store.Close()

	mgr, err := controllers.NewManager(ctrl.GetConfigOrDie(), store, opts, ctrl.Options{
		Metrics:                 metrics.serverOptions(),
		HealthProbeBindAddress:  probeAddr,
		LeaderElection:          leaderElect,
		LeaderElectionID:        "panorama-controller-manager",
		LeaderElectionNamespace: leaderNamespace,
		// The next leader may start at once: every write is a transaction and
		// a resumed synchronizer rewrites nothing unchanged.
		LeaderElectionReleaseOnCancel: true,
	})
	if err != nil {
		fail("building the manager", err)
	}
	if err := mgr.AddHealthzCheck("healthz", healthz.Ping); err != nil {
		fail("adding the health check", err)
	}
	if err := mgr.AddReadyzCheck("storage", func(req *http.Request) error {
		_, _, err := store.Revision(req.Context())
		return err
	}); err != nil {
		fail("adding the readiness check", err)
	}
	klog.InfoS("starting controller manager", "storage", storageOpts.Driver)
	if err := mgr.Start(ctx); err != nil {
		fail("running manager", err)
	}
}

// fail logs err and ends the process; deferred calls do not run.
func fail(what string, err error) {
	klog.ErrorS(err, what)
	klog.Flush()
	os.Exit(1)
}

// metricsOptions are the flags of the /metrics endpoint, as kubebuilder
// scaffolds them.
type metricsOptions struct {
	bindAddress string
	secure      bool
	certDir     string
}

func (o *metricsOptions) AddFlags(fs *pflag.FlagSet) {
	fs.StringVar(&o.bindAddress, "metrics-bind-address", ":8443", "Address of the /metrics endpoint; 0 disables it.")
	fs.BoolVar(&o.secure, "metrics-secure", true, "Serve /metrics over HTTPS to callers the host authenticates (TokenReview) and authorizes "+
		"(SubjectAccessReview of get on the non-resource URL /metrics); false serves plain HTTP to anyone who reaches the port.")
	fs.StringVar(&o.certDir, "metrics-cert-path", "", "Folder of the serving certificate and key of /metrics (tls.crt, tls.key), reloaded when they change; "+
		"without it, a self-signed certificate for localhost.")
}

// serverOptions configure controller-runtime's metrics server.
func (o *metricsOptions) serverOptions() metricsserver.Options {
	m := metricsserver.Options{BindAddress: o.bindAddress, SecureServing: o.secure, CertDir: o.certDir}
	if o.secure {
		m.FilterProvider = filters.WithAuthenticationAndAuthorization
		// A scrape needs no HTTP/2; without it the endpoint is out of reach
		// of HTTP/2's stream floods (the Rapid Reset CVEs), as kubebuilder's.
		m.TLSOpts = []func(*tls.Config){func(c *tls.Config) { c.NextProtos = []string{"http/1.1"} }}
	}
	return m
}
