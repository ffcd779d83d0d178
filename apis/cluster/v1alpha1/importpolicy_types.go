package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// ImportSource is the kind of inventory object a ClusterImportPolicy
// imports members from.
// +kubebuilder:validation:Enum=ClusterProfile;ClusterAPI
type ImportSource string

const (
	// ImportSourceClusterProfile imports ClusterProfiles of the SIG
	// Multicluster Cluster Inventory API (multicluster.x-k8s.io/v1alpha1).
	ImportSourceClusterProfile ImportSource = "ClusterProfile"
	// ImportSourceClusterAPI imports Cluster API Clusters
	// (cluster.x-k8s.io), with their <name>-kubeconfig Secrets.
	ImportSourceClusterAPI ImportSource = "ClusterAPI"
)

// NameScheme says how an imported Cluster is named after its source.
// +kubebuilder:validation:Enum=NamespaceName;Name
type NameScheme string

const (
	// NameSchemeNamespaceName names the Cluster <namespace>-<name>, cut to
	// 253 characters with a hash of the source's key when longer.
	NameSchemeNamespaceName NameScheme = "NamespaceName"
	// NameSchemeName names the Cluster as its source.
	NameSchemeName NameScheme = "Name"
)

// Condition types and labels of the import.
const (
	// ConditionImported says whether every source the policy selects is
	// imported.
	ConditionImported = "Imported"

	// LabelImportPolicy on a Cluster names the ClusterImportPolicy that
	// imported it (which also controls it by owner reference).
	LabelImportPolicy = "import.panorama.io/policy"
	// AnnotationImportSource on an imported Cluster names its source, as
	// <Kind>.<group>/<namespace>/<name>.
	AnnotationImportSource = "import.panorama.io/source"
	// AnnotationImportSourceUID is the uid of the source.
	AnnotationImportSourceUID = "import.panorama.io/source-uid"
)

// ClusterProfileImport says how Clusters imported from ClusterProfiles
// reach their members.
type ClusterProfileImport struct {
	// AccessProvider names the entry of the profile's
	// status.accessProviders (or of the deprecated credentialProviders)
	// whose server and certificate-authority-data the Cluster connects to.
	// +kubebuilder:validation:MinLength=1
	AccessProvider string `json:"accessProvider"`
	// TokenKey is the key of the bearer token in the profile's credential
	// Secret: the Secret of the controller's namespace named as the
	// imported Cluster, bound as any token Secret by its annotations
	// cluster.panorama.io/clusters (naming the imported Cluster) and
	// cluster.panorama.io/server (the access provider's server): a profile
	// is imported only once its Secret binds it so. Defaults to "token".
	// +optional
	TokenKey string `json:"tokenKey,omitempty"`
}

// ImportedClusterSpec is what every Cluster a policy imports syncs: the
// Cluster spec's sync settings, without its credentials, which come from
// the source.
type ImportedClusterSpec struct {
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
	// EventRetention is the imported Clusters' eventRetention: how long
	// after it was last seen a synced Event is kept. Unset, the controller
	// manager's --event-retention.
	// +kubebuilder:validation:XValidation:rule="duration(self) > duration('0s')",message="must be positive"
	// +optional
	EventRetention *metav1.Duration `json:"eventRetention,omitempty"`
	// InsecureSkipTLSVerify skips verification of the members' certificates.
	// +optional
	InsecureSkipTLSVerify bool `json:"insecureSkipTLSVerify,omitempty"`
	// Paused stops syncing the imported Clusters.
	// +optional
	Paused bool `json:"paused,omitempty"`
}

// ClusterImportPolicySpec selects inventory objects and says what the
// Clusters made from them sync.
// +kubebuilder:validation:XValidation:rule="self.source == 'ClusterProfile' ? has(self.clusterProfile) : !has(self.clusterProfile)",message="clusterProfile is required with source ClusterProfile and only then"
type ClusterImportPolicySpec struct {
	// Source is the kind imported: ClusterProfile or ClusterAPI.
	Source ImportSource `json:"source"`
	// Namespaces the sources are taken from; empty means every namespace.
	// +optional
	Namespaces []string `json:"namespaces,omitempty"`
	// Selector selects sources by label; empty selects every source.
	// +optional
	Selector *metav1.LabelSelector `json:"selector,omitempty"`
	// NameScheme names the imported Clusters: NamespaceName (the default,
	// <namespace>-<name>) or Name.
	// +kubebuilder:default=NamespaceName
	// +optional
	NameScheme NameScheme `json:"nameScheme,omitempty"`
	// ClusterProfile is how ClusterProfiles' members are reached; required
	// with source ClusterProfile.
	// +optional
	ClusterProfile *ClusterProfileImport `json:"clusterProfile,omitempty"`
	// Template is what each imported Cluster syncs.
	Template ImportedClusterSpec `json:"template"`
}

// ImportConflict is a selected source that is not imported.
type ImportConflict struct {
	// Source is <namespace>/<name> of the source.
	Source string `json:"source"`
	// Cluster is the name its Cluster would have.
	Cluster string `json:"cluster"`
	// Message says why it is not imported.
	Message string `json:"message"`
}

// ClusterImportPolicyStatus is the outcome of the last import.
type ClusterImportPolicyStatus struct {
	// +optional
	// +listType=map
	// +listMapKey=type
	Conditions []metav1.Condition `json:"conditions,omitempty"`
	// ObservedGeneration is the generation the status describes.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`
	// ImportedCount is the number of Clusters the policy holds.
	// +optional
	ImportedCount int32 `json:"importedCount,omitempty"`
	// Conflicts are the selected sources not imported, and why (the first
	// 50).
	// +optional
	Conflicts []ImportConflict `json:"conflicts,omitempty"`
}

// ClusterImportPolicy imports member clusters from a cluster inventory
// (ClusterProfiles or Cluster API Clusters) as Clusters that follow their
// sources: created, updated and deleted with them.
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:scope=Cluster,categories=panorama
// +kubebuilder:printcolumn:name="Source",type=string,JSONPath=`.spec.source`
// +kubebuilder:printcolumn:name="Imported",type=integer,JSONPath=`.status.importedCount`
// +kubebuilder:printcolumn:name="Ready",type=string,JSONPath=`.status.conditions[?(@.type=="Imported")].status`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
// +kubebuilder:validation:XValidation:rule="self.metadata.name.size() <= 63",message="the name is a label value of the imported Clusters: 63 characters at most"
type ClusterImportPolicy struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   ClusterImportPolicySpec   `json:"spec"`
	Status ClusterImportPolicyStatus `json:"status,omitempty"`
}

// ClusterImportPolicyList is a list of ClusterImportPolicies.
// +kubebuilder:object:root=true
type ClusterImportPolicyList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []ClusterImportPolicy `json:"items"`
}
