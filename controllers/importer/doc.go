// Package importer makes Clusters of the members of a cluster inventory:
// each ClusterImportPolicy selects ClusterProfiles (multicluster.x-k8s.io)
// or Cluster API Clusters (cluster.x-k8s.io) and keeps one Cluster per
// selected source, created, updated and deleted with it.
//
// Neither inventory API need be installed: a policy whose source kind the
// host does not serve says so in its status and is checked again every
// RecheckInterval, and the sources are watched from the first time they are
// served. The foreign objects are read as unstructured, so no inventory
// module is linked.
package importer

// RBAC of the import: read the policies and the sources, create and delete
// the Clusters it imports (the Cluster reconciler's role already reads and
// updates them).
// +kubebuilder:rbac:groups=cluster.panorama.io,resources=clusterimportpolicies,verbs=get;list;watch
// +kubebuilder:rbac:groups=cluster.panorama.io,resources=clusterimportpolicies/status,verbs=get;update;patch
// +kubebuilder:rbac:groups=cluster.panorama.io,resources=clusters,verbs=create;delete
// +kubebuilder:rbac:groups=multicluster.x-k8s.io,resources=clusterprofiles,verbs=get;list;watch
// +kubebuilder:rbac:groups=cluster.x-k8s.io,resources=clusters,verbs=get;list;watch
