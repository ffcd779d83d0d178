package storage

import "k8s.io/apimachinery/pkg/runtime/schema"

// SecretsResource is core/v1 Secrets, whose data a Cluster keeps only when
// it says so (secretData: Keep).
var SecretsResource = schema.GroupVersionResource{Version: "v1", Resource: "secrets"}

// LastAppliedAnnotation is kubectl's copy of the object it applied: a
// Secret's holds the Secret's data.
const LastAppliedAnnotation = "kubectl.kubernetes.io/last-applied-configuration"

// StripSecretData removes from a Secret what holds its contents: data,
// stringData and the last-applied annotation. It reports whether it
// removed any.
func StripSecretData(obj map[string]any) bool {
	_, data := obj["data"]
	_, stringData := obj["stringData"]
	delete(obj, "data")
	delete(obj, "stringData")
	meta, _ := obj["metadata"].(map[string]any)
	annotations, _ := meta["annotations"].(map[string]any)
	_, applied := annotations[LastAppliedAnnotation]
	if applied {
		delete(annotations, LastAppliedAnnotation)
		if len(annotations) == 0 {
			delete(meta, "annotations")
		}
	}
	return data || stringData || applied
}
