// Command apiserver serves the synced objects of every member cluster
// through the Kubernetes API, as the aggregated API search.panorama.io.
package main

import (
	"flag"
	"os"

	"github.com/spf13/pflag"
	genericapiserver "k8s.io/apiserver/pkg/server"
	"k8s.io/klog/v2"

	"github.com/panorama-io/panorama/apiserver"
	"github.com/panorama-io/panorama/storage/sqlstore"
)

func main() {
	opts := apiserver.NewOptions()
	opts.AddFlags(pflag.CommandLine)
	klog.InitFlags(nil)
	pflag.CommandLine.AddGoFlagSet(flag.CommandLine)
	pflag.Parse()
	ctx := genericapiserver.SetupSignalContext()
	store, err := sqlstore.Open(ctx, opts.Storage)
	if err != nil {
		klog.ErrorS(err, "opening storage")
		os.Exit(1)
	}
	defer store.Close()
	srv, err := opts.New(store)
	if err != nil {
		klog.ErrorS(err, "configuring the server")
		os.Exit(1)
	}
	if err := srv.Run(ctx); err != nil {
		klog.ErrorS(err, "serving")
		os.Exit(1)
	}
}
