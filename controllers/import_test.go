package controllers_test

import (
	"context"
	"encoding/base64"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	clusterv1alpha1 "github.com/panorama-io/panorama/apis/cluster/v1alpha1"
	"github.com/panorama-io/panorama/controllers"
	"github.com/panorama-io/panorama/storage"
	"github.com/panorama-io/panorama/storage/storagetest"
	"github.com/panorama-io/panorama/test/testenv"
)

var (
	capiClusterGVK    = schema.GroupVersionKind{Group: "cluster.x-k8s.io", Version: "v1beta2", Kind: "Cluster"}
	clusterProfileGVK = schema.GroupVersionKind{Group: "multicluster.x-k8s.io", Version: "v1alpha1", Kind: "ClusterProfile"}
)

// inventoryCRD is the path of a test stand-in for an inventory API's CRD.
func inventoryCRD(t *testing.T, file string) string {
	return filepath.Join(testenv.RepoRoot(t), "test", "testdata", "inventory-crds", file)
}

// TestClusterImport runs the controller manager, as the shipped
// ServiceAccount, against a host serving Cluster API's Cluster (and, from
// later on, ClusterProfile) and a real member, and checks that imported
// Clusters follow their sources, sync the member, and never take a
// hand-written Cluster's name.
func TestClusterImport(t *testing.T) {
	host := testenv.Start(t, func(e *envtest.Environment) {
		e.CRDDirectoryPaths = append(e.CRDDirectoryPaths, inventoryCRD(t, "cluster.x-k8s.io_clusters.yaml"))
	})
	m := startMember(t)
	createPod(t, m, "default", "imported-pod", nil)
	store := storagetest.Backends()[2].Open(t) // PostgreSQL
	hc := hostClient(t, host)
	ctx := context.Background()

	// The Cluster API namespace, granted as the chart's
	// controllerManager.clusterAPISecretNamespaces grants it.
	const capiNS = "capi-east"
	mustCreate(t, hc, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: capiNS}})
	mustCreate(t, hc, &rbacv1.Role{
		ObjectMeta: metav1.ObjectMeta{Namespace: capiNS, Name: "panorama-cluster-api-kubeconfigs"},
		Rules:      []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"secrets"}, Verbs: []string{"get"}}},
	})
	mustCreate(t, hc, &rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{Namespace: capiNS, Name: "panorama-cluster-api-kubeconfigs"},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: "panorama-cluster-api-kubeconfigs"},
		Subjects:   []rbacv1.Subject{{Kind: "ServiceAccount", Namespace: controllerNamespace, Name: "panorama"}},
	})
	capiKubeconfig(t, hc, capiNS, "east", kubeconfigVia(t, m))
	createSource(t, hc, capiClusterGVK, capiNS, "east", map[string]string{"env": "prod"})
	createSource(t, hc, capiClusterGVK, capiNS, "staging", map[string]string{"env": "staging"})
	// A Cluster written by hand under the name the import would give west.
	handWritten := clusterv1alpha1.ClusterSpec{APIServer: "https://127.0.0.1:1", SyncResources: []clusterv1alpha1.GroupResources{{Group: "", Resources: []string{"configmaps"}}}}
	mustCreate(t, hc, &clusterv1alpha1.Cluster{ObjectMeta: metav1.ObjectMeta{Name: capiNS + "-west"}, Spec: handWritten})
	createSource(t, hc, capiClusterGVK, capiNS, "west", map[string]string{"env": "prod"})

	template := clusterv1alpha1.ImportedClusterSpec{SyncResources: []clusterv1alpha1.GroupResources{{Group: "", Resources: []string{"pods"}}}}
	mustCreate(t, hc, &clusterv1alpha1.ClusterImportPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: "capi"},
		Spec: clusterv1alpha1.ClusterImportPolicySpec{
			Source:   clusterv1alpha1.ImportSourceClusterAPI,
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"env": "prod"}},
			Template: template,
		},
	})
	startManager(t, host, store, func(o *controllers.Options) { o.ClusterAPISecretNamespaces = []string{capiNS} })

	const east = capiNS + "-east"
	imported := waitCluster(t, hc, east, func(c *clusterv1alpha1.Cluster) error {
		if !meta.IsStatusConditionTrue(c.Status.Conditions, clusterv1alpha1.ConditionSynced) {
			return fmt.Errorf("not synced: %+v", c.Status.Conditions)
		}
		return nil
	})
	wantRef := clusterv1alpha1.SecretKeyRef{Namespace: capiNS, Name: "east-kubeconfig", Key: "value"}
	if r := imported.Spec.KubeconfigSecretRef; r == nil || *r != wantRef || imported.Spec.APIServer != "" || imported.Spec.TokenSecretRef != nil {
		t.Errorf("imported credentials %+v, want only the kubeconfig %+v", imported.Spec, wantRef)
	}
	if len(imported.Spec.SyncResources) != 1 || imported.Spec.SyncResources[0].Resources[0] != "pods" {
		t.Errorf("imported syncResources %+v, want the policy's", imported.Spec.SyncResources)
	}
	source := getSource(t, hc, capiClusterGVK, capiNS, "east")
	checkRecord(t, imported, "capi", "Cluster.cluster.x-k8s.io/"+capiNS+"/east", source.GetUID())
	if _, err := store.Get(ctx, storage.Key{Cluster: east, GVR: podsGVR, Namespace: "default", Name: "imported-pod"}); err != nil {
		t.Fatalf("the imported Cluster did not sync the member's pod: %v", err)
	}

	// west's name is taken by hand: left alone, reported.
	waitPolicy(t, hc, "capi", func(p *clusterv1alpha1.ClusterImportPolicy) error {
		if p.Status.ImportedCount != 1 || len(p.Status.Conflicts) != 1 || p.Status.Conflicts[0].Source != capiNS+"/west" ||
			!strings.Contains(p.Status.Conflicts[0].Message, "not imported by this policy") ||
			!meta.IsStatusConditionFalse(p.Status.Conditions, clusterv1alpha1.ConditionImported) {
			return fmt.Errorf("status %+v", p.Status)
		}
		return nil
	})
	var hand clusterv1alpha1.Cluster
	if err := hc.Get(ctx, client.ObjectKey{Name: capiNS + "-west"}, &hand); err != nil {
		t.Fatal(err)
	}
	if hand.Spec.APIServer != handWritten.APIServer || hand.Spec.KubeconfigSecretRef != nil || len(hand.OwnerReferences) > 0 || len(hand.Labels) > 0 || len(hand.Annotations) > 0 {
		t.Fatalf("the hand-written Cluster was changed: %+v %+v", hand.ObjectMeta, hand.Spec)
	}
	if err := hc.Get(ctx, client.ObjectKey{Name: capiNS + "-staging"}, &clusterv1alpha1.Cluster{}); !apierrors.IsNotFound(err) {
		t.Fatalf("a source the selector leaves out was imported: %v", err)
	}

	t.Run("the policy changes", func(t *testing.T) {
		var p clusterv1alpha1.ClusterImportPolicy
		if err := hc.Get(ctx, client.ObjectKey{Name: "capi"}, &p); err != nil {
			t.Fatal(err)
		}
		p.Spec.Template.SyncResources = append(p.Spec.Template.SyncResources, clusterv1alpha1.GroupResources{Group: "", Resources: []string{"namespaces"}})
		if err := hc.Update(ctx, &p); err != nil {
			t.Fatal(err)
		}
		waitCluster(t, hc, east, func(c *clusterv1alpha1.Cluster) error {
			if len(c.Spec.SyncResources) != 2 {
				return fmt.Errorf("syncResources %+v", c.Spec.SyncResources)
			}
			return nil
		})
	})

	t.Run("a label change unselects the source", func(t *testing.T) {
		setSourceLabel(t, hc, capiClusterGVK, capiNS, "east", "env", "dev")
		waitGone(t, hc, east)
		eventually(t, func() error {
			if v, err := store.MemberVersions(ctx, east, podsGVR); err != nil || len(v) != 0 {
				return fmt.Errorf("%d pods of the unselected cluster still stored (%v)", len(v), err)
			}
			return nil
		})
		setSourceLabel(t, hc, capiClusterGVK, capiNS, "east", "env", "prod")
		waitCluster(t, hc, east, func(*clusterv1alpha1.Cluster) error { return nil })
	})

	t.Run("deleting the source deletes its Cluster", func(t *testing.T) {
		if err := hc.Delete(ctx, getSource(t, hc, capiClusterGVK, capiNS, "east")); err != nil {
			t.Fatal(err)
		}
		waitGone(t, hc, east)
	})

	t.Run("a Cluster API namespace lends only Cluster API kubeconfigs", func(t *testing.T) {
		// Another Secret of the namespace, which a Cluster may not have
		// the controller read, as a kubeconfig nor as a token.
		mustCreate(t, hc, &corev1.Secret{
			ObjectMeta: metav1.ObjectMeta{Namespace: capiNS, Name: "east-ca"},
			Data:       map[string][]byte{"value": []byte("not a kubeconfig"), "token": []byte("a token")},
		})
		// Named as Cluster API names kubeconfigs, but not one of its Secrets.
		mustCreate(t, hc, &corev1.Secret{
			ObjectMeta: metav1.ObjectMeta{Namespace: capiNS, Name: "other-kubeconfig"},
			Data:       map[string][]byte{"value": kubeconfigVia(t, m)},
		})
		refs := map[string]clusterv1alpha1.ClusterSpec{
			"borrow-kubeconfig": {KubeconfigSecretRef: &clusterv1alpha1.SecretKeyRef{Namespace: capiNS, Name: "east-ca", Key: "value"}},
			"borrow-token":      {APIServer: "https://127.0.0.1:1", TokenSecretRef: &clusterv1alpha1.SecretKeyRef{Namespace: capiNS, Name: "east-kubeconfig", Key: "value"}},
			"borrow-key":        {KubeconfigSecretRef: &clusterv1alpha1.SecretKeyRef{Namespace: capiNS, Name: "east-kubeconfig", Key: "token"}},
			"borrow-untyped":    {KubeconfigSecretRef: &clusterv1alpha1.SecretKeyRef{Namespace: capiNS, Name: "other-kubeconfig", Key: "value"}},
		}
		for name, spec := range refs {
			mustCreate(t, hc, &clusterv1alpha1.Cluster{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: spec})
		}
		for name := range refs {
			waitCluster(t, hc, name, func(c *clusterv1alpha1.Cluster) error {
				cond := meta.FindStatusCondition(c.Status.Conditions, clusterv1alpha1.ConditionReady)
				if cond == nil || cond.Reason != controllers.ReasonSecretNamespaceForbidden {
					return fmt.Errorf("ready condition %+v, want %s", cond, controllers.ReasonSecretNamespaceForbidden)
				}
				return nil
			})
		}
	})

	t.Run("ClusterProfiles, once the host serves them", func(t *testing.T) {
		mustCreate(t, hc, &clusterv1alpha1.ClusterImportPolicy{
			ObjectMeta: metav1.ObjectMeta{Name: "profiles"},
			Spec: clusterv1alpha1.ClusterImportPolicySpec{
				Source:         clusterv1alpha1.ImportSourceClusterProfile,
				Namespaces:     []string{"fleet"},
				ClusterProfile: &clusterv1alpha1.ClusterProfileImport{AccessProvider: "panorama"},
				Template:       template,
			},
		})
		waitPolicy(t, hc, "profiles", conditionReason("SourceNotInstalled"))
		if _, err := envtest.InstallCRDs(host.Config, envtest.CRDInstallOptions{Paths: []string{inventoryCRD(t, "multicluster.x-k8s.io_clusterprofiles.yaml")}}); err != nil {
			t.Fatal(err)
		}
		mustCreate(t, hc, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "fleet"}})
		profile := createSource(t, hc, clusterProfileGVK, "fleet", "west", nil)
		setAccessProvider(t, hc, profile, "https://"+m.proxy.Addr, m.env.Config.CAData)
		// The token Secret is named after the Cluster, and imported only
		// once bound to it and to the profile's server.
		token := &corev1.Secret{
			ObjectMeta: metav1.ObjectMeta{Namespace: controllerNamespace, Name: "fleet-west"},
			Data:       map[string][]byte{"token": []byte(serviceAccountToken(t, m))},
		}
		mustCreate(t, hc, token)
		conflict := func(message string) func(*clusterv1alpha1.ClusterImportPolicy) error {
			return func(p *clusterv1alpha1.ClusterImportPolicy) error {
				if len(p.Status.Conflicts) != 1 || !strings.Contains(p.Status.Conflicts[0].Message, message) {
					return fmt.Errorf("status %+v, want a conflict %q", p.Status, message)
				}
				return nil
			}
		}
		bind := func(server string) {
			t.Helper()
			if err := hc.Get(ctx, client.ObjectKeyFromObject(token), token); err != nil {
				t.Fatal(err)
			}
			metav1.SetMetaDataAnnotation(&token.ObjectMeta, clusterv1alpha1.AnnotationCredentialClusters, "fleet-west")
			metav1.SetMetaDataAnnotation(&token.ObjectMeta, clusterv1alpha1.AnnotationCredentialServer, server)
			if err := hc.Update(ctx, token); err != nil {
				t.Fatal(err)
			}
		}
		waitPolicy(t, hc, "profiles", conflict("its annotation "+clusterv1alpha1.AnnotationCredentialClusters+" must name fleet-west"))
		bind("https://elsewhere.example")
		waitPolicy(t, hc, "profiles", conflict("holds no token for https://"+m.proxy.Addr))
		if err := hc.Get(ctx, client.ObjectKey{Name: "fleet-west"}, &clusterv1alpha1.Cluster{}); !apierrors.IsNotFound(err) {
			t.Fatalf("a profile was imported with a Secret not bound to it: %v", err)
		}
		bind("https://" + m.proxy.Addr)
		c := waitCluster(t, hc, "fleet-west", func(c *clusterv1alpha1.Cluster) error {
			if !meta.IsStatusConditionTrue(c.Status.Conditions, clusterv1alpha1.ConditionSynced) {
				return fmt.Errorf("not synced: %+v", c.Status.Conditions)
			}
			return nil
		})
		if c.Spec.APIServer != "https://"+m.proxy.Addr || string(c.Spec.CAData) != string(m.env.Config.CAData) ||
			c.Spec.TokenSecretRef == nil || *c.Spec.TokenSecretRef != (clusterv1alpha1.SecretKeyRef{Namespace: controllerNamespace, Name: "fleet-west", Key: "token"}) {
			t.Fatalf("imported spec %+v", c.Spec)
		}
		checkRecord(t, c, "profiles", "ClusterProfile.multicluster.x-k8s.io/fleet/west", profile.GetUID())
		waitPolicy(t, hc, "profiles", func(p *clusterv1alpha1.ClusterImportPolicy) error {
			if p.Status.ImportedCount != 1 || len(p.Status.Conflicts) != 0 || !meta.IsStatusConditionTrue(p.Status.Conditions, clusterv1alpha1.ConditionImported) {
				return fmt.Errorf("status %+v", p.Status)
			}
			return nil
		})

		// The profile's endpoint moves: the Cluster stays until the Secret
		// holds a token for the new one, then follows.
		setAccessProvider(t, hc, getSource(t, hc, clusterProfileGVK, "fleet", "west"), m.env.Config.Host, m.env.Config.CAData)
		waitPolicy(t, hc, "profiles", conflict("holds no token for "+m.env.Config.Host))
		if err := hc.Get(ctx, client.ObjectKey{Name: "fleet-west"}, c); err != nil || c.Spec.APIServer != "https://"+m.proxy.Addr {
			t.Fatalf("the Cluster followed its profile to a server its Secret does not name: %q (%v)", c.Spec.APIServer, err)
		}
		bind(m.env.Config.Host)
		waitCluster(t, hc, "fleet-west", func(c *clusterv1alpha1.Cluster) error {
			if c.Spec.APIServer != m.env.Config.Host {
				return fmt.Errorf("apiServer %q, want %q", c.Spec.APIServer, m.env.Config.Host)
			}
			return nil
		})
	})

	t.Run("deleting the policy deletes its Clusters", func(t *testing.T) {
		if err := hc.Delete(ctx, &clusterv1alpha1.ClusterImportPolicy{ObjectMeta: metav1.ObjectMeta{Name: "profiles"}}); err != nil {
			t.Fatal(err)
		}
		waitGone(t, hc, "fleet-west")
		if err := hc.Get(ctx, client.ObjectKey{Name: capiNS + "-west"}, &clusterv1alpha1.Cluster{}); err != nil {
			t.Fatalf("the hand-written Cluster: %v", err)
		}
	})
}

// capiKubeconfig writes the Secret Cluster API keeps a cluster's kubeconfig in.
func capiKubeconfig(t *testing.T, hc client.Client, ns, cluster string, kubeconfig []byte) {
	mustCreate(t, hc, &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: cluster + "-kubeconfig", Labels: map[string]string{"cluster.x-k8s.io/cluster-name": cluster}},
		Type:       "cluster.x-k8s.io/secret",
		Data:       map[string][]byte{"value": kubeconfig},
	})
}

func createSource(t *testing.T, hc client.Client, gvk schema.GroupVersionKind, ns, name string, labels map[string]string) *unstructured.Unstructured {
	t.Helper()
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(gvk)
	u.SetNamespace(ns)
	u.SetName(name)
	u.SetLabels(labels)
	u.Object["spec"] = map[string]any{}
	mustCreate(t, hc, u)
	return u
}

func getSource(t *testing.T, hc client.Client, gvk schema.GroupVersionKind, ns, name string) *unstructured.Unstructured {
	t.Helper()
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(gvk)
	if err := hc.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: name}, u); err != nil {
		t.Fatal(err)
	}
	return u
}

func setSourceLabel(t *testing.T, hc client.Client, gvk schema.GroupVersionKind, ns, name, key, value string) {
	t.Helper()
	u := getSource(t, hc, gvk, ns, name)
	labels := u.GetLabels()
	labels[key] = value
	u.SetLabels(labels)
	if err := hc.Update(context.Background(), u); err != nil {
		t.Fatal(err)
	}
}

// setAccessProvider writes the profile's status as a cluster manager does:
// a provider the policy does not use, then Panorama's.
func setAccessProvider(t *testing.T, hc client.Client, profile *unstructured.Unstructured, server string, ca []byte) {
	t.Helper()
	profile.Object["status"] = map[string]any{"accessProviders": []any{
		map[string]any{"name": "other", "cluster": map[string]any{"server": "https://127.0.0.1:1"}},
		map[string]any{"name": "panorama", "cluster": map[string]any{"server": server, "certificate-authority-data": base64.StdEncoding.EncodeToString(ca)}},
	}}
	if err := hc.Status().Update(context.Background(), profile); err != nil {
		t.Fatal(err)
	}
}

// checkRecord checks that c records its source and is controlled by its
// policy.
func checkRecord(t *testing.T, c *clusterv1alpha1.Cluster, policy, source string, uid any) {
	t.Helper()
	ref := metav1.GetControllerOf(c)
	if c.Labels[clusterv1alpha1.LabelImportPolicy] != policy || c.Annotations[clusterv1alpha1.AnnotationImportSource] != source ||
		c.Annotations[clusterv1alpha1.AnnotationImportSourceUID] != fmt.Sprint(uid) ||
		ref == nil || ref.Kind != "ClusterImportPolicy" || ref.Name != policy {
		t.Errorf("imported Cluster's record: labels %v annotations %v owner %+v; want policy %s, source %s uid %v", c.Labels, c.Annotations, ref, policy, source, uid)
	}
}

func waitPolicy(t *testing.T, hc client.Client, name string, check func(*clusterv1alpha1.ClusterImportPolicy) error) {
	t.Helper()
	eventually(t, func() error {
		var p clusterv1alpha1.ClusterImportPolicy
		if err := hc.Get(context.Background(), client.ObjectKey{Name: name}, &p); err != nil {
			return err
		}
		if p.Status.ObservedGeneration != p.Generation {
			return fmt.Errorf("status of generation %d, policy at %d", p.Status.ObservedGeneration, p.Generation)
		}
		return check(&p)
	})
}

func conditionReason(reason string) func(*clusterv1alpha1.ClusterImportPolicy) error {
	return func(p *clusterv1alpha1.ClusterImportPolicy) error {
		if c := meta.FindStatusCondition(p.Status.Conditions, clusterv1alpha1.ConditionImported); c == nil || c.Reason != reason {
			return fmt.Errorf("condition %+v, want reason %s", c, reason)
		}
		return nil
	}
}

func waitGone(t *testing.T, hc client.Client, name string) {
	t.Helper()
	eventually(t, func() error {
		var c clusterv1alpha1.Cluster
		if err := hc.Get(context.Background(), client.ObjectKey{Name: name}, &c); !apierrors.IsNotFound(err) {
			return fmt.Errorf("cluster %s still there (%v), finalizers %v", name, err, c.Finalizers)
		}
		return nil
	})
}
