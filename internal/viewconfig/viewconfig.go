// Package viewconfig writes kubeconfigs whose contexts are Panorama's views
// through the host: every cluster, every cluster flat (namespaces
// <cluster>.<namespace>, for clients that key objects by namespace/name)
// and one cluster each, with a user's own host credentials.
package viewconfig

import (
	"fmt"
	"strings"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	searchv1alpha1 "github.com/panorama-io/panorama/apis/search/v1alpha1"
)

// Views are the contexts of Panorama's views through one host.
type Views struct {
	// Host is the host as a kubeconfig names it. Every view's server is
	// Host.Server + searchv1alpha1.ViewPath; the rest (CA, TLS server name,
	// proxy) is kept, since the host answers every view.
	Host *clientcmdapi.Cluster
	// User and AuthInfo are the credentials of every context, kept as they
	// are: client certificates, token, exec plugin, all the same on
	// Panorama's paths as on the host's.
	User     string
	AuthInfo *clientcmdapi.AuthInfo
	// All names the context of every cluster, Flat that of the flat view
	// ("" for none); Prefix + a cluster's name names that cluster's context.
	All, Flat, Prefix string
	Clusters          []string
}

// AddTo adds the views to kc, replacing entries of the same names, and
// returns the names of the contexts added, All first. Two views of one
// name (a cluster "flat" under prefix "panorama-" and Flat
// "panorama-flat") are an error, and nothing is added.
func (v Views) AddTo(kc *clientcmdapi.Config) ([]string, error) {
	views := map[string]string{v.All: ""}
	names := []string{v.All}
	if v.Flat != "" {
		views[v.Flat], names = searchv1alpha1.FlatClusters, append(names, v.Flat)
	}
	for _, c := range v.Clusters {
		views[v.Prefix+c], names = c, append(names, v.Prefix+c)
	}
	if len(views) < len(names) {
		return nil, fmt.Errorf("two views would share a context name among %v: choose other names", names)
	}
	kc.AuthInfos[v.User] = v.AuthInfo.DeepCopy()
	for _, name := range names {
		c := v.Host.DeepCopy()
		c.Server = strings.TrimSuffix(v.Host.Server, "/") + searchv1alpha1.ViewPath(views[name])
		kc.Clusters[name] = c
		kc.Contexts[name] = &clientcmdapi.Context{Cluster: name, AuthInfo: v.User}
	}
	return names, nil
}

// Write writes a kubeconfig with the credentials of cfg and one
// context per view of Panorama through the host: "all" (the current one),
// "flat", one per cluster name, and "host" for the host itself
// (collections).
func Write(path string, cfg *rest.Config, user string, clusters ...string) error {
	kc := clientcmdapi.NewConfig()
	host := &clientcmdapi.Cluster{Server: cfg.Host, CertificateAuthorityData: cfg.CAData}
	_, err := Views{
		Host: host, User: user, All: "all", Flat: "flat", Clusters: clusters,
		AuthInfo: &clientcmdapi.AuthInfo{ClientCertificateData: cfg.CertData, ClientKeyData: cfg.KeyData, Token: cfg.BearerToken},
	}.AddTo(kc)
	if err != nil {
		return err
	}
	kc.Clusters["host"] = host
	kc.Contexts["host"] = &clientcmdapi.Context{Cluster: "host", AuthInfo: user}
	kc.CurrentContext = "all"
	return clientcmd.WriteToFile(*kc, path)
}
