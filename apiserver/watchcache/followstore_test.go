package watchcache_test

import (
	"bytes"
	"context"
	"fmt"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/fields"

	"github.com/panorama-io/panorama/apiserver/watchcache"
	"github.com/panorama-io/panorama/storage"
	"github.com/panorama-io/panorama/storage/storagetest"
)

// password is what the Secrets of these tests hold.
const password = "cGFzc3dvcmQtb2YtdGhlLWRi"

func secret(name, rv, tier string) storage.Change {
	u := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "Secret",
		"metadata": map[string]any{"name": name, "namespace": "ns", "resourceVersion": rv, "labels": map[string]any{"tier": tier}},
		"data":     map[string]any{"password": password}}}
	return storage.Upsert(u)
}

// drained reads w until it ends, within a generous bound.
func drained(t *testing.T, what string, w *watchcache.Watcher) {
	t.Helper()
	within(t, what, func() bool {
		for range w.ResultChan() {
		}
		return true
	})
}

// cachedSecrets reads the Secrets through c every way it serves them: a
// list at the current revision, a page at revision at, and a watch
// resuming from at. Each must be the cache's, not the store's.
func cachedSecrets(t *testing.T, c *watchcache.Cache, s storage.Interface, at int64) map[string][]byte {
	t.Helper()
	ctx := context.Background()
	q := &storage.ListQuery{GVR: storage.SecretsResource}
	out := map[string][]byte{}
	objs, _, err := c.List(ctx, q)
	if err != nil || len(objs) == 0 {
		t.Fatalf("list: %d objects, %v", len(objs), err)
	}
	for _, o := range objs {
		out["list: "+o.Name] = o.Data
	}
	current, compacted, err := s.Revision(ctx)
	if err != nil {
		t.Fatal(err)
	}
	page, ok, err := c.Page(ctx, &storage.ListQuery{GVR: storage.SecretsResource, Revision: at, Limit: 10}, current, compacted)
	if err != nil || !ok || len(page.Objects) == 0 {
		t.Fatalf("page at %d: served by the cache %v, %v", at, ok, err)
	}
	for _, o := range page.Objects {
		out[fmt.Sprintf("page at %d: %s", at, o.Name)] = o.Data
	}
	w, err := c.Watch(ctx, q, watchcache.WatchOptions{ResourceVersion: at})
	if err != nil {
		t.Fatalf("watch from %d: %v", at, err)
	}
	defer w.Stop()
	for rev := at; rev < current; {
		select {
		case e, ok := <-w.ResultChan():
			if !ok {
				t.Fatalf("watch from %d ended at %d, before %d", at, rev, current)
			}
			out[fmt.Sprintf("watch from %d: %s at %d", at, e.Type, e.Revision)] = e.Object.Data
			rev = e.Revision
		case <-time.After(10 * time.Second):
			t.Fatalf("watch from %d: nothing after %d, want up to %d", at, rev, current)
		}
	}
	return out
}

// TestDroppedSecretDataLeavesTheCache caches a Secret's states, data
// and all, in a list, the ring of recent changes and a watch, then has
// the store drop Secret data as a Cluster that stops keeping it does:
// no read through the cache, at the current revision or an earlier one
// the ring reaches, returns the data, and the watch of Secrets ends.
func TestDroppedSecretDataLeavesTheCache(t *testing.T) {
	storagetest.ForEach(t, func(t *testing.T, b storagetest.Backend) {
		s := b.Open(t)
		ctx := context.Background()
		first, err := s.ForCluster("east", storage.Unfenced).Apply(ctx, storage.SecretsResource, []storage.Change{secret("db", "1", "back")})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := s.ForCluster("east", storage.Unfenced).Apply(ctx, storage.SecretsResource, []storage.Change{secret("db", "2", "front")}); err != nil {
			t.Fatal(err)
		}
		c := run(t, s, watchcache.Options{PollInterval: 50 * time.Millisecond})
		for name, data := range cachedSecrets(t, c, s, first) {
			if !bytes.Contains(data, []byte(password)) {
				t.Fatalf("kept, %s does not hold the data: the test shows nothing", name)
			}
		}
		w, err := c.Watch(ctx, &storage.ListQuery{GVR: storage.SecretsResource}, watchcache.WatchOptions{})
		if err != nil {
			t.Fatal(err)
		}
		expect(t, next(t, w, 1), "ADDED db")

		if err := s.ForCluster("east", storage.Unfenced).DropSecretData(ctx); err != nil {
			t.Fatal(err)
		}
		// Its events may hold what was current when they were sent; it
		// ends once the cache drops the Secrets.
		drained(t, "the watch of Secrets to end", w)
		for name, data := range cachedSecrets(t, c, s, first) {
			if bytes.Contains(data, []byte(password)) {
				t.Errorf("dropped, %s holds the data", name)
			}
		}
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
		if _, err := s.ForCluster("east", storage.Unfenced).Apply(ctx, deployments, []storage.Change{scaled("one", "1", 1), scaled("three", "1", 3)}); err != nil {
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
