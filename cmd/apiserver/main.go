// Command apiserver serves the synced objects of every member cluster
// through the Kubernetes API, as the aggregated API search.panorama.io.
package main

import (
	"cmp"
	"errors"
	"os"

	"github.com/spf13/pflag"
	genericapiserver "k8s.io/apiserver/pkg/server"
	"k8s.io/component-base/logs"
	logsapi "k8s.io/component-base/logs/api/v1"
	_ "k8s.io/component-base/logs/json/register" // --logging-format=json
	"k8s.io/component-base/metrics/legacyregistry"
	"k8s.io/klog/v2"

	"github.com/panorama-io/panorama/apiserver"
	"github.com/panorama-io/panorama/apiserver/watchcache"
	"github.com/panorama-io/panorama/internal/containermemory"
	"github.com/panorama-io/panorama/storage/sqlstore"
)

// The DSNs when --storage-dsn and --storage-read-dsn are not given: unlike
// an argument, which every user of the node sees (ps), the environment of a
// process is its owner's to read, and the chart sets it from Secrets.
const (
	dsnEnv     = "PANORAMA_STORAGE_DSN"
	readDSNEnv = "PANORAMA_STORAGE_READ_DSN"
)

// Storage's metrics are served with the API server's.
func init() { legacyregistry.Registerer().MustRegister(sqlstore.Collectors()...) }

func main() {
	opts := apiserver.NewOptions()
	var storageOpts sqlstore.Options
	logOpts := logs.NewOptions()
	opts.AddFlags(pflag.CommandLine)
	storageOpts.AddFlags(pflag.CommandLine)
	storageOpts.AddReadFlags(pflag.CommandLine)
	logsapi.AddFlags(logOpts, pflag.CommandLine)
	pflag.Parse()
	// No feature gate: the logging features are at their defaults.
	if err := logsapi.ValidateAndApply(logOpts, nil); err != nil {
		fail("invalid flags", err)
	}
	storageOpts.DSN = cmp.Or(storageOpts.DSN, os.Getenv(dsnEnv))
	storageOpts.ReadDSN = cmp.Or(storageOpts.ReadDSN, os.Getenv(readDSNEnv))
	opts.Complete()
	if err := errors.Join(opts.Validate(), storageOpts.Validate()); err != nil {
		fail("invalid flags", err)
	}
	containermemory.FitGo(containermemory.CgroupRoot, watchcache.GoMemoryLimit(opts.WatchCache.MemoryBudget))
	ctx := genericapiserver.SetupSignalContext()
	store, err := sqlstore.OpenForReads(ctx, storageOpts)
	if err != nil {
		fail("opening storage", err)
	}
	defer store.Close()
	srv, err := opts.New(store)
	if err != nil {
		fail("configuring the server", err)
	}
	if err := srv.Run(ctx); err != nil {
		fail("serving", err)
	}
}

func fail(what string, err error) {
	klog.ErrorS(err, what)
	klog.Flush()
	os.Exit(1)
}
