package viewconfig

import (
	"context"
	"fmt"
	"slices"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	clusterv1alpha1 "github.com/panorama-io/panorama/apis/cluster/v1alpha1"
)

// FromKubeconfig returns the views of the host that a context of the
// kubeconfigs of rules names (the current one for ""), with that context's
// user as it is written there, and a client config of the host as that
// user. File paths in the user and cluster come out absolute, as clientcmd
// resolves them while loading, so the kubeconfig written works from
// anywhere.
func FromKubeconfig(rules *clientcmd.ClientConfigLoadingRules, contextName string) (Views, *rest.Config, error) {
	raw, err := rules.Load()
	if err != nil {
		return Views{}, nil, err
	}
	if contextName == "" {
		contextName = raw.CurrentContext
	}
	kctx, ok := raw.Contexts[contextName]
	if !ok {
		return Views{}, nil, fmt.Errorf("no context %q in the kubeconfig", contextName)
	}
	host, ok := raw.Clusters[kctx.Cluster]
	if !ok {
		return Views{}, nil, fmt.Errorf("context %q names cluster %q, which the kubeconfig lacks", contextName, kctx.Cluster)
	}
	user, ok := raw.AuthInfos[kctx.AuthInfo]
	if !ok {
		return Views{}, nil, fmt.Errorf("context %q names user %q, which the kubeconfig lacks", contextName, kctx.AuthInfo)
	}
	cfg, err := clientcmd.NewNonInteractiveClientConfig(*raw, contextName, &clientcmd.ConfigOverrides{}, rules).ClientConfig()
	if err != nil {
		return Views{}, nil, err
	}
	return Views{Host: host, User: kctx.AuthInfo, AuthInfo: user}, cfg, nil
}

// ReadyClusters lists the host's Clusters and returns the names of those
// whose Ready condition is True, sorted, and why each other one is left
// out.
func ReadyClusters(ctx context.Context, host *rest.Config) (ready []string, notReady map[string]string, err error) {
	// The dynamic client: Panorama generates no typed clientset, and
	// controller-runtime's client is the controllers' own.
	dyn, err := dynamic.NewForConfig(host)
	if err != nil {
		return nil, nil, err
	}
	u, err := dyn.Resource(clusterv1alpha1.GroupVersion.WithResource("clusters")).List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, nil, fmt.Errorf("listing Clusters of the host: %w", err)
	}
	var list clusterv1alpha1.ClusterList
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.UnstructuredContent(), &list); err != nil {
		return nil, nil, fmt.Errorf("decoding the host's Clusters: %w", err)
	}
	notReady = map[string]string{}
	for _, cl := range list.Items {
		cond := meta.FindStatusCondition(cl.Status.Conditions, clusterv1alpha1.ConditionReady)
		switch {
		case cond == nil:
			notReady[cl.Name] = "no Ready condition yet"
		case cond.Status != "True":
			notReady[cl.Name] = fmt.Sprintf("Ready is %s (%s): %s", cond.Status, cond.Reason, cond.Message)
		default:
			ready = append(ready, cl.Name)
		}
	}
	slices.Sort(ready)
	return ready, notReady, nil
}
