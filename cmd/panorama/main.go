// Command panorama runs the controller manager and the API server in one
// process over one store: embedded SQLite by default. The local demo with
// its own clusters is cmd/panorama-demo (`make run`).
package main

import (
	"os"

	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/klog/v2"
	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/panorama-io/panorama/internal/allinone"
)

func main() {
	opts := allinone.ParseFlags(nil)
	ctx := ctrl.SetupSignalHandler()

	host, err := clientcmd.BuildConfigFromFlags("", opts.Server.Recommended.CoreAPI.CoreAPIKubeconfigPath)
	if err != nil {
		fail("reading the host kubeconfig (--kubeconfig)", err)
	}
	if err := allinone.Run(ctx, opts, host); err != nil {
		fail("running", err)
	}
}

func fail(what string, err error) {
	klog.ErrorS(err, what)
	klog.Flush()
	os.Exit(1)
}
