// Package kubectlplugin is `kubectl panorama`: search, count, history and
// diff over Panorama's views from the command line, printed as kubectl
// prints (server-side Tables, -o json|yaml|name|jsonpath|wide).
//
// It is a client of the views through the host with the user's own
// kubeconfig (kubectl's --kubeconfig, --context, --as, ...), never of the
// database: the host authenticates each request and Panorama authorizes it
// as kubectl's, so the plugin shows exactly what its user may read.
package kubectlplugin

import (
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/cli-runtime/pkg/genericiooptions"

	"github.com/panorama-io/panorama/internal/viewclient"
)

// Name is the plugin's executable: kubectl runs `kubectl-panorama ARGS`
// for `kubectl panorama ARGS`.
const Name = "kubectl-panorama"

// Commands are the commands of the plugin, which cmd/panorama hands to
// NewCommand rather than serving.
var Commands = []string{"search", "count", "history", "diff", "completion", "help",
	cobra.ShellCompRequestCmd, cobra.ShellCompNoDescRequestCmd}

// options are what every command shares: the user's kubeconfig and the
// streams.
type options struct {
	config  *genericclioptions.ConfigFlags
	streams genericiooptions.IOStreams
	client  *viewclient.Client
}

// views is the client of the views, made once the flags are parsed.
func (o *options) views() (*viewclient.Client, error) {
	if o.client != nil {
		return o.client, nil
	}
	cfg, err := o.config.ToRESTConfig()
	if err != nil {
		return nil, err
	}
	o.client, err = viewclient.New(cfg)
	return o.client, err
}

// namespace is the namespace to list in: -n, else the context's, else
// "default"; "" for every namespace (-A).
func (o *options) namespace(allNamespaces bool) (string, error) {
	if allNamespaces {
		return "", nil
	}
	ns, _, err := o.config.ToRawKubeConfigLoader().Namespace()
	return ns, err
}

// warn prints the warnings of an answer as kubectl prints the server's.
func (o *options) warn(warnings []string) {
	for _, w := range warnings {
		fmt.Fprintf(o.streams.ErrOut, "Warning: %s\n", w)
	}
}

// NewCommand is `kubectl panorama`, with extra commands beside the
// plugin's own (cmd/panorama's kubeconfig and mcp).
func NewCommand(streams genericiooptions.IOStreams, extra ...*cobra.Command) *cobra.Command {
	o := &options{config: genericclioptions.NewConfigFlags(true), streams: streams}
	root := &cobra.Command{
		Use:   "panorama",
		Short: "Search, count and read the history of the objects of many clusters through Panorama",
		Long: "kubectl panorama reads Panorama's views through the host with your own kubeconfig:\n" +
			"search and count objects across clusters, list an object's versions and diff two of them.",
		Annotations:   map[string]string{cobra.CommandDisplayNameAnnotation: "kubectl panorama"},
		SilenceErrors: true,
		SilenceUsage:  true,
	}
	root.SetIn(streams.In)
	root.SetOut(streams.Out)
	root.SetErr(streams.ErrOut)
	o.config.AddFlags(root.PersistentFlags())
	root.AddCommand(newSearchCommand(o), newCountCommand(o), newHistoryCommand(o), newDiffCommand(o))
	root.AddCommand(extra...)
	return root
}

// Exit prints a command's err to w, as printError does, and returns the
// status to exit with, as kubectl's: 1, but for diff's, which exits 1 when
// it found differences, printing nothing more, and 2 when it failed.
func Exit(w io.Writer, err error) int {
	var failed diffFailed
	switch {
	case errors.Is(err, errDiffers):
		return 1
	case errors.As(err, &failed):
		printError(w, failed.error)
		return 2
	}
	printError(w, err)
	return 1
}

// printError prints err as kubectl does: a server's Status as "Error from
// server (Reason): message", anything else, an argument refused before
// any request among them, as "error: ...".
func printError(w io.Writer, err error) {
	var input *viewclient.InputError
	var status apierrors.APIStatus
	if errors.As(err, &input) {
		err = errors.New(input.Status().Message)
	} else if errors.As(err, &status) && status.Status().Message != "" {
		s := status.Status()
		if s.Reason == "" {
			fmt.Fprintf(w, "Error from server: %s\n", s.Message)
			return
		}
		fmt.Fprintf(w, "Error from server (%s): %s\n", s.Reason, s.Message)
		return
	}
	msg := err.Error()
	if !strings.HasPrefix(msg, "error: ") {
		msg = "error: " + msg
	}
	fmt.Fprintln(w, msg)
}
