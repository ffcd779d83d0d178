package controllers_test

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"sigs.k8s.io/controller-runtime/pkg/client"

	clusterv1alpha1 "github.com/panorama-io/panorama/apis/cluster/v1alpha1"
	"github.com/panorama-io/panorama/controllers/synchronizer"
	"github.com/panorama-io/panorama/storage"
	"github.com/panorama-io/panorama/storage/storagetest"
	"github.com/panorama-io/panorama/test/testenv"
)

// TestFilterRefusedByHost: the host refuses, with 422 as it creates the
// object, a filter the synchronizers could not apply, in a Cluster's
// syncResources and a ClusterSyncResources alike, and takes a valid one.
func TestFilterRefusedByHost(t *testing.T) {
	host := testenv.Start(t)
	hc := hostClient(t, host)
	ctx := context.Background()
	cluster := func(name string, sel clusterv1alpha1.GroupResources) *clusterv1alpha1.Cluster {
		sel.Group, sel.Resources = "", []string{"configmaps"}
		return &clusterv1alpha1.Cluster{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: clusterv1alpha1.ClusterSpec{
			APIServer: "https://member.example", SyncResources: []clusterv1alpha1.GroupResources{sel},
		}}
	}
	expr := func(op metav1.LabelSelectorOperator, key clusterv1alpha1.LabelKey, values ...clusterv1alpha1.LabelValue) *clusterv1alpha1.LabelSelector {
		return &clusterv1alpha1.LabelSelector{MatchExpressions: []clusterv1alpha1.LabelSelectorRequirement{{Key: key, Operator: op, Values: values}}}
	}
	for name, sel := range map[string]clusterv1alpha1.GroupResources{
		"both-namespace-lists": {Namespaces: []string{"a"}, ExcludeNamespaces: []string{"b"}},
		"bad-namespace":        {Namespaces: []string{"Not_A_Namespace"}},
		"bad-operator":         {LabelSelector: expr("Like", "tier", "x")},
		"in-without-values":    {LabelSelector: expr(metav1.LabelSelectorOpIn, "tier")},
		"exists-with-values":   {LabelSelector: expr(metav1.LabelSelectorOpExists, "tier", "x")},
		"bad-key":              {LabelSelector: expr(metav1.LabelSelectorOpExists, "not a key")},
		"bad-value":            {LabelSelector: &clusterv1alpha1.LabelSelector{MatchLabels: map[string]clusterv1alpha1.LabelValue{"tier": "not a value"}}},
		"identity-dropped":     {DropFields: []clusterv1alpha1.FieldPath{"metadata.name"}},
		"identity-bracketed":   {DropFields: []clusterv1alpha1.FieldPath{"metadata[namespace]"}},
		"bad-path":             {DropFields: []clusterv1alpha1.FieldPath{"spec..template"}},
		"unclosed-key":         {DropFields: []clusterv1alpha1.FieldPath{"metadata.annotations[a"}},
		"bad-match-labels-key": {LabelSelector: &clusterv1alpha1.LabelSelector{MatchLabels: map[string]clusterv1alpha1.LabelValue{"a/b/c": "x"}}},
	} {
		err := hc.Create(ctx, cluster(name, sel))
		if !apierrors.IsInvalid(err) {
			t.Errorf("Cluster with %s: %v, want 422 Invalid", name, err)
		}
		err = hc.Create(ctx, &clusterv1alpha1.ClusterSyncResources{ObjectMeta: metav1.ObjectMeta{Name: name},
			Spec: clusterv1alpha1.ClusterSyncResourcesSpec{SyncResources: cluster(name, sel).Spec.SyncResources}})
		if !apierrors.IsInvalid(err) {
			t.Errorf("ClusterSyncResources with %s: %v, want 422 Invalid", name, err)
		}
	}
	mustCreate(t, hc, cluster("valid", clusterv1alpha1.GroupResources{
		ExcludeNamespaces: []string{"kube-system"},
		LabelSelector:     &clusterv1alpha1.LabelSelector{MatchLabels: map[string]clusterv1alpha1.LabelValue{"example.com/tier": "front"}, MatchExpressions: []clusterv1alpha1.LabelSelectorRequirement{{Key: "app", Operator: metav1.LabelSelectorOpIn, Values: []clusterv1alpha1.LabelValue{"web", "api"}}}},
		DropFields:        []clusterv1alpha1.FieldPath{"status", "metadata.managedFields", "metadata.annotations[kubectl.kubernetes.io/last-applied-configuration]", "spec.template.metadata"},
	}))
}

// TestFilterStatus: a Cluster's filters reach its synchronizers through
// the controller, a named resource's over that of a "*", and its status
// shows each filter in force, a cluster-scoped resource's namespaces
// ignored, and what a changed filter removed.
func TestFilterStatus(t *testing.T) {
	host := testenv.Start(t)
	m := startMember(t)
	store := storagetest.Backends()[0].Open(t)
	hc := hostClient(t, host)
	for _, ns := range []string{"team", "other"} {
		createNamespace(t, m, ns)
	}
	for i := range 2 {
		createFilteredConfigMap(t, m, "team", fmt.Sprintf("cm-%d", i), "front")
	}
	createFilteredConfigMap(t, m, "other", "cm-0", "front")
	startManager(t, host, store)
	mustCreate(t, hc, &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: controllerNamespace, Name: "east", Annotations: map[string]string{clusterv1alpha1.AnnotationCredentialClusters: "east"}},
		Data:       map[string][]byte{"kubeconfig": kubeconfigVia(t, m)},
	})
	c := &clusterv1alpha1.Cluster{ObjectMeta: metav1.ObjectMeta{Name: "east"}, Spec: clusterv1alpha1.ClusterSpec{
		KubeconfigSecretRef: &clusterv1alpha1.SecretKeyRef{Namespace: controllerNamespace, Name: "east"},
		SyncResources: []clusterv1alpha1.GroupResources{
			{Group: "", Resources: []string{"*"}},
			{Group: "", Resources: []string{"configmaps", "namespaces"}, Namespaces: []string{"team"}},
		},
	}}
	mustCreate(t, hc, c)
	filtered := func(wantFilter map[string]string, configMaps, removed int64) {
		t.Helper()
		waitCluster(t, hc, "east", func(c *clusterv1alpha1.Cluster) error {
			got := map[string]string{}
			for _, r := range c.Status.SyncResources {
				if _, ok := wantFilter[r.Resource]; ok {
					got[r.Resource] = r.Filter
				}
				if r.Resource == "configmaps" && (r.State != clusterv1alpha1.SyncStateSynced || r.Count != configMaps || r.LastListRemovedCount != removed) {
					return fmt.Errorf("configmaps: %s, %d objects, %d removed; want synced, %d and %d", r.State, r.Count, r.LastListRemovedCount, configMaps, removed)
				}
			}
			if !maps.Equal(got, wantFilter) {
				return fmt.Errorf("filters in force %q, want %q", got, wantFilter)
			}
			return nil
		})
	}
	filtered(map[string]string{"configmaps": "namespaces=team", "namespaces": "namespaces ignored: cluster-scoped", "pods": ""}, 2, 0)
	waitFiltered(t, store, m, func(u *unstructured.Unstructured) bool { return u.GetNamespace() == "team" })

	if err := hc.Get(context.Background(), client.ObjectKeyFromObject(c), c); err != nil {
		t.Fatal(err)
	}
	// A patch of the spec alone: the controller writes the status meanwhile.
	patch := client.MergeFrom(c.DeepCopy())
	c.Spec.SyncResources[1].Namespaces = []string{"other"}
	if err := hc.Patch(context.Background(), c, patch); err != nil {
		t.Fatal(err)
	}
	filtered(map[string]string{"configmaps": "namespaces=other"}, 1, 2)
	waitFiltered(t, store, m, func(u *unstructured.Unstructured) bool { return u.GetNamespace() == "other" })
}

// filterStep is one filter of TestFilterConverges and the reference it
// is checked against: which of the member's ConfigMaps it keeps, tested
// object by object, as plainly as can be.
type filterStep struct {
	name string
	sel  clusterv1alpha1.GroupResources
	keep func(u *unstructured.Unstructured) bool
}

// TestFilterConverges syncs a real member's ConfigMaps on each database
// under a filter, then under changed ones, and checks after each that
// storage holds exactly what a brute-force reference keeps of the
// member's objects (nothing extra, nothing missing, at the member's
// resourceVersions), without the fields dropped; that a change of what
// is listed rewrites none of the objects kept under both filters; and that
// the watch keeps to the filter.
func TestFilterConverges(t *testing.T) {
	m := startMember(t)
	client, err := synchronizer.NewClient(m.env.Config)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	for _, b := range storagetest.Backends() {
		t.Run(b.Name, func(t *testing.T) {
			store := &countingStore{Interface: b.Open(t)}
			// Each database its own namespaces of the one member.
			a, bb, c := b.Name+"-a", b.Name+"-b", b.Name+"-c"
			for _, ns := range []string{a, bb, c} {
				createNamespace(t, m, ns)
				for i := range 6 {
					createFilteredConfigMap(t, m, ns, fmt.Sprintf("cm-%d", i), []string{"front", "back", "none"}[i%3])
				}
			}
			notes := clusterv1alpha1.FieldPath("metadata.annotations[example.com/notes]")
			steps := []filterStep{
				{"namespaces and labels", clusterv1alpha1.GroupResources{
					Namespaces:    []string{a, bb},
					LabelSelector: &clusterv1alpha1.LabelSelector{MatchLabels: map[string]clusterv1alpha1.LabelValue{"tier": "front"}},
					DropFields:    []clusterv1alpha1.FieldPath{notes, "data"},
				}, func(u *unstructured.Unstructured) bool {
					return (u.GetNamespace() == a || u.GetNamespace() == bb) && u.GetLabels()["tier"] == "front"
				}},
				{"excluded namespaces and a set of labels", clusterv1alpha1.GroupResources{
					ExcludeNamespaces: []string{a},
					LabelSelector: &clusterv1alpha1.LabelSelector{MatchExpressions: []clusterv1alpha1.LabelSelectorRequirement{
						{Key: "tier", Operator: metav1.LabelSelectorOpIn, Values: []clusterv1alpha1.LabelValue{"front", "back"}},
					}},
					DropFields: []clusterv1alpha1.FieldPath{notes, "data"},
				}, func(u *unstructured.Unstructured) bool {
					tier := u.GetLabels()["tier"]
					return u.GetNamespace() != a && (tier == "front" || tier == "back")
				}},
			}
			p := synchronizer.NewPool(store, synchronizer.Options{FlushInterval: 20 * time.Millisecond}, func(string) {})
			t.Cleanup(p.StopAll)
			ensure := func(sel clusterv1alpha1.GroupResources) {
				t.Helper()
				f, err := synchronizer.NewFilter(sel)
				if err != nil {
					t.Fatal(err)
				}
				res := synchronizer.Resource{Resource: storage.Resource{GVR: configMapsGVR, Kind: "ConfigMap", Namespaced: true}, Filter: f.For(true)}
				if err := p.Ensure(ctx, "east", "id", storage.Unfenced, client, synchronizer.Selection{Resources: []synchronizer.Resource{res}}); err != nil {
					t.Fatal(err)
				}
			}

			// The first filter, then the watch under it.
			ensure(steps[0].sel)
			first := waitFiltered(t, store, m, steps[0].keep)
			// Synced once both namespaces are listed, each list counting
			// its own with what the other stored.
			eventually(t, func() error {
				if st := statusOf(t, p); st.State != clusterv1alpha1.SyncStateSynced || st.Count != int64(len(first)) {
					return fmt.Errorf("status %s, %d objects; want synced, %d", st.State, st.Count, len(first))
				}
				return nil
			})
			eventually(t, func() error { return droppedIn(store, a, true) })
			createFilteredConfigMap(t, m, a, "added-front", "front")
			createFilteredConfigMap(t, m, c, "added-front", "front") // a namespace not listed
			relabel(t, m, bb, "cm-0", "back")                        // out of the selector: deleted
			waitFiltered(t, store, m, steps[0].keep)
			before := revisions(t, store)
			store.reset()

			// A changed filter: what it no longer keeps goes, what it now
			// keeps comes, the rest is not written again.
			ensure(steps[1].sel)
			want := waitFiltered(t, store, m, steps[1].keep)
			after := revisions(t, store)
			upserts := store.upserts()
			kept := 0
			for k, rev := range before {
				if r, ok := after[k]; ok {
					kept++
					if r != rev || upserts[k] != 0 {
						t.Errorf("%s/%s kept under both filters was written again: %d upserts sent, revision %d, then %d", k.Namespace, k.Name, upserts[k], rev, r)
					}
				}
			}
			if kept == 0 {
				t.Fatal("no object kept under both filters: the test proves nothing")
			}
			removed := 0
			for k := range before {
				if _, ok := after[k]; !ok {
					removed++
				}
			}
			st := statusOf(t, p)
			if st.Count != int64(len(want)) || st.LastListRemoved != int64(removed) {
				t.Errorf("status counts %d objects, %d removed; want %d and %d", st.Count, st.LastListRemoved, len(want), removed)
			}
			// The field selector keeps the watch's events out too: of two
			// objects created in turn, the excluded one first, the second
			// arrives once the first would have.
			createFilteredConfigMap(t, m, a, "late-front", "front")
			createFilteredConfigMap(t, m, bb, "late-front", "front")
			waitFiltered(t, store, m, steps[1].keep)
			eventually(t, func() error { return droppedIn(store, bb, true) })

			// Fields no longer dropped: every object is rewritten in place.
			want = waitFiltered(t, store, m, steps[1].keep)
			since := revision(t, store)
			sel := steps[1].sel
			sel.DropFields = nil
			ensure(sel)
			eventually(t, func() error { return droppedIn(store, "", false) })
			rewrittenOnce(t, store, since, want)

			// Fields dropped again, by a synchronizer of another process:
			// it knows nothing of the filter before, and rewrites by what
			// is stored.
			p.StopAll()
			p = synchronizer.NewPool(store, synchronizer.Options{FlushInterval: 20 * time.Millisecond}, func(string) {})
			t.Cleanup(p.StopAll)
			since = revision(t, store)
			ensure(steps[1].sel)
			eventually(t, func() error { return droppedIn(store, "", true) })
			rewrittenOnce(t, store, since, want)
			waitFiltered(t, store, m, steps[1].keep)
		})
	}
}

// createFilteredConfigMap creates a ConfigMap with data, a notes
// annotation and another, and the label tier unless tier is "none".
func createFilteredConfigMap(t *testing.T, m *member, ns, name, tier string) {
	t.Helper()
	cm := &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Annotations: map[string]string{"example.com/notes": "private", "keep": "yes"}},
		Data:       map[string]string{"k": "v"},
	}
	if tier != "none" {
		cm.Labels = map[string]string{"tier": tier}
	}
	if _, err := m.kube.CoreV1().ConfigMaps(ns).Create(context.Background(), cm, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
}

func relabel(t *testing.T, m *member, ns, name, tier string) {
	t.Helper()
	patch := fmt.Sprintf(`{"metadata":{"labels":{"tier":%q}}}`, tier)
	if _, err := m.kube.CoreV1().ConfigMaps(ns).Patch(context.Background(), name, types.MergePatchType, []byte(patch), metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
}

// waitFiltered waits until storage holds exactly the member's ConfigMaps
// that keep keeps, at their resourceVersions, and returns them.
func waitFiltered(t *testing.T, store storage.Interface, m *member, keep func(*unstructured.Unstructured) bool) map[storage.NamespacedName]string {
	t.Helper()
	want := map[storage.NamespacedName]string{}
	eventually(t, func() error {
		list, err := m.dyn.Resource(configMapsGVR).List(context.Background(), metav1.ListOptions{})
		if err != nil {
			return err
		}
		clear(want)
		for i := range list.Items {
			if u := &list.Items[i]; keep(u) {
				want[storage.NamespacedName{Namespace: u.GetNamespace(), Name: u.GetName()}] = u.GetResourceVersion()
			}
		}
		got, err := store.MemberVersions(context.Background(), "east", configMapsGVR)
		if err != nil {
			return err
		}
		if !maps.Equal(want, got) {
			return fmt.Errorf("the filter keeps %d objects, storage holds %d; differing: %v", len(want), len(got), difference(want, got))
		}
		return nil
	})
	if len(want) == 0 {
		t.Fatal("the filter keeps nothing: the test proves nothing")
	}
	return want
}

// storedConfigMaps are the ConfigMaps stored of east.
func storedConfigMaps(ctx context.Context, store storage.Interface) ([]storage.Object, error) {
	page, err := store.List(ctx, &storage.ListQuery{GVR: configMapsGVR, Clusters: []string{"east"}})
	if err != nil {
		return nil, err
	}
	return page.Objects, nil
}

// revisions are the storage revisions of the stored ConfigMaps.
func revisions(t *testing.T, store storage.Interface) map[storage.NamespacedName]int64 {
	t.Helper()
	objects, err := storedConfigMaps(context.Background(), store)
	if err != nil {
		t.Fatal(err)
	}
	out := map[storage.NamespacedName]int64{}
	for _, o := range objects {
		out[storage.NamespacedName{Namespace: o.Namespace, Name: o.Name}] = o.Revision
	}
	return out
}

// droppedIn checks the ConfigMaps stored of namespace ns (all when ""):
// without data and the notes annotation, and marked, when dropped, with
// them and unmarked otherwise, and with the other annotation always.
func droppedIn(store storage.Interface, ns string, dropped bool) error {
	objects, err := storedConfigMaps(context.Background(), store)
	if err != nil {
		return err
	}
	seen := 0
	for _, o := range objects {
		if ns != "" && o.Namespace != ns {
			continue
		}
		seen++
		var cm corev1.ConfigMap
		if err := json.Unmarshal(o.Data, &cm); err != nil {
			return err
		}
		_, notes := cm.Annotations["example.com/notes"]
		_, marked := cm.Labels[synchronizer.DroppedFieldsLabel]
		if (cm.Data != nil) == dropped || notes == dropped || marked != dropped || cm.Annotations["keep"] != "yes" {
			return fmt.Errorf("%s/%s stored as %s: fields dropped should be %v", o.Namespace, o.Name, o.Data, dropped)
		}
	}
	if seen == 0 {
		return fmt.Errorf("nothing stored of %s", ns)
	}
	return nil
}

// revision is the revision storage has reached.
func revision(t *testing.T, store storage.Interface) int64 {
	t.Helper()
	rev, _, err := store.Revision(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return rev
}

// rewrittenOnce checks the log after revision since: one MODIFIED of
// each of the ConfigMaps want, nothing else of them, no DELETED, which
// would have shown watchers an object gone that the member has.
func rewrittenOnce(t *testing.T, store storage.Interface, since int64, want map[storage.NamespacedName]string) {
	t.Helper()
	changes, _, err := store.Changes(context.Background(), since, 10*len(want)+10)
	if err != nil {
		t.Fatal(err)
	}
	modified := map[storage.NamespacedName]int{}
	for _, c := range changes {
		k := storage.NamespacedName{Namespace: c.Key.Namespace, Name: c.Key.Name}
		switch {
		case c.Key.GVR != configMapsGVR:
		case c.Type != watch.Modified:
			t.Errorf("%s/%s logged %s, want only MODIFIED", k.Namespace, k.Name, c.Type)
		case want[k] == "":
			t.Errorf("%s/%s, not kept by the filter, logged %s", k.Namespace, k.Name, c.Type)
		default:
			modified[k]++
		}
	}
	for k := range want {
		if modified[k] != 1 {
			t.Errorf("%s/%s rewritten %d times, want once", k.Namespace, k.Name, modified[k])
		}
	}
}

// statusOf is the status of the one synchronizer of east.
func statusOf(t *testing.T, p *synchronizer.Pool) synchronizer.Status {
	t.Helper()
	for _, st := range p.Statuses("east") {
		return st
	}
	t.Fatal("no synchronizer of east")
	return synchronizer.Status{}
}

// countingStore counts the upserts sent to storage, by object, whether
// or not storage skips them.
type countingStore struct {
	storage.Interface
	mu   sync.Mutex
	sent map[storage.NamespacedName]int
}

func (s *countingStore) ForCluster(cluster string, epoch int64) storage.ClusterWriter {
	return countingWriter{s.Interface.ForCluster(cluster, epoch), s}
}

func (s *countingStore) reset() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.sent = map[storage.NamespacedName]int{}
}

func (s *countingStore) upserts() map[storage.NamespacedName]int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return maps.Clone(s.sent)
}

type countingWriter struct {
	storage.ClusterWriter
	store *countingStore
}

func (w countingWriter) Apply(ctx context.Context, gvr schema.GroupVersionResource, changes []storage.Change) (int64, error) {
	w.store.mu.Lock()
	for _, c := range changes {
		if c.Object != nil && w.store.sent != nil {
			w.store.sent[storage.NamespacedName{Namespace: c.Namespace, Name: c.Name}]++
		}
	}
	w.store.mu.Unlock()
	return w.ClusterWriter.Apply(ctx, gvr, changes)
}
