package testenv

import (
	"fmt"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

// APIServiceManifest registers a Panorama API server listening on
// localhost:port with the host: an ExternalName Service (endpoints may not
// point at loopback) and the APIService.
func APIServiceManifest(port int) string {
	return fmt.Sprintf(`apiVersion: v1
kind: Namespace
metadata:
  name: panorama-system
---
apiVersion: v1
kind: Service
metadata:
  name: panorama-apiserver
  namespace: panorama-system
spec:
  type: ExternalName
  externalName: localhost
  ports:
  - port: %d
---
apiVersion: apiregistration.k8s.io/v1
kind: APIService
metadata:
  name: v1alpha1.search.panorama.io
spec:
  group: search.panorama.io
  version: v1alpha1
  groupPriorityMinimum: 1000
  versionPriority: 100
  insecureSkipTLSVerify: true
  service:
    namespace: panorama-system
    name: panorama-apiserver
    port: %d
`, port, port)
}

// WriteViewKubeconfig writes a kubeconfig with the credentials of cfg and one
// context per view of Panorama through the host: "all" (the current one),
// one per cluster name, and "host" for the host itself (collections).
func WriteViewKubeconfig(path string, cfg *rest.Config, user, prefix string, clusters ...string) error {
	kc := clientcmdapi.NewConfig()
	kc.AuthInfos[user] = &clientcmdapi.AuthInfo{ClientCertificateData: cfg.CertData, ClientKeyData: cfg.KeyData, Token: cfg.BearerToken}
	views := map[string]string{"all": prefix, "host": ""}
	for _, c := range clusters {
		views[c] = prefix + "/clusters/" + c
	}
	for name, urlPath := range views {
		kc.Clusters[name] = &clientcmdapi.Cluster{Server: cfg.Host + urlPath, CertificateAuthorityData: cfg.CAData}
		kc.Contexts[name] = &clientcmdapi.Context{Cluster: name, AuthInfo: user}
	}
	kc.CurrentContext = "all"
	return clientcmd.WriteToFile(*kc, path)
}
