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
	// AnnotationAgentCluster, on a ServiceAccount of the controller
	// manager's namespace, names the one Cluster (spec.agent) whose tunnel
	// the ServiceAccount's tokens for audience panorama.io/tunnel open: it
	// makes the ServiceAccount that Cluster's agent.
	AnnotationAgentCluster = "cluster.panorama.io/agent-for"
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

// GroupResources selects resources of one API group, and may narrow what
// is synced of them with a filter: namespaces, a label selector (both
// sent to the member with each list and watch, so that what they keep out
// never leaves it) and fields to drop before storage. A resource several
// entries select takes the filter of the first entry that names it, else
// of the first that selects it by "*".
// +kubebuilder:validation:XValidation:rule="!has(self.namespaces) || !has(self.excludeNamespaces)",message="namespaces and excludeNamespaces are mutually exclusive"
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
	// Namespaces, when set, syncs objects of these namespaces only: each
	// is listed and watched on its own. Cluster-scoped resources ignore it.
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=100
	// +kubebuilder:validation:items:MaxLength=63
	// +kubebuilder:validation:items:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`
	// +listType=set
	// +optional
	Namespaces []string `json:"namespaces,omitempty"`
	// ExcludeNamespaces syncs objects of every namespace but these: the
	// member is asked for them with the field selector
	// metadata.namespace!=<namespace>. Cluster-scoped resources ignore it.
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=100
	// +kubebuilder:validation:items:MaxLength=63
	// +kubebuilder:validation:items:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`
	// +listType=set
	// +optional
	ExcludeNamespaces []string `json:"excludeNamespaces,omitempty"`
	// LabelSelector syncs the objects whose labels it selects only: the
	// member is asked for them with the label selector of each list and
	// watch.
	// +optional
	LabelSelector *LabelSelector `json:"labelSelector,omitempty"`
	// DropFields are fields removed from each object before it is stored,
	// so they never reach the database. A path that does not exist in an
	// object drops nothing. A change of dropFields removes the resource's
	// objects from storage and syncs them afresh.
	// +kubebuilder:validation:MaxItems=32
	// +listType=set
	// +optional
	DropFields []FieldPath `json:"dropFields,omitempty"`
}

// LabelSelector selects objects by their labels: the fields and meaning
// of metav1.LabelSelector, bounded so that the host validates it as it
// stores it.
type LabelSelector struct {
	// MatchLabels selects objects with these labels.
	// +kubebuilder:validation:MaxProperties=32
	// +kubebuilder:validation:XValidation:rule="self.all(k, size(k) <= 317 && k.matches('^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\\\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*/)?[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?$'))",message="keys must be label keys: [prefix/]name"
	// +optional
	MatchLabels map[string]LabelValue `json:"matchLabels,omitempty"`
	// MatchExpressions select objects whose labels meet each of them.
	// +kubebuilder:validation:MaxItems=32
	// +listType=atomic
	// +optional
	MatchExpressions []LabelSelectorRequirement `json:"matchExpressions,omitempty"`
}

// LabelSelectorRequirement is a requirement on one label, as
// metav1.LabelSelectorRequirement.
// +kubebuilder:validation:XValidation:rule="self.operator in ['In', 'NotIn'] ? (has(self.values) && size(self.values) > 0) : (!has(self.values) || size(self.values) == 0)",message="In and NotIn take values, Exists and DoesNotExist none"
type LabelSelectorRequirement struct {
	// Key is the label's key.
	Key LabelKey `json:"key"`
	// Operator is In, NotIn, Exists or DoesNotExist.
	// +kubebuilder:validation:Enum=In;NotIn;Exists;DoesNotExist
	Operator metav1.LabelSelectorOperator `json:"operator"`
	// Values the label may (In) or may not (NotIn) have.
	// +kubebuilder:validation:MaxItems=64
	// +listType=atomic
	// +optional
	Values []LabelValue `json:"values,omitempty"`
}

// LabelKey is a label's key: [prefix/]name, prefix a DNS subdomain, name
// at most 63 characters.
// +kubebuilder:validation:MaxLength=317
// +kubebuilder:validation:Pattern=`^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*/)?[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?$`
type LabelKey string

// LabelValue is a label's value.
// +kubebuilder:validation:MaxLength=63
// +kubebuilder:validation:Pattern=`^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$`
type LabelValue string

// FieldPath names a field of an object: dotted field names (status,
// spec.template), where one in brackets is a key that may hold dots or
// slashes (metadata.annotations[example.com/notes]). An object's identity
// (apiVersion, kind, metadata and its name, namespace, uid,
// resourceVersion, creationTimestamp) cannot be dropped, however written
// (metadata[name] is metadata.name).
// +kubebuilder:validation:MaxLength=316
// +kubebuilder:validation:Pattern=`^[A-Za-z0-9_-]+(\.[A-Za-z0-9_-]+|\[[A-Za-z0-9._/-]+\])*$`
// +kubebuilder:validation:XValidation:rule="!(self.replace('[', '.').replace(']', \"\") in ['apiVersion', 'kind', 'metadata', 'metadata.name', 'metadata.namespace', 'metadata.uid', 'metadata.resourceVersion', 'metadata.creationTimestamp'])",message="apiVersion, kind, metadata and its name, namespace, uid, resourceVersion and creationTimestamp identify an object: they cannot be dropped"
type FieldPath string

// ClusterSpec says how to reach a member cluster and what to sync from it.
// +kubebuilder:validation:XValidation:rule="has(self.apiServer) || has(self.kubeconfigSecretRef) || has(self.agent)",message="one of apiServer, kubeconfigSecretRef or agent is required"
// +kubebuilder:validation:XValidation:rule="!has(self.agent) || !(has(self.apiServer) || has(self.caData) || has(self.tokenSecretRef) || has(self.kubeconfigSecretRef) || (has(self.insecureSkipTLSVerify) && self.insecureSkipTLSVerify))",message="a Cluster reached through its agent has no apiServer, caData, tokenSecretRef, kubeconfigSecretRef or insecureSkipTLSVerify: the agent holds the member's credentials"
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
	// Agent, when set, reaches the member through an agent installed in it
	// (chart panorama-agent) that connects out to the controller manager's
	// tunnel endpoint: for members the controller manager cannot dial. The
	// agent authenticates with a token of the host ServiceAccount that
	// names this Cluster in its annotation cluster.panorama.io/agent-for,
	// and reads the member with its own, read-only, credentials: the host
	// holds none.
	// +optional
	Agent *AgentConnection `json:"agent,omitempty"`
	// InsecureSkipTLSVerify skips verification of the member's certificate:
	// only this field turns it off, not a kubeconfig. Refused when the
	// credential Secret pins the member's CA (a kubeconfig's
	// certificate-authority-data, a token Secret's ca.crt).
	// +optional
	InsecureSkipTLSVerify bool `json:"insecureSkipTLSVerify,omitempty"`
	// SyncResources selects the resources to sync.
	// +kubebuilder:validation:MaxItems=100
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

// AgentConnection says a member is reached through its agent.
type AgentConnection struct{}

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
	// Filter is the filter in force, as sent to the member (namespaces,
	// field and label selectors) and dropped before storage (dropFields);
	// empty when everything is synced whole.
	// +optional
	Filter string `json:"filter,omitempty"`
	// LastListRemovedCount counts the objects the last full list of the
	// member removed from storage: after a filter change, those the new
	// filter keeps out. It cannot tell them from objects deleted in the
	// member while no watch ran, which it counts too. What a filter keeps
	// out of the member's lists is never sent, so never counted.
	// +optional
	LastListRemovedCount int64 `json:"lastListRemovedCount,omitempty"`
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
	// +kubebuilder:validation:MaxItems=100
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

// Meta is s as a metav1.LabelSelector, which metav1.LabelSelectorAsSelector
// turns into a labels.Selector; nil for nil.
func (s *LabelSelector) Meta() *metav1.LabelSelector {
	if s == nil {
		return nil
	}
	out := &metav1.LabelSelector{}
	for k, v := range s.MatchLabels {
		if out.MatchLabels == nil {
			out.MatchLabels = map[string]string{}
		}
		out.MatchLabels[k] = string(v)
	}
	for _, e := range s.MatchExpressions {
		r := metav1.LabelSelectorRequirement{Key: string(e.Key), Operator: e.Operator}
		for _, v := range e.Values {
			r.Values = append(r.Values, string(v))
		}
		out.MatchExpressions = append(out.MatchExpressions, r)
	}
	return out
}
