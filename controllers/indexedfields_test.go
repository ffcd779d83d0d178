package controllers_test

import (
	"context"
	"fmt"
	"testing"

	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"

	clusterv1alpha1 "github.com/panorama-io/panorama/apis/cluster/v1alpha1"
	"github.com/panorama-io/panorama/storage"
	"github.com/panorama-io/panorama/storage/storagetest"
	"github.com/panorama-io/panorama/test/testenv"
)

// TestIndexedFields declares fields as IndexedFields on a real host, to a
// controller manager running under the shipped RBAC: a valid one is
// indexed (stored objects become selectable on it), one storage refuses is
// marked Invalid without holding up the others, and deleting one drops it.
func TestIndexedFields(t *testing.T) {
	host := testenv.Start(t)
	store := storagetest.Backends()[0].Open(t)
	hc := hostClient(t, host)
	ctx := context.Background()
	gvr := schema.GroupVersionResource{Group: "apps", Version: "v1", Resource: "deployments"}
	var changes []storage.Change
	for i, team := range []string{"a", "b", "a"} {
		changes = append(changes, storage.Upsert(&unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "apps/v1", "kind": "Deployment",
			"metadata": map[string]any{"name": fmt.Sprint("d-", i), "namespace": "ns", "resourceVersion": "1", "annotations": map[string]any{"team": team}},
		}}))
	}
	if _, err := store.Apply(ctx, "east", gvr, changes); err != nil {
		t.Fatal(err)
	}
	startManager(t, host, store)
	mustCreate(t, hc, &clusterv1alpha1.IndexedField{ObjectMeta: metav1.ObjectMeta{Name: "team"},
		Spec: clusterv1alpha1.IndexedFieldSpec{Paths: []string{"metadata.annotations.team"}, Resources: []string{"deployments.apps"}}})
	mustCreate(t, hc, &clusterv1alpha1.IndexedField{ObjectMeta: metav1.ObjectMeta{Name: "images"}, // built in
		Spec: clusterv1alpha1.IndexedFieldSpec{Paths: []string{"spec.image"}}})
	condition := func(name string) (*metav1.Condition, error) {
		var f clusterv1alpha1.IndexedField
		if err := hc.Get(ctx, client.ObjectKey{Name: name}, &f); err != nil {
			return nil, err
		}
		c := apimeta.FindStatusCondition(f.Status.Conditions, clusterv1alpha1.ConditionIndexed)
		if c == nil {
			return nil, fmt.Errorf("%s has no Indexed condition yet", name)
		}
		return c, nil
	}
	eventually(t, func() error {
		for name, want := range map[string]string{"team": "Indexed", "images": "Invalid"} {
			c, err := condition(name)
			if err != nil {
				return err
			}
			if c.Reason != want {
				return fmt.Errorf("%s: %+v, want reason %s", name, c, want)
			}
		}
		return nil
	})
	q := storage.ListQuery{GVR: gvr, Fields: fields.ParseSelectorOrDie("team=a").Requirements()}
	res, err := store.List(ctx, &q)
	if err != nil || len(res.Objects) != 2 || res.Objects[0].Name != "d-0" || res.Objects[1].Name != "d-2" {
		t.Fatalf("team=a: %v %v", res, err)
	}
	if err := hc.Delete(ctx, &clusterv1alpha1.IndexedField{ObjectMeta: metav1.ObjectMeta{Name: "team"}}); err != nil {
		t.Fatal(err)
	}
	eventually(t, func() error {
		if _, err := store.List(ctx, &q); !storage.IsInvalid(err) {
			return fmt.Errorf("team=a after the IndexedField was deleted: %v", err)
		}
		return nil
	})
}
