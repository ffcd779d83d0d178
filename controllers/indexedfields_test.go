package controllers_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	clusterv1alpha1 "github.com/panorama-io/panorama/apis/cluster/v1alpha1"
	"github.com/panorama-io/panorama/storage"
	"github.com/panorama-io/panorama/storage/storagetest"
	"github.com/panorama-io/panorama/test/testenv"
)

// TestIndexedFields declares fields as IndexedFields on a real host, to a
// controller manager running under the shipped RBAC: a valid one is
// indexed, one storage refuses is marked Invalid without holding up the
// others, and deleting one drops it. One past a limit on declarations
// is refused alone, the limit named.
func TestIndexedFields(t *testing.T) {
	host := testenv.Start(t)
	store := storagetest.Backends()[0].Open(t)
	hc := hostClient(t, host)
	ctx := context.Background()
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
	// The API server reads what storage indexes (the objects themselves are
	// reindexed by storage: its tests; the manager's orphan sweep would
	// remove any stored here, of a cluster no Cluster names).
	selectable := func(want bool) error {
		fs, err := store.Fields(ctx)
		if err != nil {
			return err
		}
		if fs.Selectable("team") != want {
			return fmt.Errorf("team selectable %v, want %v (version %d)", !want, want, fs.Version)
		}
		return nil
	}
	if err := selectable(true); err != nil {
		t.Fatal(err)
	}
	if err := hc.Delete(ctx, &clusterv1alpha1.IndexedField{ObjectMeta: metav1.ObjectMeta{Name: "team"}}); err != nil {
		t.Fatal(err)
	}
	eventually(t, func() error { return selectable(false) })

	// One field more than a resource may have: the last one is refused,
	// named so, and the others indexed.
	for i := range storage.MaxFieldsPerResource + 1 {
		mustCreate(t, hc, &clusterv1alpha1.IndexedField{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("cm%02d", i)},
			Spec: clusterv1alpha1.IndexedFieldSpec{Paths: []string{fmt.Sprintf("data.k%02d", i)}, Resources: []string{"configmaps"}}})
	}
	last := fmt.Sprintf("cm%02d", storage.MaxFieldsPerResource)
	eventually(t, func() error {
		for i := range storage.MaxFieldsPerResource + 1 {
			name := fmt.Sprintf("cm%02d", i)
			c, err := condition(name)
			if err != nil {
				return err
			}
			if want := map[bool]string{true: "Invalid", false: "Indexed"}[name == last]; c.Reason != want {
				return fmt.Errorf("%s: %+v, want reason %s", name, c, want)
			}
			if name == last && !strings.Contains(c.Message, "at most 16 declared fields apply to a resource, and 16 apply to configmaps") {
				return fmt.Errorf("%s: %q does not say which limit", name, c.Message)
			}
		}
		return nil
	})
}
