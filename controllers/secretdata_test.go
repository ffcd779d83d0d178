package controllers_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	clusterv1alpha1 "github.com/panorama-io/panorama/apis/cluster/v1alpha1"
	"github.com/panorama-io/panorama/storage"
	"github.com/panorama-io/panorama/storage/storagetest"
	"github.com/panorama-io/panorama/test/testenv"
)

// TestSecretDataForgotten changes what a Cluster keeps of its member's
// Secrets and reads every state storage serves of them: once it drops
// their data (secretData Drop, or Secrets deselected), no version of
// their history and no list as of a past revision holds any, compacted
// or not; once it is deleted, one created under its name has no history
// from before.
func TestSecretDataForgotten(t *testing.T) {
	host := testenv.Start(t)
	m := startMember(t)
	store := storagetest.Backends()[0].Open(t)
	hc := hostClient(t, host)
	ctx := context.Background()
	passwords := []string{"first-password-of-the-db", "second-password-of-the-db"}
	setPassword := func(p string) {
		t.Helper()
		s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "db"}, StringData: map[string]string{"password": p}}
		_, err := m.kube.CoreV1().Secrets("default").Update(ctx, s, metav1.UpdateOptions{})
		if apierrors.IsNotFound(err) {
			_, err = m.kube.CoreV1().Secrets("default").Create(ctx, s, metav1.CreateOptions{})
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	setPassword(passwords[0])
	mustCreate(t, hc, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: controllerNamespace}})
	mustCreate(t, hc, &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: controllerNamespace, Name: "member", Annotations: map[string]string{"cluster.panorama.io/clusters": "vault"}},
		Data:       map[string][]byte{"kubeconfig": kubeconfigVia(t, m)},
	})
	secrets := []clusterv1alpha1.GroupResources{{Group: "", Resources: []string{"secrets", "configmaps"}}}
	keepSpec := clusterv1alpha1.ClusterSpec{
		KubeconfigSecretRef: &clusterv1alpha1.SecretKeyRef{Namespace: controllerNamespace, Name: "member"},
		SyncResources:       secrets, SecretData: clusterv1alpha1.SecretDataKeep,
	}
	mustCreate(t, hc, &clusterv1alpha1.Cluster{ObjectMeta: metav1.ObjectMeta{Name: "vault"}, Spec: keepSpec})
	startManager(t, host, store)
	start, _, err := store.Revision(ctx)
	if err != nil {
		t.Fatal(err)
	}
	db := storage.Key{Cluster: "vault", GVR: storage.SecretsResource, Namespace: "default", Name: "db"}
	// held reads every state of db since start and returns those holding
	// a password.
	held := func() []string {
		t.Helper()
		states := map[string][]byte{}
		versions, err := store.ObjectHistory(ctx, db, 0)
		if err != nil && !errors.Is(err, storage.ErrNotFound) {
			t.Fatal(err)
		}
		for _, v := range versions {
			states[fmt.Sprintf("version %d", v.Revision)] = v.Object
		}
		current, _, err := store.Revision(ctx)
		if err != nil {
			t.Fatal(err)
		}
		for rev := start + 1; rev <= current; rev++ {
			res, err := store.List(ctx, &storage.ListQuery{GVR: storage.SecretsResource, Clusters: []string{"vault"}, Revision: rev, History: true})
			if err != nil {
				t.Fatal(err)
			}
			for _, o := range res.Objects {
				states[fmt.Sprintf("%s as of %d", o.Name, rev)] = o.Data
			}
		}
		var out []string
		for name, data := range states {
			for _, p := range passwords {
				if bytes.Contains(data, []byte(base64.StdEncoding.EncodeToString([]byte(p)))) {
					out = append(out, name)
				}
			}
		}
		return out
	}
	compact := func() {
		t.Helper()
		current, _, err := store.Revision(ctx)
		if err == nil {
			err = store.Compact(ctx, current, true)
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	stored := func(p string) {
		t.Helper()
		eventually(t, func() error {
			o, err := store.Get(ctx, db)
			if err != nil {
				return err
			}
			if !bytes.Contains(o.Data, []byte(base64.StdEncoding.EncodeToString([]byte(p)))) {
				return fmt.Errorf("stored without %q: %s", p, o.Data)
			}
			return nil
		})
	}
	noneHeld := func(stage string) {
		t.Helper()
		eventually(t, func() error {
			if h := held(); len(h) > 0 {
				return fmt.Errorf("%s: %d states hold a password, such as %s", stage, len(h), h[0])
			}
			return nil
		})
		compact()
		if h := held(); len(h) > 0 {
			t.Fatalf("%s, compacted: %d states hold a password, such as %s", stage, len(h), h[0])
		}
	}
	update := func(change func(*clusterv1alpha1.ClusterSpec)) {
		t.Helper()
		eventually(t, func() error {
			var c clusterv1alpha1.Cluster
			if err := hc.Get(ctx, client.ObjectKey{Name: "vault"}, &c); err != nil {
				return err
			}
			change(&c.Spec)
			return hc.Update(ctx, &c)
		})
	}

	// Kept, changed and compacted: history holds both passwords.
	stored(passwords[0])
	compact()
	setPassword(passwords[1])
	stored(passwords[1])
	if len(held()) == 0 {
		t.Fatal("the Secret kept holds no password: the test shows nothing")
	}
	update(func(s *clusterv1alpha1.ClusterSpec) { s.SecretData = clusterv1alpha1.SecretDataDrop })
	noneHeld("secretData Drop")

	// Kept again, then deselected.
	update(func(s *clusterv1alpha1.ClusterSpec) { s.SecretData = clusterv1alpha1.SecretDataKeep })
	stored(passwords[1])
	update(func(s *clusterv1alpha1.ClusterSpec) {
		s.SyncResources = []clusterv1alpha1.GroupResources{{Group: "", Resources: []string{"configmaps"}}}
	})
	eventually(t, func() error {
		if _, err := store.Get(ctx, db); !errors.Is(err, storage.ErrNotFound) {
			return fmt.Errorf("db still stored (%v)", err)
		}
		return nil
	})
	noneHeld("Secrets deselected")

	// Kept again, deleted, created again.
	update(func(s *clusterv1alpha1.ClusterSpec) { s.SyncResources = secrets })
	stored(passwords[1])
	compact()
	if err := hc.Delete(ctx, &clusterv1alpha1.Cluster{ObjectMeta: metav1.ObjectMeta{Name: "vault"}}); err != nil {
		t.Fatal(err)
	}
	eventually(t, func() error {
		err := hc.Get(ctx, client.ObjectKey{Name: "vault"}, &clusterv1alpha1.Cluster{})
		if !apierrors.IsNotFound(err) {
			return fmt.Errorf("vault not deleted yet (%v)", err)
		}
		return nil
	})
	compact()
	recreated, _, err := store.Revision(ctx)
	if err != nil {
		t.Fatal(err)
	}
	mustCreate(t, hc, &clusterv1alpha1.Cluster{ObjectMeta: metav1.ObjectMeta{Name: "vault"}, Spec: keepSpec})
	waitCluster(t, hc, "vault", func(c *clusterv1alpha1.Cluster) error {
		if !meta.IsStatusConditionTrue(c.Status.Conditions, clusterv1alpha1.ConditionSynced) {
			return fmt.Errorf("conditions %+v", c.Status.Conditions)
		}
		return nil
	})
	stored(passwords[1])
	versions, err := store.ObjectHistory(ctx, db, 0)
	if err != nil {
		t.Fatal(err)
	}
	for _, v := range versions {
		if v.Revision <= recreated {
			t.Errorf("created again, db has a version of the deleted Cluster, at %d: %s", v.Revision, v.Object)
		}
	}
	for rev := start + 1; rev <= recreated; rev++ {
		res, err := store.List(ctx, &storage.ListQuery{GVR: storage.SecretsResource, Clusters: []string{"vault"}, Revision: rev, History: true})
		if err != nil {
			t.Fatal(err)
		}
		if len(res.Objects) > 0 {
			t.Fatalf("created again, the list as of %d shows the deleted Cluster's %s", rev, res.Objects[0].Data)
		}
	}
}
