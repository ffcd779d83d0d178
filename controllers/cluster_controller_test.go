package controllers_test

import (
	"context"
	"fmt"
	"maps"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/tools/clientcmd"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/config"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	"sigs.k8s.io/controller-runtime/pkg/metrics"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	clusterv1alpha1 "github.com/panorama-io/panorama/apis/cluster/v1alpha1"
	"github.com/panorama-io/panorama/controllers"
	"github.com/panorama-io/panorama/controllers/synchronizer"
	"github.com/panorama-io/panorama/storage"
	"github.com/panorama-io/panorama/storage/storagetest"
	"github.com/panorama-io/panorama/test/testenv"
)

var (
	podsGVR        = schema.GroupVersionResource{Version: "v1", Resource: "pods"}
	namespacesGVR  = schema.GroupVersionResource{Version: "v1", Resource: "namespaces"}
	deploymentsGVR = schema.GroupVersionResource{Group: "apps", Version: "v1", Resource: "deployments"}
	widgetsGVR     = schema.GroupVersionResource{Group: "example.com", Version: "v1", Resource: "widgets"}
	gadgetsGVR     = schema.GroupVersionResource{Group: "example.org", Version: "v2", Resource: "gadgets"}
)

const timeout = 90 * time.Second

func newScheme() *runtime.Scheme {
	s := runtime.NewScheme()
	_ = clientgoscheme.AddToScheme(s)
	_ = clusterv1alpha1.AddToScheme(s)
	return s
}

// hostClient is a client of the host's API for the tests' own objects.
func hostClient(t testing.TB, host *testenv.Env) client.Client {
	t.Helper()
	hc, err := client.New(host.Config, client.Options{Scheme: newScheme()})
	if err != nil {
		t.Fatal(err)
	}
	return hc
}

// member is a member cluster under test.
type member struct {
	env   *testenv.Env
	dyn   dynamic.Interface
	kube  kubernetes.Interface
	proxy *testenv.Proxy
}

func startMember(t *testing.T) *member {
	env := testenv.Start(t, testenv.WithoutCRDs())
	u, err := url.Parse(env.Config.Host)
	if err != nil {
		t.Fatal(err)
	}
	return &member{env: env, dyn: dynamic.NewForConfigOrDie(env.Config), kube: kubernetes.NewForConfigOrDie(env.Config), proxy: testenv.NewProxy(t, u.Host)}
}

// startManager runs the controller manager in process, as the shipped
// ServiceAccount, with the tests' options changed by opts; the returned
// func stops it and waits until it has.
func startManager(t *testing.T, host *testenv.Env, store storage.Interface, opts ...func(*controllers.Options)) func() {
	ctx, cancel := context.WithCancel(context.Background())
	mgr, err := ctrl.NewManager(shippedIdentity(t, host), ctrl.Options{
		Scheme:                 newScheme(),
		Metrics:                metricsserver.Options{BindAddress: "0"},
		HealthProbeBindAddress: "0",
		// A restarted manager registers the same controller name again.
		Controller: config.Controller{SkipNameValidation: ptr(true)},
		Logger:     zap.New(zap.UseDevMode(true), zap.WriteTo(testWriter{t})),
	})
	if err != nil {
		t.Fatal(err)
	}
	o := controllers.Options{
		HealthInterval:  2 * time.Second,
		SecretNamespace: controllerNamespace,
		Sync:            synchronizer.Options{FlushInterval: 20 * time.Millisecond},
	}
	for _, f := range opts {
		f(&o)
	}
	if err := controllers.SetupWithManager(mgr, store, o); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- mgr.Start(ctx) }()
	stopped := false
	stop := func() {
		if stopped {
			return
		}
		stopped = true
		cancel()
		if err := <-done; err != nil {
			t.Errorf("manager: %v", err)
		}
	}
	t.Cleanup(stop)
	return stop
}

type testWriter struct{ t *testing.T }

func (w testWriter) Write(p []byte) (int, error) {
	if testing.Verbose() {
		w.t.Log(strings.TrimSpace(string(p)))
	}
	return len(p), nil
}

// TestClusterSync runs the controller manager against a real host and two
// real member clusters and checks, after each kind of disturbance, that
// storage holds exactly what the members hold.
func TestClusterSync(t *testing.T) {
	host := testenv.Start(t)
	east, west := startMember(t), startMember(t)
	store := storagetest.Backends()[1].Open(t) // MariaDB: many synchronizers write at once
	hc := hostClient(t, host)
	ctx := context.Background()

	// Member content before Panorama starts.
	createNamespace(t, east, "web")
	for i := range 20 {
		createPod(t, east, "web", fmt.Sprintf("web-%d", i), map[string]string{"app": "web"})
	}
	for i := range 5 {
		createDeployment(t, east, "web", fmt.Sprintf("dep-%d", i))
	}
	createCRD(t, east, "example.com", "v1", "widgets", "Widget")
	for i := range 3 {
		createCustom(t, east, widgetsGVR, "Widget", "web", fmt.Sprintf("w-%d", i))
	}
	for i := range 10 {
		createPod(t, west, "default", fmt.Sprintf("api-%d", i), nil)
	}
	for i := range 2 {
		createDeployment(t, west, "default", fmt.Sprintf("api-%d", i))
	}

	// east: a kubeconfig Secret; west: apiServer + caData + a service account
	// token, and its resources from a shared ClusterSyncResources.
	mustCreate(t, hc, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "panorama-system"}})
	mustCreate(t, hc, &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: "panorama-system", Name: "east", Annotations: map[string]string{clusterv1alpha1.AnnotationCredentialClusters: "east"}},
		Data:       map[string][]byte{"kubeconfig": kubeconfigVia(t, east)},
	})
	mustCreate(t, hc, &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: "panorama-system", Name: "west-token", Annotations: map[string]string{
			clusterv1alpha1.AnnotationCredentialClusters: "west", clusterv1alpha1.AnnotationCredentialServer: "https://" + west.proxy.Addr,
		}},
		Data: map[string][]byte{"token": []byte(serviceAccountToken(t, west))},
	})
	mustCreate(t, hc, &clusterv1alpha1.ClusterSyncResources{
		ObjectMeta: metav1.ObjectMeta{Name: "common"},
		Spec: clusterv1alpha1.ClusterSyncResourcesSpec{SyncResources: []clusterv1alpha1.GroupResources{
			{Group: "", Resources: []string{"pods"}}, {Group: "apps", Versions: []string{"*"}, Resources: []string{"deployments"}},
		}},
	})
	mustCreate(t, hc, &clusterv1alpha1.Cluster{
		ObjectMeta: metav1.ObjectMeta{Name: "east"},
		Spec: clusterv1alpha1.ClusterSpec{
			KubeconfigSecretRef: &clusterv1alpha1.SecretKeyRef{Namespace: "panorama-system", Name: "east"},
			SyncResources: []clusterv1alpha1.GroupResources{
				{Group: "", Resources: []string{"pods", "namespaces"}},
				{Group: "apps", Resources: []string{"deployments"}},
			},
			SyncAllCustomResources: true,
		},
	})
	mustCreate(t, hc, &clusterv1alpha1.Cluster{
		ObjectMeta: metav1.ObjectMeta{Name: "west"},
		Spec: clusterv1alpha1.ClusterSpec{
			APIServer:        "https://" + west.proxy.Addr,
			CAData:           west.env.Config.CAData,
			TokenSecretRef:   &clusterv1alpha1.SecretKeyRef{Namespace: "panorama-system", Name: "west-token"},
			SyncResourcesRef: "common",
		},
	})
	stopManager := startManager(t, host, store)

	eastGVRs := []schema.GroupVersionResource{podsGVR, namespacesGVR, deploymentsGVR, widgetsGVR}
	westGVRs := []schema.GroupVersionResource{podsGVR, deploymentsGVR}
	t.Run("initial sync", func(t *testing.T) {
		waitConverged(t, store, "east", east, eastGVRs...)
		waitConverged(t, store, "west", west, westGVRs...)
		c := waitCluster(t, hc, "east", func(c *clusterv1alpha1.Cluster) error {
			if !meta.IsStatusConditionTrue(c.Status.Conditions, clusterv1alpha1.ConditionReady) ||
				!meta.IsStatusConditionTrue(c.Status.Conditions, clusterv1alpha1.ConditionSynced) {
				return fmt.Errorf("conditions %+v", c.Status.Conditions)
			}
			return nil
		})
		if c.Status.Version != "v1.37.2" || c.Status.SyncedResourceCount != 5 {
			t.Fatalf("east status: version %q, %d resources", c.Status.Version, c.Status.SyncedResourceCount)
		}
		counts := map[string]int64{}
		for _, r := range c.Status.SyncResources {
			counts[r.Resource] = r.Count
			if r.State != clusterv1alpha1.SyncStateSynced || r.LastSyncTime == nil {
				t.Fatalf("resource status %+v", r)
			}
		}
		if counts["pods"] != 20 || counts["deployments"] != 5 || counts["widgets"] != 3 {
			t.Fatalf("east counts %v", counts)
		}
		if !slices.ContainsFunc(c.Status.SyncResources, func(r clusterv1alpha1.ResourceSyncStatus) bool {
			return r.Resource == "namespaces" && !r.Namespaced && r.Kind == "Namespace"
		}) {
			t.Fatalf("namespaces status: %+v", c.Status.SyncResources)
		}
		waitCluster(t, hc, "west", func(c *clusterv1alpha1.Cluster) error {
			if !meta.IsStatusConditionTrue(c.Status.Conditions, clusterv1alpha1.ConditionSynced) || c.Status.SyncedResourceCount != 2 {
				return fmt.Errorf("west: %+v", c.Status)
			}
			return nil
		})
		// The sync metrics count what is stored.
		if v := gauge(t, "panorama_synced_objects", map[string]string{"cluster": "east", "resource": "pods"}); v != 20 {
			t.Fatalf("panorama_synced_objects{east,pods} = %v, want 20", v)
		}
		if v := gauge(t, "panorama_cluster_condition", map[string]string{"cluster": "east", "condition": "Ready"}); v != 1 {
			t.Fatalf("panorama_cluster_condition{east,Ready} = %v, want 1", v)
		}
		// Stored objects are stripped of what is not worth keeping.
		o, err := store.Get(ctx, storage.Key{Cluster: "east", GVR: podsGVR, Namespace: "web", Name: "web-0"})
		if err != nil {
			t.Fatal(err)
		}
		if strings.Contains(string(o.Data), "managedFields") || strings.Contains(string(o.Data), storage.LastAppliedAnnotation) {
			t.Fatalf("stored pod keeps managedFields or last-applied: %s", o.Data)
		}
	})

	t.Run("member changes", func(t *testing.T) {
		for i := range 3 {
			patchLabel(t, east, podsGVR, "web", fmt.Sprintf("web-%d", i), "tier", "front")
		}
		deleteObject(t, east, podsGVR, "web", "web-18")
		deleteObject(t, east, podsGVR, "web", "web-19")
		createPod(t, east, "web", "web-new-0", nil)
		createPod(t, east, "web", "web-new-1", nil)
		createCustom(t, east, widgetsGVR, "Widget", "web", "w-new")
		deleteObject(t, west, deploymentsGVR, "default", "api-1")
		waitConverged(t, store, "east", east, eastGVRs...)
		waitConverged(t, store, "west", west, westGVRs...)
	})

	t.Run("new CRD appears without restart", func(t *testing.T) {
		createCRD(t, east, "example.org", "v2", "gadgets", "Gadget")
		createCustom(t, east, gadgetsGVR, "Gadget", "web", "g-0")
		createCustom(t, east, gadgetsGVR, "Gadget", "web", "g-1")
		eastGVRs = append(eastGVRs, gadgetsGVR)
		waitConverged(t, store, "east", east, eastGVRs...)
	})

	t.Run("member outage", func(t *testing.T) {
		east.proxy.Down()
		waitCluster(t, hc, "east", func(c *clusterv1alpha1.Cluster) error {
			if cond := meta.FindStatusCondition(c.Status.Conditions, clusterv1alpha1.ConditionReady); cond == nil || cond.Reason != controllers.ReasonUnhealthy {
				return fmt.Errorf("ready condition %+v", cond)
			}
			return nil
		})
		// While Panorama cannot see it, the member changes, more than its
		// watch cache remembers, so a resumed watch may have to relist.
		for i := range 5 {
			deleteObject(t, east, podsGVR, "web", fmt.Sprintf("web-%d", 10+i))
		}
		for i := range 150 {
			name := fmt.Sprintf("churn-%d", i)
			createPod(t, east, "web", name, nil)
			deleteObject(t, east, podsGVR, "web", name)
		}
		createPod(t, east, "web", "after-outage", nil)
		east.proxy.Up(t)
		waitConverged(t, store, "east", east, eastGVRs...)
		waitCluster(t, hc, "east", func(c *clusterv1alpha1.Cluster) error {
			if !meta.IsStatusConditionTrue(c.Status.Conditions, clusterv1alpha1.ConditionReady) ||
				!meta.IsStatusConditionTrue(c.Status.Conditions, clusterv1alpha1.ConditionSynced) {
				return fmt.Errorf("conditions %+v", c.Status.Conditions)
			}
			return nil
		})
	})

	parent := t // the restarted manager outlives this subtest
	t.Run("controller restart", func(t *testing.T) {
		stopManager()
		before, _, err := store.Revision(ctx)
		if err != nil {
			t.Fatal(err)
		}
		deleteObject(t, east, podsGVR, "web", "web-5")
		deleteObject(t, east, podsGVR, "web", "web-6")
		patchLabel(t, east, podsGVR, "web", "web-7", "tier", "back")
		createPod(t, east, "web", "while-down", nil)
		stopManager = startManager(parent, host, store)
		waitConverged(t, store, "east", east, eastGVRs...)
		waitConverged(t, store, "west", west, westGVRs...)
		// Only the four changes were written: nothing unchanged was rewritten,
		// nothing was lost or doubled.
		var got []string
		eventually(t, func() error {
			events, _, err := store.Changes(ctx, before, 1000)
			if err != nil {
				return err
			}
			got = got[:0]
			for _, e := range events {
				got = append(got, fmt.Sprintf("%s %s %s/%s", e.Type, e.Key.Cluster, e.Key.GVR.Resource, e.Key.Name))
			}
			slices.Sort(got)
			if len(got) != 4 {
				return fmt.Errorf("%d events since restart: %v", len(got), got)
			}
			return nil
		})
		want := []string{"ADDED east pods/while-down", "DELETED east pods/web-5", "DELETED east pods/web-6", "MODIFIED east pods/web-7"}
		if !slices.Equal(got, want) {
			t.Fatalf("writes after restart:\n%v\nwant\n%v", got, want)
		}
	})

	t.Run("resource removed from syncResources", func(t *testing.T) {
		var c clusterv1alpha1.Cluster
		if err := hc.Get(ctx, client.ObjectKey{Name: "east"}, &c); err != nil {
			t.Fatal(err)
		}
		c.Spec.SyncResources = c.Spec.SyncResources[:1] // pods and namespaces only
		if err := hc.Update(ctx, &c); err != nil {
			t.Fatal(err)
		}
		eventually(t, func() error {
			v, err := store.MemberVersions(ctx, "east", deploymentsGVR)
			if err != nil || len(v) != 0 {
				return fmt.Errorf("east deployments still stored: %d (%v)", len(v), err)
			}
			return nil
		})
		if v, _ := store.MemberVersions(ctx, "west", deploymentsGVR); len(v) != 1 {
			t.Fatalf("west deployments: %v", v)
		}
		waitConverged(t, store, "east", east, podsGVR, namespacesGVR, widgetsGVR, gadgetsGVR)
	})

	t.Run("cluster deleted", func(t *testing.T) {
		if err := hc.Delete(ctx, &clusterv1alpha1.Cluster{ObjectMeta: metav1.ObjectMeta{Name: "west"}}); err != nil {
			t.Fatal(err)
		}
		eventually(t, func() error {
			var c clusterv1alpha1.Cluster
			if err := hc.Get(ctx, client.ObjectKey{Name: "west"}, &c); !apierrors.IsNotFound(err) {
				return fmt.Errorf("cluster still there: %v", err)
			}
			return nil
		})
		for _, gvr := range westGVRs {
			if v, err := store.MemberVersions(ctx, "west", gvr); err != nil || len(v) != 0 {
				t.Fatalf("west %s still stored: %d (%v)", gvr.Resource, len(v), err)
			}
		}
		// Its series are gone from /metrics, dashboards and alerts.
		eventually(t, func() error { return seriesOf(t, "west") })
		waitConverged(t, store, "east", east, podsGVR)
	})
}

// gauge reads the value of one series, a gauge's or a counter's, of the controller-runtime
// metrics registry, which /metrics serves.
func gauge(t *testing.T, name string, labels map[string]string) float64 {
	t.Helper()
	families, err := metrics.Registry.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range families {
		if f.GetName() != name {
			continue
		}
	series:
		for _, m := range f.GetMetric() {
			for _, l := range m.GetLabel() {
				if v, ok := labels[l.GetName()]; ok && v != l.GetValue() {
					continue series
				}
			}
			if c := m.GetCounter(); c != nil {
				return c.GetValue()
			}
			return m.GetGauge().GetValue()
		}
	}
	t.Fatalf("no series %s%v", name, labels)
	return 0
}

// waitConverged waits until storage holds exactly the member's objects of
// each resource, at the member's resourceVersions.
func waitConverged(t *testing.T, store storage.Interface, cluster string, m *member, gvrs ...schema.GroupVersionResource) {
	t.Helper()
	for _, gvr := range gvrs {
		waitConvergedIn(t, store, cluster, m, gvr, metav1.NamespaceAll)
	}
}

// waitConvergedIn waits until storage holds what the member has of gvr in
// namespace ns ("" for all), at the member's versions, and nothing else
// of gvr.
func waitConvergedIn(t *testing.T, store storage.Interface, cluster string, m *member, gvr schema.GroupVersionResource, ns string) {
	t.Helper()
	eventually(t, func() error {
		list, err := m.dyn.Resource(gvr).Namespace(ns).List(context.Background(), metav1.ListOptions{})
		if err != nil {
			return err
		}
		want := map[storage.NamespacedName]string{}
		for _, o := range list.Items {
			want[storage.NamespacedName{Namespace: o.GetNamespace(), Name: o.GetName()}] = o.GetResourceVersion()
		}
		got, err := store.MemberVersions(context.Background(), cluster, gvr)
		if err != nil {
			return err
		}
		if !maps.Equal(want, got) {
			return fmt.Errorf("%s %s: member has %d objects, storage %d; differing: %v", cluster, gvr, len(want), len(got), difference(want, got))
		}
		return nil
	})
}

func difference(a, b map[storage.NamespacedName]string) []string {
	var out []string
	for k, v := range a {
		if b[k] != v {
			out = append(out, fmt.Sprintf("%s/%s member=%s stored=%s", k.Namespace, k.Name, v, b[k]))
		}
	}
	for k, v := range b {
		if _, ok := a[k]; !ok {
			out = append(out, fmt.Sprintf("%s/%s member=- stored=%s", k.Namespace, k.Name, v))
		}
	}
	slices.Sort(out)
	return out[:min(len(out), 5)]
}

func waitCluster(t *testing.T, c client.Client, name string, check func(*clusterv1alpha1.Cluster) error) *clusterv1alpha1.Cluster {
	t.Helper()
	var cl clusterv1alpha1.Cluster
	eventually(t, func() error {
		if err := c.Get(context.Background(), client.ObjectKey{Name: name}, &cl); err != nil {
			return err
		}
		return check(&cl)
	})
	return &cl
}

func eventually(t *testing.T, f func() error) {
	t.Helper()
	testenv.Eventually(t, timeout, f)
}

func mustCreate(t *testing.T, c client.Client, o client.Object) {
	t.Helper()
	if err := c.Create(context.Background(), o); err != nil {
		t.Fatal(err)
	}
}

// kubeconfigVia is the member's admin kubeconfig, pointed at its proxy.
func kubeconfigVia(t *testing.T, m *member) []byte {
	cfg, err := clientcmd.LoadFromFile(m.env.Kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range cfg.Clusters {
		c.Server = "https://" + m.proxy.Addr
	}
	data, err := clientcmd.Write(*cfg)
	if err != nil {
		t.Fatal(err)
	}
	return data
}

// serviceAccountToken makes a read-only service account in the member and
// returns a token of it, as an operator would for Panorama.
func serviceAccountToken(t *testing.T, m *member) string {
	ctx := context.Background()
	sa, err := m.kube.CoreV1().ServiceAccounts("default").Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "panorama"}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	_, err = m.kube.RbacV1().ClusterRoles().Create(ctx, &rbacv1.ClusterRole{
		ObjectMeta: metav1.ObjectMeta{Name: "panorama-reader"},
		Rules: []rbacv1.PolicyRule{
			{APIGroups: []string{"*"}, Resources: []string{"*"}, Verbs: []string{"get", "list", "watch"}},
			{NonResourceURLs: []string{"/readyz", "/version", "/api", "/api/*", "/apis", "/apis/*"}, Verbs: []string{"get"}},
		},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	_, err = m.kube.RbacV1().ClusterRoleBindings().Create(ctx, &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "panorama-reader"},
		RoleRef:    rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "ClusterRole", Name: "panorama-reader"},
		Subjects:   []rbacv1.Subject{{Kind: "ServiceAccount", Namespace: "default", Name: sa.Name}},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	hour := int64(3600)
	tr, err := m.kube.CoreV1().ServiceAccounts("default").CreateToken(ctx, sa.Name, &authenticationv1.TokenRequest{
		Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: &hour},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return tr.Status.Token
}

func createNamespace(t *testing.T, m *member, name string) {
	t.Helper()
	if _, err := m.kube.CoreV1().Namespaces().Create(context.Background(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
}

func createPod(t *testing.T, m *member, ns, name string, labels map[string]string) {
	t.Helper()
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: labels,
			Annotations: map[string]string{storage.LastAppliedAnnotation: `{"big":"copy"}`}},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "nginx"}}},
	}
	if _, err := m.kube.CoreV1().Pods(ns).Create(context.Background(), pod, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
}

func createDeployment(t *testing.T, m *member, ns, name string) {
	t.Helper()
	u := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "apps/v1", "kind": "Deployment",
		"metadata": map[string]any{"name": name, "namespace": ns},
		"spec": map[string]any{
			"selector": map[string]any{"matchLabels": map[string]any{"app": name}},
			"template": map[string]any{
				"metadata": map[string]any{"labels": map[string]any{"app": name}},
				"spec":     map[string]any{"containers": []any{map[string]any{"name": "c", "image": "nginx"}}},
			},
		},
	}}
	if _, err := m.dyn.Resource(deploymentsGVR).Namespace(ns).Create(context.Background(), u, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
}

func createCRD(t *testing.T, m *member, group, version, plural, kind string) {
	t.Helper()
	crd := &apiextensionsv1.CustomResourceDefinition{
		ObjectMeta: metav1.ObjectMeta{Name: plural + "." + group},
		Spec: apiextensionsv1.CustomResourceDefinitionSpec{
			Group: group, Scope: apiextensionsv1.NamespaceScoped,
			Names: apiextensionsv1.CustomResourceDefinitionNames{Plural: plural, Kind: kind, ListKind: kind + "List", Singular: strings.ToLower(kind)},
			Versions: []apiextensionsv1.CustomResourceDefinitionVersion{{
				Name: version, Served: true, Storage: true,
				Schema: &apiextensionsv1.CustomResourceValidation{OpenAPIV3Schema: &apiextensionsv1.JSONSchemaProps{
					Type: "object", XPreserveUnknownFields: ptr(true),
				}},
			}},
		},
	}
	if err := envtest.CreateCRDs(m.env.Config, []*apiextensionsv1.CustomResourceDefinition{crd}); err != nil {
		t.Fatal(err)
	}
	if err := envtest.WaitForCRDs(m.env.Config, []*apiextensionsv1.CustomResourceDefinition{crd}, envtest.CRDInstallOptions{MaxTime: timeout, PollInterval: 100 * time.Millisecond}); err != nil {
		t.Fatal(err)
	}
}

func createCustom(t *testing.T, m *member, gvr schema.GroupVersionResource, kind, ns, name string) {
	t.Helper()
	u := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": gvr.GroupVersion().String(), "kind": kind,
		"metadata": map[string]any{"name": name, "namespace": ns},
		"spec":     map[string]any{"size": int64(len(name))},
	}}
	if _, err := m.dyn.Resource(gvr).Namespace(ns).Create(context.Background(), u, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
}

func patchLabel(t *testing.T, m *member, gvr schema.GroupVersionResource, ns, name, key, value string) {
	t.Helper()
	patch := fmt.Sprintf(`{"metadata":{"labels":{%q:%q}}}`, key, value)
	if _, err := m.dyn.Resource(gvr).Namespace(ns).Patch(context.Background(), name, "application/merge-patch+json", []byte(patch), metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
}

func deleteObject(t *testing.T, m *member, gvr schema.GroupVersionResource, ns, name string) {
	t.Helper()
	zero := int64(0)
	if err := m.dyn.Resource(gvr).Namespace(ns).Delete(context.Background(), name, metav1.DeleteOptions{GracePeriodSeconds: &zero}); err != nil {
		t.Fatal(err)
	}
}

func ptr[T any](v T) *T { return &v }
