package controllers

import (
	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/apimachinery/pkg/api/meta"
	"sigs.k8s.io/controller-runtime/pkg/metrics"

	clusterv1alpha1 "github.com/panorama-io/panorama/apis/cluster/v1alpha1"
	"github.com/panorama-io/panorama/controllers/synchronizer"
	"github.com/panorama-io/panorama/internal/deprecatedmetric"
)

// clusterCondition mirrors the Clusters' conditions, so that alerts need
// no exporter of the host's custom resources.
var (
	clusterCondition = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "panorama_controller_cluster_condition",
		Help: "1 when a Cluster's condition (Ready, Synced) is True, else 0, by cluster and condition; set by the reconciling controller manager.",
	}, []string{"cluster", "condition"})
	clusterConditionRenamed = deprecatedmetric.Renamed("panorama_cluster_condition", "panorama_controller_cluster_condition",
		[]string{"cluster", "condition"}, clusterCondition)
)

func init() { metrics.Registry.MustRegister(clusterCondition, clusterConditionRenamed) }

// Collectors are the controller manager's own metrics, for a registry
// other than controller-runtime's too (the all-in-one binary serves the
// API server's). Storage's are storage's (sqlstore.Collectors).
func Collectors() []prometheus.Collector {
	return append(synchronizer.Collectors(), clusterCondition, clusterConditionRenamed)
}

// recordConditions sets a reconciled Cluster's condition gauges.
func recordConditions(cluster string, status *clusterv1alpha1.ClusterStatus) {
	for _, typ := range []string{clusterv1alpha1.ConditionReady, clusterv1alpha1.ConditionSynced} {
		v := 0.0
		if meta.IsStatusConditionTrue(status.Conditions, typ) {
			v = 1
		}
		clusterCondition.WithLabelValues(cluster, typ).Set(v)
	}
}

// forgetCluster drops every series of a Cluster that is gone.
func forgetCluster(cluster string) {
	clusterCondition.DeletePartialMatch(prometheus.Labels{"cluster": cluster})
	synchronizer.ForgetCluster(cluster)
}
