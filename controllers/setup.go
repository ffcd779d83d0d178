package controllers

import (
	"context"
	"errors"
	"fmt"

	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	clusterv1alpha1 "github.com/panorama-io/panorama/apis/cluster/v1alpha1"
	"github.com/panorama-io/panorama/controllers/importer"
	"github.com/panorama-io/panorama/storage"
)

// NewManager builds a controller manager of the host cfg reaches with
// every controller set up over store (SetupWithManager): what
// cmd/controller-manager runs alone and internal/allinone beside the API
// server. base holds what differs between the two (metrics, probes, leader
// election); the scheme is set here.
func NewManager(cfg *rest.Config, store storage.Interface, opts Options, base ctrl.Options) (ctrl.Manager, error) {
	scheme := runtime.NewScheme()
	if err := errors.Join(clientgoscheme.AddToScheme(scheme), clusterv1alpha1.AddToScheme(scheme)); err != nil {
		return nil, err
	}
	base.Scheme = scheme
	mgr, err := ctrl.NewManager(cfg, base)
	if err != nil {
		return nil, fmt.Errorf("creating the controller manager: %w", err)
	}
	if err := SetupWithManager(mgr, store, opts); err != nil {
		return nil, fmt.Errorf("setting up controllers: %w", err)
	}
	return mgr, nil
}

// SetupWithManager registers everything the controller manager runs over
// store: the one list of its controllers and the compactor.
func SetupWithManager(mgr ctrl.Manager, store storage.Interface, opts Options) error {
	if err := opts.Validate(); err != nil {
		return err
	}
	clusters := newClusterReconciler(mgr, store, opts)
	setups := []func(ctrl.Manager) error{
		clusters.SetupWithManager,
		func(mgr ctrl.Manager) error { return clusters.setupTunnels(mgr, opts.Tunnel) },
		(&indexedFieldsReconciler{client: mgr.GetClient(), store: store}).SetupWithManager,
		(&importer.Reconciler{Client: mgr.GetClient(), APIReader: mgr.GetAPIReader(),
			Options: importer.Options{SecretNamespace: opts.SecretNamespace, RecheckInterval: opts.HealthInterval}}).SetupWithManager,
	}
	if opts.CompactionInterval > 0 {
		setups = append(setups, compactor{store, opts}.SetupWithManager)
	}
	for _, setup := range setups {
		if err := setup(mgr); err != nil {
			return err
		}
	}
	return nil
}

// newClusterReconciler applies the defaults of opts.
func newClusterReconciler(mgr ctrl.Manager, store storage.Interface, opts Options) *ClusterReconciler {
	if opts.MaxConcurrentReconciles == 0 {
		opts.MaxConcurrentReconciles = DefaultMaxConcurrentReconciles()
	}
	if opts.EventRetention == 0 {
		opts.EventRetention = DefaultEventRetention
	}
	return &ClusterReconciler{
		Client: mgr.GetClient(), APIReader: mgr.GetAPIReader(),
		Secrets: SecretAccess{Namespace: opts.SecretNamespace, ClusterAPINamespaces: opts.ClusterAPISecretNamespaces},
		Store:   store, HealthInterval: opts.HealthInterval, EventRetention: opts.EventRetention,
		MaxConcurrentReconciles: opts.MaxConcurrentReconciles, Sync: opts.Sync, Sharding: opts.Sharding,
	}
}

// compactor compacts the change log and expires history, on the leader.
type compactor struct {
	store storage.Interface
	opts  Options
}

// SetupWithManager adds the compactor as a runnable of the leader.
func (c compactor) SetupWithManager(mgr ctrl.Manager) error {
	return mgr.Add(manager.RunnableFunc(func(ctx context.Context) error {
		storage.RunCompactor(ctx, c.store, c.opts.CompactionInterval, c.opts.HistoryRetention)
		return nil
	}))
}
