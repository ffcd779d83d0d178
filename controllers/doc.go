// Package controllers reconciles Cluster objects and keeps storage equal to
// what each member cluster holds.
//
// setup.go is the one list of what a controller manager runs: the Cluster
// reconciler (cluster_controller.go), the IndexedField reconciler
// (indexedfields.go), the importer (controllers/importer) and the
// compactor, each registered by its SetupWithManager; NewManager builds a
// manager with them for cmd/controller-manager and internal/allinone.
package controllers

// RBAC of the controller manager. Cluster-wide it only reads and updates
// Clusters (and reads IndexedFields, writing their status); Secrets
// (credentials of members), ServiceAccounts (read to bind agents to
// Clusters, tunnel.ServiceAccounts), its lease and the lease's
// events, and the Leases of sharding (listed: the replicas' membership),
// are granted in its own namespace only, so that whoever may create a
// Cluster cannot make it read any other Secret of the host.
// +kubebuilder:rbac:groups=cluster.panorama.io,resources=clusters,verbs=get;list;watch;update;patch
// +kubebuilder:rbac:groups=cluster.panorama.io,resources=clusters/status,verbs=get;update;patch
// +kubebuilder:rbac:groups=cluster.panorama.io,resources=clusters/finalizers,verbs=update
// +kubebuilder:rbac:groups=cluster.panorama.io,resources=clustersyncresources,verbs=get;list;watch
// +kubebuilder:rbac:groups=cluster.panorama.io,resources=indexedfields,verbs=get;list;watch
// +kubebuilder:rbac:groups=cluster.panorama.io,resources=indexedfields/status,verbs=get;update;patch
// +kubebuilder:rbac:groups="",namespace=panorama-system,resources=secrets,verbs=get
// +kubebuilder:rbac:groups="",namespace=panorama-system,resources=serviceaccounts,verbs=get
// +kubebuilder:rbac:groups=coordination.k8s.io,namespace=panorama-system,resources=leases,verbs=get;list;create;update
// +kubebuilder:rbac:groups="",namespace=panorama-system,resources=events,verbs=create;patch
