// Package viewconfig writes kubeconfigs whose contexts are Panorama's views
// through the host: every cluster, one cluster each, and the host itself.
package viewconfig

import (
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"github.com/panorama-io/panorama/apiserver"
)

// Write writes a kubeconfig with the credentials of cfg and one
// context per view of Panorama through the host: "all" (the current one),
// one per cluster name, and "host" for the host itself (collections).
func Write(path string, cfg *rest.Config, user string, clusters ...string) error {
	kc := clientcmdapi.NewConfig()
	kc.AuthInfos[user] = &clientcmdapi.AuthInfo{ClientCertificateData: cfg.CertData, ClientKeyData: cfg.KeyData, Token: cfg.BearerToken}
	views := map[string]string{"all": apiserver.ViewPath(""), "host": ""}
	for _, c := range clusters {
		views[c] = apiserver.ViewPath(c)
	}
	for name, urlPath := range views {
		kc.Clusters[name] = &clientcmdapi.Cluster{Server: cfg.Host + urlPath, CertificateAuthorityData: cfg.CAData}
		kc.Contexts[name] = &clientcmdapi.Context{Cluster: name, AuthInfo: user}
	}
	kc.CurrentContext = "all"
	return clientcmd.WriteToFile(*kc, path)
}
