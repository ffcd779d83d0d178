package testenv

import (
	"fmt"
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
