package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/spf13/pflag"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"github.com/panorama-io/panorama/internal/viewconfig"
)

// kubeconfig is `panorama kubeconfig`: a kubeconfig with a context for
// every cluster, one for every cluster flat and one per Ready Cluster of
// the host, each with the user's own host credentials, so that RBAC on the
// host decides what they read through Panorama.
func kubeconfig(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := pflag.NewFlagSet("panorama kubeconfig", pflag.ContinueOnError)
	fs.SetOutput(stderr)
	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	fs.StringVar(&rules.ExplicitPath, "kubeconfig", "", "Kubeconfig of the host (default: $KUBECONFIG, else ~/.kube/config).")
	contextName := fs.String("context", "", "Context of the host whose server and user the views take (default: the current one).")
	output := fs.StringP("output", "o", "-", "File to write, - for standard output.")
	merge := fs.Bool("merge", false, "Merge into the --output file: entries of the same names are replaced, the others and the current context kept.")
	all := fs.String("all-context", "panorama", "Name of the context of every cluster, and of the user entry.")
	flat := fs.String("flat-context", "", "Name of the context of the flat view: every cluster, namespaces named <cluster>.<namespace>, for k9s, informers and other clients that key objects by namespace/name (default: the --all-context name + \"-flat\"; \"\" for none).")
	prefix := fs.String("prefix", "panorama-", "Prefix of each cluster's context name.")
	clusters := fs.StringSlice("clusters", nil, "Write these clusters' contexts instead of reading the host's Ready Clusters (for users who may not list Clusters).")
	fs.Usage = func() {
		fmt.Fprintf(stderr, "Usage: panorama kubeconfig [flags]\n\nWrites a kubeconfig whose contexts are Panorama's views through the host, with your own host credentials.\n\n%s", fs.FlagUsages())
	}
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *merge && (*output == "-" || *output == "") {
		return errors.New("--merge needs --output FILE")
	}
	views, host, err := viewconfig.FromKubeconfig(rules, *contextName)
	if err != nil {
		return err
	}
	if !fs.Changed("flat-context") {
		*flat = *all + "-flat"
	}
	views.User, views.All, views.Flat, views.Prefix, views.Clusters = *all, *all, *flat, *prefix, *clusters
	if !fs.Changed("clusters") {
		ready, notReady, err := viewconfig.ReadyClusters(ctx, host)
		if err != nil {
			return fmt.Errorf("%w (without the right to list Clusters, name them with --clusters)", err)
		}
		for name, why := range notReady {
			fmt.Fprintf(stderr, "left out cluster %s: %s\n", name, why)
		}
		views.Clusters = ready
	}

	kc := clientcmdapi.NewConfig()
	if *merge {
		if kc, err = clientcmd.LoadFromFile(*output); errors.Is(err, os.ErrNotExist) {
			kc = clientcmdapi.NewConfig()
		} else if err != nil {
			return err
		}
	}
	names, err := views.AddTo(kc)
	if err != nil {
		return fmt.Errorf("%w (--all-context, --flat-context, --prefix)", err)
	}
	if kc.CurrentContext == "" {
		kc.CurrentContext = views.All
	}
	fmt.Fprintf(stderr, "contexts: %v\n", names)
	if *output == "-" || *output == "" {
		out, err := clientcmd.Write(*kc)
		if err != nil {
			return err
		}
		_, err = stdout.Write(out)
		return err
	}
	return clientcmd.WriteToFile(*kc, *output)
}
