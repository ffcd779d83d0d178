package v1alpha1

import (
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Condition types of a Cluster.
const (
	// ConditionReady says whether the member's API server answers /readyz.
	ConditionReady = "Ready"
	// ConditionSynced says whether every selected resource is synced.
	ConditionSynced = "Synced"
	// ConditionTLSVerified is False while spec.insecureSkipTLSVerify turns
	// off verification of the member's certificate.
	ConditionTLSVerified = "TLSVerified"
)

// SecretDataPolicy says whether synced Secrets keep their data.
// +kubebuilder:validation:Enum=Drop;Keep
type SecretDataPolicy string

const (
	// SecretDataDrop stores Secrets without data and stringData.
	SecretDataDrop SecretDataPolicy = "Drop"
	// SecretDataKeep stores Secrets whole: every reader of the API server
	// allowed to see them then sees their contents.
	SecretDataKeep SecretDataPolicy = "Keep"
)

// Sync states of one resource of a Cluster.
const (
	SyncStatePending = "Pending"
	SyncStateSyncing = "Syncing"
	SyncStateSynced  = "Synced"
	SyncStateError   = "Error"
	SyncStatePaused  = "Paused"
)

// Annotations and key that make a Secret of the controller manager's
// namespace a member credential. Creating a Cluster grants no Secret: only
// who may write the Secret binds it, to the Clusters it names and, for a
// token, to the one server it is for.
const (
	// AnnotationCredentialClusters lists, comma-separated, the names of the
	// Clusters that may use the Secret as their kubeconfig or token. Any
	// other Cluster naming it is refused before any request.
	AnnotationCredentialClusters = "cluster.panorama.io/clusters"
	// AnnotationCredentialServer is, on a Secret holding a bearer token, the
	// URL of the one API server the token is for: a Cluster using the token
	// must have that spec.apiServer (a trailing slash aside). A kubeconfig
	// names its server itself.
	AnnotationCredentialServer = "cluster.panorama.io/server"
	// CredentialCAKey is the key of a token Secret that holds the member's
	// CA bundle. When present it pins the member's certificate: the
	// Cluster's caData is not used and its insecureSkipTLSVerify refused,
	// as with a kubeconfig carrying certificate-authority-data.
	CredentialCAKey = "ca.crt"
)

// CredentialBindsCluster reports whether a Secret annotated so binds the
// Cluster named cluster (AnnotationCredentialClusters).
func CredentialBindsCluster(annotations map[string]string, cluster string) bool {
	for name := range strings.SplitSeq(annotations[AnnotationCredentialClusters], ",") {
		if strings.TrimSpace(name) == cluster {
			return true
		}
	}
	return false
}

// CredentialBindsServer reports whether a Secret annotated so holds a
// token for the API server at url (AnnotationCredentialServer).
func CredentialBindsServer(annotations map[string]string, url string) bool {
	server, ok := annotations[AnnotationCredentialServer]
	return ok && url != "" && strings.TrimRight(server, "/") == strings.TrimRight(url, "/")
}

// SecretKeyRef names one key of a Secret in the host cluster.
type SecretKeyRef struct {
	// Namespace of the Secret: the controller manager's own
	// (--secret-namespace), where the Secret must name this Cluster in its
	// annotation cluster.panorama.io/clusters (and, for a token, the
	// server in cluster.panorama.io/server); or, for a Cluster API
	// kubeconfig, a namespace the admin granted
	// (--cluster-api-secret-namespaces).
	// +kubebuilder:validation:MinLength=1
	Namespace string `json:"namespace"`
	// Name of the Secret.
	// +kubebuilder:validation:MinLength=1
	Name string `json:"name"`
	// Key in the Secret's data. Defaults to "token" for tokens and
	// "kubeconfig" for kubeconfigs.
	// +optional
	Key string `json:"key,omitempty"`
}

// GroupResources selects resources of one API group.
type GroupResources struct {
	// Group is the API group, "" for the core group, "*" for every group.
	Group string `json:"group"`
	// Versions to sync; empty or ["*"] means the group's preferred version.
	// +optional
	Versions []string `json:"versions,omitempty"`
	// Resources are plural resource names; "*" means every resource of the
	// group that can be listed and watched, except core Secrets, which are
	// synced only when named.
	// +kubebuilder:validation:MinItems=1
	Resources []string `json:"resources"`
}

// ClusterSpec says how to reach a member cluster and what to sync from it.
// +kubebuilder:validation:XValidation:rule="has(self.apiServer) || has(self.kubeconfigSecretRef)",message="one of apiServer or kubeconfigSecretRef is required"
type ClusterSpec struct {
	// APIServer is the member's API server URL.
	// +kubebuilder:validation:Pattern=`^https?://`
	// +optional
	APIServer string `json:"apiServer,omitempty"`
	// CAData is the PEM bundle that signs the member's serving certificate,
	// unless the token Secret pins one (key ca.crt).
	// +optional
	CAData []byte `json:"caData,omitempty"`
	// TokenSecretRef names a bearer token for the member, in a Secret
	// annotated cluster.panorama.io/clusters (naming this Cluster) and
	// cluster.panorama.io/server (naming apiServer).
	// +optional
	TokenSecretRef *SecretKeyRef `json:"tokenSecretRef,omitempty"`
	// KubeconfigSecretRef names a kubeconfig for the member; its current
	// context is used. It wins over apiServer, caData and tokenSecretRef.
	// The Secret must be annotated cluster.panorama.io/clusters naming this
	// Cluster, unless it is a Cluster API kubeconfig of a namespace the
	// admin granted.
	// +optional
	KubeconfigSecretRef *SecretKeyRef `json:"kubeconfigSecretRef,omitempty"`
	// InsecureSkipTLSVerify skips verification of the member's certificate:
	// only this field turns it off, not a kubeconfig. Refused when the
	// credential Secret pins the member's CA (a kubeconfig's
	// certificate-authority-data, a token Secret's ca.crt).
	// +optional
	InsecureSkipTLSVerify bool `json:"insecureSkipTLSVerify,omitempty"`
	// SyncResources selects the resources to sync.
	// +optional
	SyncResources []GroupResources `json:"syncResources,omitempty"`
	// SyncAllCustomResources syncs every resource served by a CRD of the member.
	// +optional
	SyncAllCustomResources bool `json:"syncAllCustomResources,omitempty"`
	// SyncResourcesRef names a ClusterSyncResources whose resources are synced
	// too.
	// +optional
	SyncResourcesRef string `json:"syncResourcesRef,omitempty"`
	// SecretData says whether synced Secrets keep data and stringData:
	// Drop (the default) or Keep.
	// +kubebuilder:default=Drop
	// +optional
	SecretData SecretDataPolicy `json:"secretData,omitempty"`
	// EventRetention is how long after it was last seen (lastTimestamp,
	// eventTime, series.lastObservedTime) a synced Event, core/v1 or
	// events.k8s.io, is kept: older Events are not stored, and stored ones
	// are deleted as they age past it. Unset, the controller manager's
	// --event-retention (1h). Events are synced only when syncResources
	// selects them (group "" or events.k8s.io, resource events, or "*").
	// +kubebuilder:validation:XValidation:rule="duration(self) > duration('0s')",message="must be positive"
	// +optional
	EventRetention *metav1.Duration `json:"eventRetention,omitempty"`
	// Paused stops syncing; stored objects stay as they are.
	// +optional
	Paused bool `json:"paused,omitempty"`
}

// ResourceSyncStatus is the sync state of one resource of a Cluster.
type ResourceSyncStatus struct {
	Group      string `json:"group"`
	Version    string `json:"version"`
	Resource   string `json:"resource"`
	Kind       string `json:"kind"`
	Namespaced bool   `json:"namespaced"`
	// State is Pending, Syncing, Synced, Error or Paused.
	State string `json:"state"`
	// Count of objects stored for this resource.
	// +optional
	Count int64 `json:"count,omitempty"`
	// LastError is the last error syncing the resource, at most 1 KiB.
	// +optional
	LastError string `json:"lastError,omitempty"`
	// RefusedCount counts member objects storage could not hold (NUL
	// characters, invalid UTF-8, overlong values): skipped, not retried.
	// +optional
	RefusedCount int64 `json:"refusedCount,omitempty"`
	// LastRefused names the latest refused objects and why, at most 1 KiB.
	// +optional
	LastRefused string `json:"lastRefused,omitempty"`
	// +optional
	LastSyncTime *metav1.Time `json:"lastSyncTime,omitempty"`
}

// ClusterStatus is the observed state of a member cluster.
type ClusterStatus struct {
	// Conditions Ready, Synced and TLSVerified. A message is at most 1 KiB
	// and never holds the body of a member's error answer: its status code
	// says what went wrong.
	// +optional
	// +listType=map
	// +listMapKey=type
	Conditions []metav1.Condition `json:"conditions,omitempty"`
	// Version is the member's Kubernetes version, at most 1 KiB.
	// +optional
	Version string `json:"version,omitempty"`
	// ObservedGeneration is the generation the status describes.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`
	// SyncedResourceCount is the number of resources being synced.
	// +optional
	SyncedResourceCount int32 `json:"syncedResourceCount,omitempty"`
	// SyncResources is the state of each synced resource.
	// +optional
	SyncResources []ResourceSyncStatus `json:"syncResources,omitempty"`
}

// Cluster is a member cluster whose objects Panorama syncs.
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:scope=Cluster,categories=panorama
// +kubebuilder:printcolumn:name="Ready",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].status`
// +kubebuilder:printcolumn:name="Version",type=string,JSONPath=`.status.version`
// +kubebuilder:printcolumn:name="Resources",type=integer,JSONPath=`.status.syncedResourceCount`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
// +kubebuilder:validation:XValidation:rule="!(self.metadata.name in ['api', 'apis', 'clusters'])",message="api, apis and clusters name paths of the search API, not clusters"
type Cluster struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   ClusterSpec   `json:"spec"`
	Status ClusterStatus `json:"status,omitempty"`
}

// ClusterList is a list of Clusters.
// +kubebuilder:object:root=true
type ClusterList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []Cluster `json:"items"`
}

// ClusterSyncResourcesSpec is a shared list of resources to sync.
type ClusterSyncResourcesSpec struct {
	// +kubebuilder:validation:MinItems=1
	SyncResources []GroupResources `json:"syncResources"`
}

// ClusterSyncResources is a resource selection that Clusters reference by
// spec.syncResourcesRef.
// +kubebuilder:object:root=true
// +kubebuilder:resource:scope=Cluster,categories=panorama
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type ClusterSyncResources struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec ClusterSyncResourcesSpec `json:"spec"`
}

// ClusterSyncResourcesList is a list of ClusterSyncResources.
// +kubebuilder:object:root=true
type ClusterSyncResourcesList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []ClusterSyncResources `json:"items"`
}
