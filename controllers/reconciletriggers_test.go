package controllers_test

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/metrics"

	clusterv1alpha1 "github.com/panorama-io/panorama/apis/cluster/v1alpha1"
	"github.com/panorama-io/panorama/controllers"
	"github.com/panorama-io/panorama/storage/storagetest"
	"github.com/panorama-io/panorama/test/testenv"
)

// TestOwnWritesDoNotReconcile: the reconciler's own writes of a Cluster, of
// its finalizer and its status, do not have it reconciled again, while a
// change of its spec does, and so does its finalizer taken off by another. The news of the finalizer's write arrives while
// the reconcile that wrote it still runs, and the Cluster would wait out
// the rest of it in the queue (BenchmarkFleetReconcile).
func TestOwnWritesDoNotReconcile(t *testing.T) {
	host := testenv.Start(t)
	hc := hostClient(t, host)
	store := storagetest.Backends()[0].Open(t)
	// No periodic reconcile: only the Cluster's changes reconcile it.
	startManager(t, host, store, func(o *controllers.Options) { o.HealthInterval = time.Hour })
	before := clusterReconciles(t)
	// A Cluster whose credentials are missing: its reconcile writes the
	// finalizer and the status, and starts no synchronizer, whose changes
	// would reconcile it too.
	mustCreate(t, hc, &clusterv1alpha1.Cluster{ObjectMeta: metav1.ObjectMeta{Name: "east"},
		Spec: clusterv1alpha1.ClusterSpec{KubeconfigSecretRef: &clusterv1alpha1.SecretKeyRef{Namespace: controllerNamespace, Name: "missing"}}})
	waitCluster(t, hc, "east", func(c *clusterv1alpha1.Cluster) error {
		if cond := meta.FindStatusCondition(c.Status.Conditions, clusterv1alpha1.ConditionReady); cond == nil || cond.Reason != controllers.ReasonInvalidConfig || len(c.Finalizers) == 0 {
			return fmt.Errorf("finalizers %v, conditions %v: want the finalizer and Ready false for the missing Secret", c.Finalizers, c.Status.Conditions)
		}
		return nil
	})
	if err := hc.Patch(context.Background(), &clusterv1alpha1.Cluster{ObjectMeta: metav1.ObjectMeta{Name: "east"}},
		client.RawPatch(types.MergePatchType, []byte(`{"spec":{"eventRetention":"2h"}}`))); err != nil {
		t.Fatal(err)
	}
	waitCluster(t, hc, "east", func(c *clusterv1alpha1.Cluster) error {
		if c.Status.ObservedGeneration != c.Generation || c.Generation != 2 {
			return fmt.Errorf("status of generation %d, the Cluster's %d: want the spec's change reconciled", c.Status.ObservedGeneration, c.Generation)
		}
		return nil
	})
	// The second reconcile wrote the status before it returned.
	eventually(t, func() error {
		if n := clusterReconciles(t) - before; n < 2 {
			return fmt.Errorf("%v reconciles", n)
		}
		return nil
	})
	if n := clusterReconciles(t) - before; n != 2 {
		t.Fatalf("%v reconciles, want 2: the Cluster's creation and its spec's change", n)
	}
	// Someone else's taking the finalizer off is reconciled: it is put back.
	if err := hc.Patch(context.Background(), &clusterv1alpha1.Cluster{ObjectMeta: metav1.ObjectMeta{Name: "east"}},
		client.RawPatch(types.MergePatchType, []byte(`{"metadata":{"finalizers":null}}`))); err != nil {
		t.Fatal(err)
	}
	waitCluster(t, hc, "east", func(c *clusterv1alpha1.Cluster) error {
		if !slices.Contains(c.Finalizers, controllers.Finalizer) {
			return fmt.Errorf("finalizers %v: want the reconciler's back", c.Finalizers)
		}
		return nil
	})
}

// clusterReconciles is how many reconciles the Cluster controller has
// finished, whatever their result.
func clusterReconciles(t *testing.T) float64 {
	t.Helper()
	families, err := metrics.Registry.Gather()
	if err != nil {
		t.Fatal(err)
	}
	total := 0.0
	for _, f := range families {
		if f.GetName() != "controller_runtime_reconcile_total" {
			continue
		}
		for _, m := range f.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "controller" && l.GetValue() == "cluster" {
					total += m.GetCounter().GetValue()
				}
			}
		}
	}
	return total
}
