// Command panorama runs the controller manager and the API server in one
// process over one store: embedded SQLite by default. The local demo with
// its own clusters is cmd/panorama-demo (`make run`).
//
//	panorama [serve] [flags]    serve (the default, as the chart runs it)
//	panorama kubeconfig [flags] write a kubeconfig of Panorama's views
//	panorama mcp [flags]        an MCP server for AI agents over the views
//	panorama search|count|history|diff|completion ...
//	                            the kubectl plugin's commands
//
// Installed as kubectl-panorama, it is `kubectl panorama`: without a
// command it prints the plugin's help, and it refuses serve.
package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/klog/v2"
	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/panorama-io/panorama/internal/allinone"
	"github.com/panorama-io/panorama/internal/containermemory"
	"github.com/panorama-io/panorama/internal/kubectlplugin"
)

func main() {
	cmd, err := route(os.Args[0], os.Args[1:])
	exitOn(err)
	switch cmd {
	case "kubeconfig":
		exitOn(kubeconfig(ctrl.SetupSignalHandler(), os.Args[2:], os.Stdout, os.Stderr))
	case "mcp":
		exitOn(mcpCommand(ctrl.SetupSignalHandler(), os.Args[2:], os.Stderr))
	case "plugin":
		plugin(ctrl.SetupSignalHandler())
	default:
		if len(os.Args) > 1 && os.Args[1] == "serve" {
			os.Args = append(os.Args[:1], os.Args[2:]...)
		}
		serve()
	}
}

// route is what the binary run as argv0 with args does: "serve",
// "kubeconfig", "mcp" or "plugin" (the kubectl plugin's commands).
// Installed as kubectl-panorama it is a user's kubectl plugin, which has
// no business starting a server with the user's kubeconfig: serve is
// refused.
func route(argv0 string, args []string) (string, error) {
	asPlugin := strings.HasPrefix(filepath.Base(argv0), kubectlplugin.Name)
	if len(args) == 0 {
		if asPlugin {
			return "plugin", nil
		}
		return "serve", nil
	}
	switch args[0] {
	case "kubeconfig", "mcp":
		return args[0], nil
	case "serve":
		if asPlugin {
			return "", fmt.Errorf("%s does not serve: run the panorama binary, or the chart, to serve Panorama", kubectlplugin.Name)
		}
		return "serve", nil
	}
	if asPlugin || slices.Contains(kubectlplugin.Commands, args[0]) {
		return "plugin", nil
	}
	return "serve", nil
}

// plugin runs the kubectl plugin's commands, with kubeconfig and mcp
// beside them so that its help and completion name them.
func plugin(ctx context.Context) {
	passOn := func(name, short string, run func(args []string) error) *cobra.Command {
		return &cobra.Command{Use: name, Short: short, DisableFlagParsing: true,
			RunE: func(_ *cobra.Command, args []string) error { return run(args) }}
	}
	cmd := kubectlplugin.NewCommand(genericiooptions.IOStreams{In: os.Stdin, Out: os.Stdout, ErrOut: os.Stderr},
		passOn("kubeconfig", "Write a kubeconfig of Panorama's views", func(args []string) error {
			return kubeconfig(ctx, args, os.Stdout, os.Stderr)
		}),
		passOn("mcp", "Serve an MCP server for AI agents over Panorama's views", func(args []string) error {
			return mcpCommand(ctx, args, os.Stderr)
		}))
	if err := cmd.ExecuteContext(ctx); err != nil && !errors.Is(err, pflag.ErrHelp) {
		os.Exit(kubectlplugin.Exit(os.Stderr, err))
	}
}

// exitOn ends the process with status 1 when a command failed.
func exitOn(err error) {
	if err != nil && !errors.Is(err, pflag.ErrHelp) {
		fmt.Fprintln(os.Stderr, "error:", err)
		os.Exit(1)
	}
}

func serve() {
	opts := allinone.ParseFlags(nil)
	// The controller syncs beside the cache: its budget does not say what
	// the process needs (watchcache.SharedMemoryBudget).
	containermemory.FitGo(containermemory.CgroupRoot, 0)
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
