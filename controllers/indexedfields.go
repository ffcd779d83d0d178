package controllers

import (
	"cmp"
	"context"
	"errors"
	"slices"

	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"

	clusterv1alpha1 "github.com/panorama-io/panorama/apis/cluster/v1alpha1"
	"github.com/panorama-io/panorama/storage"
)

// indexedFieldsReconciler declares the IndexedFields to storage, which
// reindexes what it holds; the API server reads the declarations from
// storage, so every replica selects on what is indexed. Any change
// reconciles every IndexedField: the declarations are one set.
type indexedFieldsReconciler struct {
	client client.Client
	store  storage.Interface
}

// SetupWithManager registers the reconciler.
func (r *indexedFieldsReconciler) SetupWithManager(mgr ctrl.Manager) error {
	// Once at start, whether or not any IndexedField exists: a binary
	// whose built-in fields differ reindexes (storage.BuiltinFieldsRevision).
	start := make(chan event.TypedGenericEvent[*clusterv1alpha1.IndexedField], 1)
	start <- event.TypedGenericEvent[*clusterv1alpha1.IndexedField]{Object: &clusterv1alpha1.IndexedField{}}
	return ctrl.NewControllerManagedBy(mgr).
		Named("indexedfield").
		Watches(&clusterv1alpha1.IndexedField{}, handler.EnqueueRequestsFromMapFunc(wholeSet[client.Object])).
		WatchesRawSource(source.Channel(start, handler.TypedEnqueueRequestsFromMapFunc(wholeSet[*clusterv1alpha1.IndexedField]))).
		Complete(r)
}

// wholeSet maps every event to the one key the set is reconciled under.
func wholeSet[T any](context.Context, T) []reconcile.Request { return []reconcile.Request{{}} }

func (r *indexedFieldsReconciler) Reconcile(ctx context.Context, _ reconcile.Request) (reconcile.Result, error) {
	var list clusterv1alpha1.IndexedFieldList
	if err := r.client.List(ctx, &list); err != nil {
		return reconcile.Result{}, err
	}
	// The oldest first: one that would take the set past a limit
	// (storage.MaxFieldsPerResource, ...) is refused, not those declared
	// before it, and the others are declared without it.
	slices.SortStableFunc(list.Items, func(a, b clusterv1alpha1.IndexedField) int {
		return cmp.Or(a.CreationTimestamp.Compare(b.CreationTimestamp.Time), cmp.Compare(a.Name, b.Name))
	})
	decls := make([]storage.FieldDeclaration, len(list.Items))
	for i, f := range list.Items {
		decls[i] = storage.FieldDeclaration{Name: f.Name, Paths: f.Spec.Paths, Resources: f.Spec.Resources}
	}
	admitted, refused := storage.AdmitFieldDeclarations(decls)
	declareErr := r.store.DeclareFields(ctx, admitted)
	var errs []error
	for i := range list.Items {
		f := &list.Items[i]
		cond := metav1.Condition{Type: clusterv1alpha1.ConditionIndexed, Status: metav1.ConditionTrue, Reason: "Indexed",
			Message: "field selectors may use " + f.Name, ObservedGeneration: f.Generation}
		switch {
		case refused[i] != nil:
			cond.Status, cond.Reason, cond.Message = metav1.ConditionFalse, "Invalid", refused[i].Error()
		case declareErr != nil:
			cond.Status, cond.Reason, cond.Message = metav1.ConditionFalse, "Reindexing", declareErr.Error()
		}
		if apimeta.SetStatusCondition(&f.Status.Conditions, cond) {
			errs = append(errs, r.client.Status().Update(ctx, f))
		}
	}
	return reconcile.Result{}, errors.Join(append(errs, declareErr)...)
}
