// Command agent runs in a member cluster the hub cannot reach: it dials out
// to the hub's tunnel endpoint and serves the hub's reads of the member
// through that connection, with its own read-only identity (package agent).
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"

	"github.com/spf13/pflag"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/component-base/logs"
	logsapi "k8s.io/component-base/logs/api/v1"
	_ "k8s.io/component-base/logs/json/register" // --logging-format=json
	"k8s.io/klog/v2"

	"github.com/panorama-io/panorama/agent"
	"github.com/panorama-io/panorama/internal/containermemory"
)

func main() {
	var (
		opts       agent.Options
		kubeconfig string
		logOpts    = logs.NewOptions()
	)
	fs := pflag.CommandLine
	fs.StringVar(&opts.HubURL, "hub-url", "", "URL of the hub's tunnel endpoint, https://host:port (the Service or Ingress the Panorama chart exposes).")
	fs.StringVar(&opts.Cluster, "cluster", "", "Name of this member's Cluster in the hub.")
	fs.StringVar(&opts.TokenFile, "token-file", "/var/run/secrets/panorama/token", "File of the host ServiceAccount token presented to the hub, read at each connection.")
	fs.StringVar(&opts.CAFile, "hub-ca-file", "", "File of the CA certificates (PEM) the hub's certificate is verified against, read at each connection; empty: the system's.")
	fs.StringVar(&kubeconfig, "kubeconfig", "", "Kubeconfig of the member's API server; empty: the pod's ServiceAccount (in-cluster).")
	fs.BoolVar(&opts.ForwardSecrets, "forward-secrets", false, "Let the hub read the member's Secrets (for Clusters that sync them); without it they never leave the member.")
	fs.StringVar(&opts.HealthAddr, "health-addr", ":8081", "Address of /healthz, /readyz (ready while connected to the hub) and /metrics; empty: none.")
	logsapi.AddFlags(logOpts, fs)
	pflag.Parse()
	// No feature gate: the logging features are at their defaults.
	if err := logsapi.ValidateAndApply(logOpts, nil); err != nil {
		fail("invalid flags", err)
	}
	containermemory.FitGo(containermemory.CgroupRoot, 0)
	member, err := memberConfig(kubeconfig)
	if err != nil {
		fail("configuring access to the member (--kubeconfig)", err)
	}
	opts.Member = member
	if err := opts.Validate(); err != nil {
		fail("invalid flags", err)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	klog.InfoS("starting agent", "hub", opts.HubURL, "cluster", opts.Cluster)
	if err := agent.Run(ctx, opts); err != nil {
		fail("running the agent", err)
	}
}

// memberConfig is the kubeconfig's configuration, or the pod's.
func memberConfig(kubeconfig string) (*rest.Config, error) {
	if kubeconfig == "" {
		return rest.InClusterConfig()
	}
	return clientcmd.BuildConfigFromFlags("", kubeconfig)
}

// fail logs err and ends the process; deferred calls do not run.
func fail(what string, err error) {
	klog.ErrorS(err, what)
	klog.Flush()
	os.Exit(1)
}
