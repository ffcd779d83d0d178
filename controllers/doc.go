// Package controllers reconciles Cluster objects and keeps storage equal to
// what each member cluster holds.
package controllers

// RBAC of the controller manager.
// +kubebuilder:rbac:groups=cluster.panorama.io,resources=clusters;clustersyncresources,verbs=get;list;watch
// +kubebuilder:rbac:groups=cluster.panorama.io,resources=clusters/status,verbs=get;update;patch
// +kubebuilder:rbac:groups=cluster.panorama.io,resources=clusters/finalizers,verbs=update
// +kubebuilder:rbac:groups="",resources=secrets,verbs=get;list;watch
// +kubebuilder:rbac:groups="",resources=events,verbs=create;patch
// +kubebuilder:rbac:groups=coordination.k8s.io,resources=leases,verbs=get;list;watch;create;update;patch;delete
