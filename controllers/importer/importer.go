package importer

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/validation"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"

	clusterv1alpha1 "github.com/panorama-io/panorama/apis/cluster/v1alpha1"
)

// Reasons of the Imported condition.
const (
	ReasonImported           = "Imported"
	ReasonNotAllImported     = "NotAllImported"
	ReasonSourceNotInstalled = "SourceNotInstalled"
	ReasonInvalidSelector    = "InvalidSelector"
)

// maxNotImported caps status.notImported, so that a policy over a large
// inventory with a bad setting keeps a small status.
const maxNotImported = 50

// conflictRetry is how soon a reconcile that lost an update race runs again.
const conflictRetry = time.Second

// Options configure the Reconciler.
type Options struct {
	// SecretNamespace is the controller's namespace, where ClusterProfiles'
	// credential Secrets are.
	SecretNamespace string
	// RecheckInterval is how often a policy is tried again while its source
	// kind is not served or a source waits for its credential Secret.
	RecheckInterval time.Duration
}

// Reconciler keeps, for each ClusterImportPolicy, one Cluster per source it
// selects.
type Reconciler struct {
	client.Client
	// APIReader reads the credential Secrets uncached, as the Cluster
	// reconciler does: no cache of Secrets, which the controller may not
	// watch.
	APIReader client.Reader
	Options

	cache      cache.Cache
	mapper     meta.RESTMapper
	controller controller.Controller

	mu sync.Mutex
	// watched are the source kinds served and watched, by source.
	watched map[clusterv1alpha1.ImportSource]schema.GroupVersionKind
}

// SetupWithManager registers the import controller. The sources are
// watched once a policy needs them and the host serves them.
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager) error {
	r.cache, r.mapper = mgr.GetCache(), mgr.GetRESTMapper()
	r.watched = map[clusterv1alpha1.ImportSource]schema.GroupVersionKind{}
	c, err := ctrl.NewControllerManagedBy(mgr).
		For(&clusterv1alpha1.ClusterImportPolicy{}, builder.WithPredicates(predicate.GenerationChangedPredicate{})).
		// Clusters' status changes every health check and says nothing
		// about who holds a name.
		Watches(&clusterv1alpha1.Cluster{}, handler.EnqueueRequestsFromMapFunc(r.policiesOfCluster),
			builder.WithPredicates(predicate.Or[client.Object](predicate.GenerationChangedPredicate{}, predicate.LabelChangedPredicate{}, predicate.AnnotationChangedPredicate{}))).
		Named("clusterimport").
		Build(r)
	r.controller = c
	return err
}

// policiesOfCluster: the policy that imported a Cluster, or every policy
// for another Cluster, whose name one of them may want.
func (r *Reconciler) policiesOfCluster(ctx context.Context, o client.Object) []reconcile.Request {
	if p := o.GetLabels()[clusterv1alpha1.LabelImportPolicy]; p != "" {
		return []reconcile.Request{{NamespacedName: types.NamespacedName{Name: p}}}
	}
	return r.policies(ctx, "")
}

// policies lists the policies importing source ("" for all).
func (r *Reconciler) policies(ctx context.Context, src clusterv1alpha1.ImportSource) []reconcile.Request {
	var list clusterv1alpha1.ClusterImportPolicyList
	if err := r.List(ctx, &list); err != nil {
		log.FromContext(ctx).Error(err, "listing ClusterImportPolicies")
		return nil
	}
	var out []reconcile.Request
	for _, p := range list.Items {
		if src == "" || p.Spec.Source == src {
			out = append(out, reconcile.Request{NamespacedName: types.NamespacedName{Name: p.Name}})
		}
	}
	return out
}

// sourceGVK is the served version of src's kind, watched from the first
// call that finds it served; ok is false while the host does not serve it.
func (r *Reconciler) sourceGVK(src clusterv1alpha1.ImportSource) (gvk schema.GroupVersionKind, ok bool, err error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if gvk, ok := r.watched[src]; ok {
		return gvk, true, nil
	}
	kind := sourceKinds[src]
	// The mapper asks discovery again for a group it does not know, so a
	// kind installed after start is found on a later call.
	m, err := r.mapper.RESTMapping(kind.GroupKind, kind.versions...)
	if meta.IsNoMatchError(err) {
		return gvk, false, nil
	} else if err != nil {
		return gvk, false, err
	}
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(m.GroupVersionKind)
	if err := r.controller.Watch(source.Kind[client.Object](r.cache, u, handler.EnqueueRequestsFromMapFunc(
		func(ctx context.Context, _ client.Object) []reconcile.Request { return r.policies(ctx, src) }))); err != nil {
		return gvk, false, err
	}
	r.watched[src] = m.GroupVersionKind
	return m.GroupVersionKind, true, nil
}

// Reconcile implements reconcile.Reconciler.
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	var p clusterv1alpha1.ClusterImportPolicy
	if err := r.Get(ctx, req.NamespacedName, &p); apierrors.IsNotFound(err) {
		// The garbage collector deletes them too, by owner reference; this
		// does without it, and for Clusters of a policy deleted and made
		// again before it ran.
		return ctrl.Result{}, r.deleteImports(ctx, req.Name, nil)
	} else if err != nil {
		return ctrl.Result{}, err
	}
	if !p.DeletionTimestamp.IsZero() {
		return ctrl.Result{}, nil
	}
	status := p.Status.DeepCopy()
	result, err := r.importSources(ctx, &p, status)
	status.ObservedGeneration = p.Generation
	if !equality.Semantic.DeepEqual(status, &p.Status) {
		p.Status = *status
		if uerr := r.Status().Update(ctx, &p); apierrors.IsConflict(uerr) {
			return ctrl.Result{RequeueAfter: conflictRetry}, err
		} else if uerr != nil {
			return ctrl.Result{}, errors.Join(err, uerr)
		}
	}
	return result, err
}

// importSources makes the policy's Clusters equal to what it selects, and
// records the outcome in status.
func (r *Reconciler) importSources(ctx context.Context, p *clusterv1alpha1.ClusterImportPolicy, status *clusterv1alpha1.ClusterImportPolicyStatus) (ctrl.Result, error) {
	recheck := ctrl.Result{RequeueAfter: r.RecheckInterval}
	gvk, served, err := r.sourceGVK(p.Spec.Source)
	if err != nil {
		return ctrl.Result{}, err
	}
	if !served {
		// What was imported stays: the kind may be back soon, and a
		// discovery hiccup must not delete a fleet.
		setCondition(status, false, ReasonSourceNotInstalled, fmt.Sprintf("the host serves no %s; checked again every %s", sourceKinds[p.Spec.Source].GroupKind, r.RecheckInterval))
		return recheck, nil
	}
	selector, err := labels.Everything(), error(nil) // no selector selects all; LabelSelectorAsSelector(nil) none
	if p.Spec.Selector != nil {
		selector, err = metav1.LabelSelectorAsSelector(p.Spec.Selector)
	}
	if err != nil {
		setCondition(status, false, ReasonInvalidSelector, err.Error())
		return ctrl.Result{}, nil
	}
	sources, err := r.listSources(ctx, gvk, p.Spec.Namespaces, selector)
	if err != nil {
		return ctrl.Result{}, err
	}
	var clusters clusterv1alpha1.ClusterList
	if err := r.List(ctx, &clusters); err != nil {
		return ctrl.Result{}, err
	}
	existing := map[string]*clusterv1alpha1.Cluster{}
	for i := range clusters.Items {
		existing[clusters.Items[i].Name] = &clusters.Items[i]
	}
	kind := sourceKinds[p.Spec.Source]
	// A source whose Cluster exists comes first, so that of two sources
	// mapping to one name the one imported keeps it.
	holds := func(src *unstructured.Unstructured) bool {
		c := existing[clusterName(p.Spec.NameScheme, src.GetNamespace(), src.GetName())]
		return c != nil && controlledBy(c, p.Name) && c.Annotations[clusterv1alpha1.AnnotationImportSource] == sourceRecord(kind, src)
	}
	slices.SortFunc(sources, func(a, b *unstructured.Unstructured) int {
		if ha, hb := holds(a), holds(b); ha != hb {
			if ha {
				return -1
			}
			return 1
		}
		return cmp.Or(strings.Compare(a.GetNamespace(), b.GetNamespace()), strings.Compare(a.GetName(), b.GetName()))
	})

	// keep: names of the policy's Clusters that stay (imported now, or
	// selected but not importable now and left as they were).
	keep := map[string]bool{}
	var problems []clusterv1alpha1.ImportConflict
	retry := false
	imported := int32(0) // Clusters the policy holds after this pass
	notImportedAs := func(src *unstructured.Unstructured, name, msg string) {
		problems = append(problems, clusterv1alpha1.ImportConflict{Source: src.GetNamespace() + "/" + src.GetName(), Cluster: name, Message: msg})
	}
	for _, src := range sources {
		name := clusterName(p.Spec.NameScheme, src.GetNamespace(), src.GetName())
		if errs := validation.IsDNS1123Subdomain(name); len(errs) > 0 {
			notImportedAs(src, name, "not a valid Cluster name: "+strings.Join(errs, "; "))
			continue
		}
		if keep[name] {
			notImportedAs(src, name, "conflict: another source of this policy has the same Cluster name")
			continue
		}
		c := existing[name]
		if c != nil && !controlledBy(c, p.Name) {
			notImportedAs(src, name, fmt.Sprintf("conflict: Cluster %s exists and was not imported by this policy", name))
			continue
		}
		spec, err := r.clusterSpec(ctx, p, src, name)
		var ni *notImportedError
		if errors.As(err, &ni) {
			notImportedAs(src, name, ni.msg)
			if c != nil {
				keep[name] = true
				imported++
			}
			retry = true // its Secret or status may come without an event of a watched kind
			continue
		} else if err != nil {
			return ctrl.Result{}, err
		}
		keep[name] = true
		switch err := r.apply(ctx, p, kind, src, name, c, spec); {
		case err == nil:
			imported++
		case apierrors.IsAlreadyExists(err) || apierrors.IsConflict(err):
			retry = true // another writer was first: the next reconcile sees it
		case apierrors.IsInvalid(err) || apierrors.IsForbidden(err):
			notImportedAs(src, name, err.Error())
		default:
			return ctrl.Result{}, err
		}
	}
	if err := r.deleteImports(ctx, p.Name, keep); err != nil {
		return ctrl.Result{}, err
	}

	status.ImportedCount = imported
	status.Conflicts = problems[:min(len(problems), maxNotImported)]
	if len(problems) > 0 {
		msgs := make([]string, 0, 3)
		for _, c := range problems[:min(len(problems), 3)] {
			msgs = append(msgs, c.Source+": "+c.Message)
		}
		setCondition(status, false, ReasonNotAllImported, fmt.Sprintf("%d of %d selected sources not imported (status.conflicts): %s", len(problems), len(sources), strings.Join(msgs, "; ")))
	} else {
		setCondition(status, true, ReasonImported, fmt.Sprintf("%d selected sources imported", len(sources)))
	}
	if retry {
		return recheck, nil
	}
	return ctrl.Result{}, nil
}

// listSources lists the sources of namespaces (all when empty) that
// selector matches, leaving out those being deleted: a deleted source's
// member is going away.
func (r *Reconciler) listSources(ctx context.Context, gvk schema.GroupVersionKind, namespaces []string, selector labels.Selector) ([]*unstructured.Unstructured, error) {
	if len(namespaces) == 0 {
		namespaces = []string{metav1.NamespaceAll}
	}
	var out []*unstructured.Unstructured
	for _, ns := range slices.Compact(slices.Sorted(slices.Values(namespaces))) {
		list := &unstructured.UnstructuredList{}
		list.SetGroupVersionKind(gvk.GroupVersion().WithKind(gvk.Kind + "List"))
		if err := r.cache.List(ctx, list, client.InNamespace(ns), client.MatchingLabelsSelector{Selector: selector}); err != nil {
			return nil, err
		}
		for i := range list.Items {
			if list.Items[i].GetDeletionTimestamp().IsZero() {
				out = append(out, &list.Items[i])
			}
		}
	}
	return out, nil
}

// apply creates or updates the Cluster name imported from src; existing is
// nil or a Cluster the policy controls.
func (r *Reconciler) apply(ctx context.Context, p *clusterv1alpha1.ClusterImportPolicy, kind sourceKind, src *unstructured.Unstructured,
	name string, existing *clusterv1alpha1.Cluster, spec clusterv1alpha1.ClusterSpec) error {
	c := &clusterv1alpha1.Cluster{ObjectMeta: metav1.ObjectMeta{Name: name}}
	if existing != nil {
		if !existing.DeletionTimestamp.IsZero() {
			return apierrors.NewAlreadyExists(schema.GroupResource{}, name) // made again once it is gone
		}
		c = existing.DeepCopy()
	}
	metav1.SetMetaDataLabel(&c.ObjectMeta, clusterv1alpha1.LabelImportPolicy, p.Name)
	metav1.SetMetaDataAnnotation(&c.ObjectMeta, clusterv1alpha1.AnnotationImportSource, sourceRecord(kind, src))
	metav1.SetMetaDataAnnotation(&c.ObjectMeta, clusterv1alpha1.AnnotationImportSourceUID, string(src.GetUID()))
	// No blockOwnerDeletion: it would need update of the policy's
	// finalizers where OwnerReferencesPermissionEnforcement is on.
	c.OwnerReferences = append(slices.DeleteFunc(c.OwnerReferences, func(o metav1.OwnerReference) bool { return o.Controller != nil && *o.Controller }),
		metav1.OwnerReference{APIVersion: clusterv1alpha1.GroupVersion.String(), Kind: "ClusterImportPolicy", Name: p.Name, UID: p.UID, Controller: ptr(true)})
	c.Spec = spec
	if existing == nil {
		log.FromContext(ctx).Info("importing", "cluster", name, "source", sourceRecord(kind, src))
		return r.Create(ctx, c)
	}
	if equality.Semantic.DeepEqual(c.ObjectMeta, existing.ObjectMeta) && equality.Semantic.DeepEqual(c.Spec, existing.Spec) {
		return nil
	}
	return r.Update(ctx, c)
}

// deleteImports deletes the Clusters policy controls whose names keep does
// not hold.
func (r *Reconciler) deleteImports(ctx context.Context, policy string, keep map[string]bool) error {
	var list clusterv1alpha1.ClusterList
	if err := r.List(ctx, &list, client.MatchingLabels{clusterv1alpha1.LabelImportPolicy: policy}); err != nil {
		return err
	}
	for i := range list.Items {
		c := &list.Items[i]
		if _, kept := keep[c.Name]; kept || !controlledBy(c, policy) || !c.DeletionTimestamp.IsZero() {
			continue
		}
		log.FromContext(ctx).Info("deleting an imported Cluster whose source is gone or no longer selected", "cluster", c.Name, "source", c.Annotations[clusterv1alpha1.AnnotationImportSource])
		if err := r.Delete(ctx, c, client.Preconditions{UID: &c.UID}); err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
			return err
		}
	}
	return nil
}

// controlledBy says whether the policy named policy imported c: its
// controller is that policy, by name, so a policy made again under the
// same name takes over its predecessor's Clusters. A Cluster written by
// hand has no such owner and is never touched.
func controlledBy(c *clusterv1alpha1.Cluster, policy string) bool {
	ref := metav1.GetControllerOfNoCopy(c)
	return ref != nil && ref.Kind == "ClusterImportPolicy" && ref.Name == policy &&
		strings.HasPrefix(ref.APIVersion, clusterv1alpha1.GroupVersion.Group+"/")
}

func setCondition(status *clusterv1alpha1.ClusterImportPolicyStatus, ok bool, reason, message string) {
	s := metav1.ConditionFalse
	if ok {
		s = metav1.ConditionTrue
	}
	meta.SetStatusCondition(&status.Conditions, metav1.Condition{Type: clusterv1alpha1.ConditionImported, Status: s, Reason: reason, Message: message})
}

func ptr[T any](v T) *T { return &v }
