// Command panorama runs the controller manager and the API server in one
// process over one store: embedded SQLite by default. The local demo with
// its own clusters is cmd/panorama-demo (`make run`).
//
//	panorama [serve] [flags]    serve (the default, as the chart runs it)
//	panorama kubeconfig [flags] write a kubeconfig of Panorama's views
//	panorama mcp [flags]        an MCP server for AI agents over the views
package main

import (
	"errors"
	"fmt"
	"os"

	"github.com/spf13/pflag"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/klog/v2"
	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/panorama-io/panorama/internal/allinone"
	"github.com/panorama-io/panorama/internal/containermemory"
)

func main() {
	if len(os.Args) > 1 {
		switch os.Args[1] {
		case "kubeconfig":
			if err := kubeconfig(ctrl.SetupSignalHandler(), os.Args[2:], os.Stdout, os.Stderr); err != nil && !errors.Is(err, pflag.ErrHelp) {
				fmt.Fprintln(os.Stderr, "error:", err)
				os.Exit(1)
			}
			return
		case "mcp":
			if err := mcpCommand(ctrl.SetupSignalHandler(), os.Args[2:], os.Stderr); err != nil && !errors.Is(err, pflag.ErrHelp) {
				fmt.Fprintln(os.Stderr, "error:", err)
				os.Exit(1)
			}
			return
		case "serve":
			os.Args = append(os.Args[:1], os.Args[2:]...)
		}
	}
	serve()
}

func serve() {
	opts := allinone.ParseFlags(nil)
	containermemory.FitGo(containermemory.CgroupRoot)
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
