// Package allinone runs the controller manager and the API server in one
// process over one store: what `panorama` (embedded SQLite by default) and
// the local demo both start.
package allinone

import (
	"context"
	"errors"
	"os"

	"github.com/spf13/pflag"
	"k8s.io/client-go/rest"
	"k8s.io/component-base/logs"
	logsapi "k8s.io/component-base/logs/api/v1"
	_ "k8s.io/component-base/logs/json/register" // --logging-format=json
	"k8s.io/component-base/metrics/legacyregistry"
	"k8s.io/klog/v2"
	ctrl "sigs.k8s.io/controller-runtime"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/panorama-io/panorama/apiserver"
	"github.com/panorama-io/panorama/apiserver/watchcache"
	"github.com/panorama-io/panorama/controllers"
	"github.com/panorama-io/panorama/internal/containermemory"
	"github.com/panorama-io/panorama/storage/sqlstore"
)

// The API server's /metrics is the process's: it serves the controller
// manager's metrics too, which controller-runtime keeps in a registry of its
// own (its metrics server is off here), and storage's.
func init() {
	legacyregistry.Registerer().MustRegister(append(controllers.Collectors(), sqlstore.Collectors()...)...)
}

// Options are both components' flags and the logging flags.
type Options struct {
	Server      *apiserver.Options
	Storage     sqlstore.Options
	Controllers controllers.Options
	Logs        *logs.Options
}

// NewOptions returns the defaults.
func NewOptions() *Options { return newOptions(containermemory.CgroupRoot) }

// newOptions are the defaults in a container whose cgroup file system is
// at root.
func newOptions(root string) *Options {
	o := &Options{Server: apiserver.NewOptions(), Logs: logs.NewOptions()}
	o.Server.WatchCache.MemoryBudget = watchcache.SharedMemoryBudget(root)
	return o
}

// AddFlags binds every flag of both components and the logging flags.
func (o *Options) AddFlags(fs *pflag.FlagSet) {
	o.Server.AddFlags(fs)
	o.Storage.AddFlags(fs)
	o.Controllers.AddFlags(fs)
	logsapi.AddFlags(o.Logs, fs)
}

// ParseFlags binds the flags to the command line, with extra ones of the
// caller, parses, completes and validates them and applies the logging
// flags; a flag in error ends the process, as flag parsing does.
func ParseFlags(extra func(*pflag.FlagSet)) *Options {
	o := NewOptions()
	fs := pflag.CommandLine
	o.AddFlags(fs)
	if extra != nil {
		extra(fs)
	}
	pflag.Parse()
	o.Complete()
	// Logging is applied first, so that an error is logged as asked; no
	// feature gate: the logging features are at their defaults.
	if err := errors.Join(logsapi.ValidateAndApply(o.Logs, nil), o.Validate()); err != nil {
		klog.ErrorS(err, "invalid flags")
		klog.Flush()
		os.Exit(1)
	}
	ctrl.SetLogger(klog.NewKlogr())
	return o
}

// Complete fills defaults that depend on other flags.
func (o *Options) Complete() { o.Server.Complete() }

// Validate reports every flag in error.
func (o *Options) Validate() error {
	return errors.Join(o.Server.Validate(), o.Storage.Validate(), o.Controllers.Validate())
}

// Run serves until ctx ends or either component fails; the host is where
// Cluster objects live.
func Run(ctx context.Context, o *Options, host *rest.Config) error {
	store, err := sqlstore.Open(ctx, o.Storage)
	if err != nil {
		return errors.Join(errors.New("opening storage"), err)
	}
	defer store.Close()
	// Metrics are the API server's (/metrics on its secure port, see init).
	mgr, err := controllers.NewManager(host, store, o.Controllers, ctrl.Options{Metrics: metricsserver.Options{BindAddress: "0"}})
	if err != nil {
		return err
	}
	srv, err := o.Server.New(store)
	if err != nil {
		return errors.Join(errors.New("configuring the API server"), err)
	}
	// Either component failing stops the other, so the process never runs half.
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	errs := make(chan error, 2)
	go func() { errs <- mgr.Start(ctx) }()
	go func() { errs <- srv.Run(ctx) }()
	first := <-errs
	cancel()
	return errors.Join(first, <-errs)
}
