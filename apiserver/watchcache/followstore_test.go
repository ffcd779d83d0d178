package watchcache_test

import (
	"context"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/fields"

	"github.com/panorama-io/panorama/apiserver/watchcache"
	"github.com/panorama-io/panorama/storage"
	"github.com/panorama-io/panorama/storage/storagetest"
)

// drained reads w until it ends, within a generous bound.
func drained(t *testing.T, what string, w *watchcache.Watcher) {
	t.Helper()
	within(t, what, func() bool {
		for range w.ResultChan() {
		}
		return true
	})
}

func scaled(name, rv string, replicas int64) storage.Change {
	u := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "apps/v1", "kind": "Deployment",
		"metadata": map[string]any{"name": name, "namespace": "ns", "resourceVersion": rv},
		"spec":     map[string]any{"replicas": replicas}}}
	return storage.Upsert(u)
}

// TestFieldDeclarationKeepsOtherWatches declares a field of deployments:
// the deployments are described anew, and their watch ends, while the
// watch of pods, which the field does not apply to, carries on, and the
// pods' cache takes the new field set.
func TestFieldDeclarationKeepsOtherWatches(t *testing.T) {
	storagetest.ForEach(t, func(t *testing.T, b storagetest.Backend) {
		s := b.Open(t)
		ctx := context.Background()
		apply(t, s, pod("a", "1", "web"))
		if _, err := s.Apply(ctx, "east", deployments, []storage.Change{scaled("one", "1", 1), scaled("three", "1", 3)}); err != nil {
			t.Fatal(err)
		}
		c := run(t, s, watchcache.Options{PollInterval: 50 * time.Millisecond})
		podWatch, err := c.Watch(ctx, &storage.ListQuery{GVR: pods}, watchcache.WatchOptions{})
		if err != nil {
			t.Fatal(err)
		}
		defer podWatch.Stop()
		expect(t, next(t, podWatch, 1), "ADDED a")
		deploymentWatch, err := c.Watch(ctx, &storage.ListQuery{GVR: deployments}, watchcache.WatchOptions{})
		if err != nil {
			t.Fatal(err)
		}
		expect(t, next(t, deploymentWatch, 2), "ADDED one", "ADDED three")

		if err := s.DeclareFields(ctx, []storage.FieldDeclaration{{Name: "replicas", Paths: []string{"spec.replicas"}, Resources: []string{"deployments.apps"}}}); err != nil {
			t.Fatal(err)
		}
		drained(t, "the watch of deployments to end", deploymentWatch)
		// Applied by the tail after the switch.
		apply(t, s, pod("b", "1", "web"))
		expect(t, next(t, podWatch, 1), "ADDED b")

		replicas, err := fields.ParseSelector("replicas=3")
		if err != nil {
			t.Fatal(err)
		}
		objs, _, err := c.List(ctx, &storage.ListQuery{GVR: deployments, Fields: replicas.Requirements()})
		if err != nil || len(objs) != 1 || objs[0].Name != "three" {
			t.Errorf("deployments with replicas=3: %v, %v; want three", objs, err)
		}
		// As the store answers: the field is indexed, and no pod has it.
		objs, _, err = c.List(ctx, &storage.ListQuery{GVR: pods, Fields: replicas.Requirements()})
		if err != nil || len(objs) != 0 {
			t.Errorf("pods with replicas=3: %v, %v; want none", objs, err)
		}
	})
}
