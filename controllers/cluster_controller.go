package controllers

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/metadata"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"

	clusterv1alpha1 "github.com/panorama-io/panorama/apis/cluster/v1alpha1"
	"github.com/panorama-io/panorama/controllers/sharding"
	"github.com/panorama-io/panorama/controllers/synchronizer"
	"github.com/panorama-io/panorama/storage"
	"github.com/panorama-io/panorama/tunnel"
)

// conflictRetry is how soon a reconcile that lost an update race runs again.
const conflictRetry = time.Second

// Finalizer makes a Cluster's deletion wait until its objects are gone
// from storage.
const Finalizer = "cluster.panorama.io/cleanup"

// Condition reasons.
const (
	ReasonHealthy               = "Healthy"
	ReasonUnhealthy             = "Unhealthy"
	ReasonInvalidConfig         = "InvalidConfig"
	ReasonDiscoveryFailed       = "DiscoveryFailed"
	ReasonSynced                = "Synced"
	ReasonSyncing               = "Syncing"
	ReasonSyncError             = "SyncError"
	ReasonPaused                = "Paused"
	ReasonNothingToSync         = "NothingToSync"
	ReasonSyncResourcesNotFound = "SyncResourcesNotFound"
	// ReasonInvalidFilter: a filter of syncResources that cannot be applied.
	ReasonInvalidFilter = "InvalidFilter"
	// ReasonSecretNamespaceForbidden: a secret reference outside the
	// controller's secret namespace.
	ReasonSecretNamespaceForbidden = "SecretNamespaceForbidden"
	// ReasonSecretNotBound: a credential Secret that does not bind the
	// Cluster (its annotations name neither the Cluster nor, for a token,
	// its server) or whose CA the Cluster would skip.
	ReasonSecretNotBound = "SecretNotBound"
	// ReasonKubeconfigRefused: a kubeconfig that would run a program or read
	// a file of the controller.
	ReasonKubeconfigRefused = "KubeconfigRefused"
	// ReasonAgentNotConnected: a Cluster reached through its agent, none of
	// which is connected.
	ReasonAgentNotConnected = "AgentNotConnected"
	// ReasonNoTunnelEndpoint: a Cluster reached through its agent, of a
	// controller manager that serves no tunnel endpoint.
	ReasonNoTunnelEndpoint = "NoTunnelEndpoint"
	ReasonTLSVerified      = "Verified"
	ReasonInsecureSkipTLS  = "InsecureSkipTLSVerify"
)

// ClusterReconciler connects to each Cluster's member, health-checks it,
// resolves what to sync and runs one synchronizer per resource.
type ClusterReconciler struct {
	client.Client
	// APIReader reads Secrets uncached: a cache would watch Secrets
	// cluster-wide, which the controller may not, and cost more than the few
	// reads made.
	APIReader client.Reader
	// Secrets says which Secrets may be member credentials.
	Secrets SecretAccess
	// Tunnels reaches the members of Clusters with spec.agent; nil when
	// the controller serves no tunnel endpoint (agents.go).
	Tunnels *tunnel.Hub
	Store   storage.Interface
	Pool    *synchronizer.Pool
	// HealthInterval is how often a member is checked and rediscovered, so
	// new CRDs that wildcards cover start syncing without a restart.
	HealthInterval time.Duration
	// EventRetention is that of Clusters that set none.
	EventRetention time.Duration
	// MaxConcurrentReconciles is how many Clusters are reconciled at once.
	MaxConcurrentReconciles int
	// Sync configures the synchronizers.
	Sync synchronizer.Options
	// Sharding, when Shards is not 0, divides the Clusters among the
	// replicas; else the leader reconciles and syncs them all.
	Sharding sharding.Options

	events  chan event.TypedGenericEvent[*clusterv1alpha1.Cluster]
	openAPI openAPIChecks // openapi.go
	checks  memberChecks  // membercheck.go
	owners  owners        // owners.go

	discovered discoveries // discovery.go

	// secretData has storage drop the Secrets' data a Cluster does not
	// keep (secretdata.go).
	secretData secretDataDrops
}

// SetupWithManager registers the reconciler, its synchronizer pool and,
// sharded, the coordinator of the shards (controllers/sharding).
func (r *ClusterReconciler) SetupWithManager(mgr ctrl.Manager) error {
	r.events = make(chan event.TypedGenericEvent[*clusterv1alpha1.Cluster], 1024)
	r.Pool = synchronizer.NewPool(r.Store, r.Sync, r.syncStateChanged)
	sharded := r.Sharding.Shards > 0
	if sharded {
		if err := r.owners.setup(mgr, r.Store, r.Sharding, r.shardChanged); err != nil {
			return err
		}
	} else {
		r.owners.setupUnsharded(r.Store, mgr.Elected())
	}
	// On shutdown, no synchronizer or OpenAPI sync outlives the manager:
	// each has stopped, its storage call in flight returned, before the
	// manager returns.
	if err := mgr.Add(runnable{sharded, func(ctx context.Context) error {
		<-ctx.Done()
		r.Pool.StopAll()
		r.openAPI.stopAll()
		return nil
	}}); err != nil {
		return err
	}
	// Whoever runs synchronizers (the leader; each replica, sharded) removes
	// what no Cluster selects any more: at start for what changed while no
	// controller ran, then whenever a cluster's resources become known.
	// Sharded, the Clusters that exist are read from the host rather than
	// from this replica's cache, which may not have one another replica
	// syncs yet.
	clusters := r.clusterNames
	if sharded {
		clusters = func(ctx context.Context) ([]string, error) { return listClusterNames(ctx, r.APIReader) }
	}
	if err := mgr.Add(runnable{sharded, func(ctx context.Context) error {
		r.Pool.SweepOrphans(ctx, clusters)
		return nil
	}}); err != nil {
		return err
	}
	return ctrl.NewControllerManagedBy(mgr).
		// A Cluster is reconciled for a change of its generation (its spec,
		// its deletion), not of its finalizer or status, which only the
		// reconciler writes: the news of such a write arrives while the
		// reconcile that wrote it may still run, and the Cluster, queued
		// again, waits out the rest of it (BenchmarkFleetReconcile). Unless
		// someone else took the finalizer off: the reconcile puts it back,
		// so that deleting the Cluster still removes what it stored.
		For(&clusterv1alpha1.Cluster{}, builder.WithPredicates(predicate.Or[client.Object](predicate.GenerationChangedPredicate{}, finalizerRemoved))).
		Watches(&clusterv1alpha1.ClusterSyncResources{}, handler.EnqueueRequestsFromMapFunc(r.clustersReferencing)).
		WatchesRawSource(source.Channel(r.events, &handler.TypedEnqueueRequestForObject[*clusterv1alpha1.Cluster]{})).
		Named("cluster").
		WithOptions(controller.Options{MaxConcurrentReconciles: r.MaxConcurrentReconciles, NeedLeaderElection: ptr.To(!sharded)}).
		Complete(r)
}

// finalizerRemoved passes the updates of a Cluster that took Finalizer
// off it while it stays.
var finalizerRemoved = predicate.Funcs{UpdateFunc: func(e event.UpdateEvent) bool {
	return controllerutil.ContainsFinalizer(e.ObjectOld, Finalizer) && !controllerutil.ContainsFinalizer(e.ObjectNew, Finalizer) &&
		e.ObjectNew.GetDeletionTimestamp().IsZero()
}}

// runnable runs on the leader only, or on every replica.
type runnable struct {
	everyReplica bool
	run          manager.RunnableFunc
}

func (r runnable) Start(ctx context.Context) error { return r.run(ctx) }
func (r runnable) NeedLeaderElection() bool        { return !r.everyReplica }

// clusterNames lists every Cluster of the host, from the cache, which the
// list waits for to be synced.
func (r *ClusterReconciler) clusterNames(ctx context.Context) ([]string, error) {
	return listClusterNames(ctx, r.Client)
}

func listClusterNames(ctx context.Context, reader client.Reader) ([]string, error) {
	var list clusterv1alpha1.ClusterList
	if err := reader.List(ctx, &list); err != nil {
		return nil, err
	}
	names := make([]string, 0, len(list.Items))
	for _, c := range list.Items {
		names = append(names, c.Name)
	}
	return names, nil
}

// syncStateChanged asks for a reconcile so the status shows the change. A
// full queue drops it: the periodic reconcile catches up.
func (r *ClusterReconciler) syncStateChanged(cluster string) {
	select {
	case r.events <- event.TypedGenericEvent[*clusterv1alpha1.Cluster]{Object: &clusterv1alpha1.Cluster{ObjectMeta: metav1.ObjectMeta{Name: cluster}}}:
	default:
	}
}

func (r *ClusterReconciler) clustersReferencing(ctx context.Context, o client.Object) []reconcile.Request {
	var list clusterv1alpha1.ClusterList
	if err := r.List(ctx, &list); err != nil {
		return nil
	}
	var out []reconcile.Request
	for _, c := range list.Items {
		if c.Spec.SyncResourcesRef == o.GetName() {
			out = append(out, reconcile.Request{NamespacedName: types.NamespacedName{Name: c.Name}})
		}
	}
	return out
}

// Reconcile implements reconcile.Reconciler.
func (r *ClusterReconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	logger := log.FromContext(ctx)
	var c clusterv1alpha1.Cluster
	if err := r.Get(ctx, req.NamespacedName, &c); err != nil {
		if apierrors.IsNotFound(err) {
			r.stop(req.Name)
			return ctrl.Result{}, nil
		}
		return ctrl.Result{}, err
	}
	// Only the holder of the cluster's shard (unsharded, the leader) syncs
	// it, writes its status and removes it; its storage writes carry its
	// owner epoch.
	epoch, owned, err := r.owners.epoch(ctx, c.Name)
	if err != nil || !owned {
		if !owned {
			r.stop(c.Name)
		}
		return ctrl.Result{}, err
	}
	if !c.DeletionTimestamp.IsZero() {
		if !controllerutil.ContainsFinalizer(&c, Finalizer) {
			return ctrl.Result{}, nil
		}
		r.Pool.Stop(c.Name)
		r.openAPI.forget(c.Name)
		r.checks.forget(c.Name)
		r.discovered.forget(c.Name)
		if _, err := r.Store.ForCluster(c.Name, epoch).DeleteResource(ctx, schema.GroupVersionResource{}); err != nil {
			return ctrl.Result{}, fmt.Errorf("removing stored objects: %w", err)
		}
		// A Cluster created again under its name finds none of its past.
		if err := r.Store.ForCluster(c.Name, epoch).ForgetCluster(ctx); err != nil {
			return ctrl.Result{}, fmt.Errorf("forgetting the stored objects' history: %w", err)
		}
		r.secretData.forget(c.Name)
		logger.Info("removed the cluster's objects and their history from storage")
		controllerutil.RemoveFinalizer(&c, Finalizer)
		return ctrl.Result{}, r.Update(ctx, &c)
	}
	if controllerutil.AddFinalizer(&c, Finalizer) {
		if err := r.Update(ctx, &c); apierrors.IsConflict(err) {
			return ctrl.Result{RequeueAfter: conflictRetry}, nil
		} else if err != nil {
			return ctrl.Result{}, err
		}
	}

	status := c.Status.DeepCopy()
	result, err := r.sync(ctx, &c, epoch, status)
	// Whether or not the member is reachable: what is stored already.
	if derr := r.secretData.drop(ctx, r.Store, &c, epoch); derr != nil {
		err = errors.Join(err, derr)
	}
	status.ObservedGeneration = c.Generation
	recordConditions(c.Name, status)
	if !equality.Semantic.DeepEqual(status, &c.Status) {
		c.Status = *status
		if uerr := r.Status().Update(ctx, &c); apierrors.IsConflict(uerr) {
			// The cache was behind our own last write: try again with the news.
			return ctrl.Result{RequeueAfter: conflictRetry}, err
		} else if uerr != nil {
			return ctrl.Result{}, uerr
		}
	}
	return result, err
}

// sync does the work and records the outcome in status. While the last
// check of the member is fresh (membercheck.go) it only refreshes the
// status from the synchronizers, unless one of them fails, which is news
// of the member worth a check at once.
func (r *ClusterReconciler) sync(ctx context.Context, c *clusterv1alpha1.Cluster, epoch int64, status *clusterv1alpha1.ClusterStatus) (ctrl.Result, error) {
	requeue := ctrl.Result{RequeueAfter: r.HealthInterval}
	if c.Spec.Paused {
		r.checks.forget(c.Name)
		r.Pool.Stop(c.Name)
		for i := range status.SyncResources {
			status.SyncResources[i].State = clusterv1alpha1.SyncStatePaused
		}
		setCondition(status, clusterv1alpha1.ConditionSynced, false, ReasonPaused, "syncing is paused; stored objects are kept")
		return ctrl.Result{}, nil
	}
	selections := slices.Clone(c.Spec.SyncResources)
	var problems []string
	// partial: what is selected could not be read in full. Resources missing
	// from such a selection may still be wanted, so they keep syncing and
	// none of their objects is removed.
	partial := false
	key := checkKey{uid: c.UID, generation: c.Generation, epoch: epoch}
	if ref := c.Spec.SyncResourcesRef; ref != "" {
		var shared clusterv1alpha1.ClusterSyncResources
		if err := r.Get(ctx, client.ObjectKey{Name: ref}, &shared); err != nil {
			problems = append(problems, fmt.Sprintf("ClusterSyncResources %q: %v", ref, err))
			partial = partial || !apierrors.IsNotFound(err)
		} else {
			selections = append(selections, shared.Spec.SyncResources...)
			key.sharedVersion = shared.ResourceVersion
		}
	}
	now := time.Now()
	if last, ok := r.checks.fresh(c.Name, key, r.HealthInterval, now); ok && !r.syncFailing(c.Name) {
		setMemberConditions(status, last.version, last.insecure)
		r.fillSyncStatus(c.Name, status)
		setSynced(status, last.problems)
		return ctrl.Result{RequeueAfter: last.at.Add(r.HealthInterval).Sub(now)}, nil
	}
	r.checks.forget(c.Name)

	cfg, configID, err := r.connection(ctx, c)
	if err != nil {
		reason := ReasonInvalidConfig
		var refused *refusedError
		var away *agentAwayError
		switch {
		case errors.As(err, &refused):
			// Refused credentials stay refused until the spec changes.
			r.Pool.Stop(c.Name)
			reason = refused.Reason
		case errors.As(err, &away):
			// As an unhealthy member's, below.
			reason = ReasonAgentNotConnected
			r.fillSyncStatus(c.Name, status)
		}
		setCondition(status, clusterv1alpha1.ConditionReady, false, reason, err.Error())
		return requeue, nil
	}
	setTLSCondition(status, cfg.Insecure)
	// The member's small answers are read bounded (bodylimit.go); its
	// lists, by the synchronizers, are not.
	limited := withResponseLimit(cfg, c.Name)
	// A member (or its agent) that never answers holds no reconcile.
	limited.Timeout = memberCheckTimeout
	dc, err := discovery.NewDiscoveryClientForConfig(limited)
	if err != nil {
		setCondition(status, clusterv1alpha1.ConditionReady, false, ReasonInvalidConfig, err.Error())
		return requeue, nil
	}
	// An unhealthy member keeps its synchronizers: they retry with backoff and
	// resume from where they were.
	if _, err := dc.RESTClient().Get().AbsPath("/readyz").DoRaw(ctx); err != nil {
		setCondition(status, clusterv1alpha1.ConditionReady, false, ReasonUnhealthy, "readyz: "+memberErrorText(err))
		r.fillSyncStatus(c.Name, status)
		return requeue, nil
	}
	if v, err := dc.ServerVersion(); err == nil {
		status.Version = statusText(v.GitVersion)
	}
	setMemberConditions(status, status.Version, cfg.Insecure)

	dyn, err := synchronizer.NewClient(cfg)
	if err != nil {
		return requeue, err
	}
	var implied []clusterv1alpha1.GroupResources // resources.go
	if c.Spec.SyncAllCustomResources {
		md, err := metadata.NewForConfig(limited)
		if err != nil {
			return requeue, err
		}
		crds, err := customResourceSelections(ctx, md)
		if err != nil {
			problems = append(problems, "listing CRDs: "+memberErrorText(err))
			partial = true
		}
		// The CRDs themselves too: the API server takes their printer columns
		// for Table output of the custom resources.
		implied = append(implied, crdsSelection)
		implied = append(implied, crds...)
	}
	member, err := r.discovered.discover(ctx, c.Name, configID, dc) // discovery.go
	if err != nil {
		setCondition(status, clusterv1alpha1.ConditionSynced, false, ReasonDiscoveryFailed, memberErrorText(err))
		r.fillSyncStatus(c.Name, status)
		return requeue, nil
	}
	resources, err := member.resolve(selections, implied...)
	if err != nil {
		// The host refuses such filters as it stores them; one stored before
		// its rules changes nothing until fixed, rather than sync more than
		// it meant to.
		setCondition(status, clusterv1alpha1.ConditionSynced, false, ReasonInvalidFilter, err.Error()+"; what was synced syncs on as it did")
		r.fillSyncStatus(c.Name, status)
		return requeue, nil
	}
	if !c.Spec.SyncAllCustomResources { // crds.go; with it, the CRDs are selected above
		extra, err := crdSelection(ctx, limited, resources)
		if err != nil {
			problems = append(problems, "listing CRDs: "+memberErrorText(err))
			partial = true
		}
		// What had resolved still does: extra adds the CRDs, under the
		// filter a selection of the Cluster's gives them, if one does.
		resources, _ = member.resolve(selections, extra...)
	}
	retention := r.EventRetention
	if c.Spec.EventRetention != nil {
		retention = c.Spec.EventRetention.Duration
	}
	for i := range resources {
		resources[i].KeepSecretData = c.Spec.SecretData == clusterv1alpha1.SecretDataKeep
		if synchronizer.IsEvents(resources[i].GVR) {
			resources[i].EventRetention = retention
		}
	}
	sel := synchronizer.Selection{Resources: resources, Partial: partial || member.partial}
	if err := r.Pool.Ensure(ctx, c.Name, configID, epoch, dyn, sel); err != nil {
		return requeue, err
	}
	r.secretData.resolved(c.Name, sel)
	r.checkOpenAPI(ctx, c.Name, epoch, configID, status.Version, dc.RESTClient(), sel) // openapi.go
	r.checks.record(c.Name, memberCheck{key: key, at: now, version: status.Version, insecure: cfg.Insecure, problems: problems})
	r.fillSyncStatus(c.Name, status)
	setSynced(status, problems)
	return requeue, nil
}

// syncFailing reports whether a synchronizer of cluster is in error.
func (r *ClusterReconciler) syncFailing(cluster string) bool {
	for _, s := range r.Pool.Statuses(cluster) {
		if s.State == clusterv1alpha1.SyncStateError {
			return true
		}
	}
	return false
}

// setTLSCondition says whether the member's certificate is verified.
func setTLSCondition(status *clusterv1alpha1.ClusterStatus, insecure bool) {
	if insecure {
		setCondition(status, clusterv1alpha1.ConditionTLSVerified, false, ReasonInsecureSkipTLS,
			"spec.insecureSkipTLSVerify is set: the member's certificate is not verified, so anyone on the way can read its credentials and contents")
		return
	}
	setCondition(status, clusterv1alpha1.ConditionTLSVerified, true, ReasonTLSVerified, "the member's certificate is verified")
}

// setMemberConditions shows a member found healthy, of version, reached
// with or without verifying its certificate.
func setMemberConditions(status *clusterv1alpha1.ClusterStatus, version string, insecure bool) {
	status.Version = version
	setTLSCondition(status, insecure)
	setCondition(status, clusterv1alpha1.ConditionReady, true, ReasonHealthy, "the member's API server is ready")
}

// setSynced sets the Synced condition from the selection's problems and
// the synchronizers' states in status.
func setSynced(status *clusterv1alpha1.ClusterStatus, problems []string) {
	switch {
	case len(problems) > 0:
		setCondition(status, clusterv1alpha1.ConditionSynced, false, ReasonSyncResourcesNotFound, strings.Join(problems, "; "))
	case len(status.SyncResources) == 0:
		setCondition(status, clusterv1alpha1.ConditionSynced, false, ReasonNothingToSync, "no served resource matches the selection")
	default:
		var failing, syncing []string
		for _, s := range status.SyncResources {
			name := schema.GroupResource{Group: s.Group, Resource: s.Resource}.String()
			switch s.State {
			case clusterv1alpha1.SyncStateError:
				failing = append(failing, name+": "+s.LastError)
			case clusterv1alpha1.SyncStateSynced:
			default:
				syncing = append(syncing, name)
			}
		}
		switch {
		case len(failing) > 0:
			setCondition(status, clusterv1alpha1.ConditionSynced, false, ReasonSyncError, strings.Join(failing, "; "))
		case len(syncing) > 0:
			setCondition(status, clusterv1alpha1.ConditionSynced, false, ReasonSyncing, "initial sync of "+strings.Join(syncing, ", "))
		default:
			setCondition(status, clusterv1alpha1.ConditionSynced, true, ReasonSynced, fmt.Sprintf("%d resources synced", len(status.SyncResources)))
		}
	}
}

func (r *ClusterReconciler) fillSyncStatus(cluster string, status *clusterv1alpha1.ClusterStatus) {
	statuses := r.Pool.Statuses(cluster)
	if len(statuses) == 0 && len(status.SyncResources) > 0 {
		return // not running (yet): keep what was last seen
	}
	out := make([]clusterv1alpha1.ResourceSyncStatus, 0, len(statuses))
	for res, s := range statuses {
		rs := clusterv1alpha1.ResourceSyncStatus{
			Group: res.GVR.Group, Version: res.GVR.Version, Resource: res.GVR.Resource, Kind: res.Kind,
			Namespaced: res.Namespaced, State: s.State, Count: s.Count, LastError: statusText(s.LastError),
			RefusedCount: s.Refused, LastRefused: statusText(s.LastRefused),
			Filter: statusText(res.Filter.String()), LastListRemovedCount: s.LastListRemoved,
		}
		if !s.LastSyncTime.IsZero() {
			t := metav1.NewTime(s.LastSyncTime.Truncate(time.Second))
			rs.LastSyncTime = &t
		}
		out = append(out, rs)
	}
	slices.SortFunc(out, func(a, b clusterv1alpha1.ResourceSyncStatus) int {
		return strings.Compare(a.Group+"/"+a.Version+"/"+a.Resource, b.Group+"/"+b.Version+"/"+b.Resource)
	})
	status.SyncResources = out
	status.SyncedResourceCount = int32(len(out))
}

func setCondition(status *clusterv1alpha1.ClusterStatus, typ string, ok bool, reason, message string) {
	s := metav1.ConditionFalse
	if ok {
		s = metav1.ConditionTrue
	}
	meta.SetStatusCondition(&status.Conditions, metav1.Condition{Type: typ, Status: s, Reason: reason, Message: statusText(message), ObservedGeneration: 0})
}

// maxStatusText bounds each text of a Cluster's status that a member's
// answers or the controller's errors about it make (condition messages,
// lastError, lastRefused, version): a member may answer anything, and the
// host refuses a whole status with a condition message over 32 KiB.
const maxStatusText = 1024

// truncatedMark ends a text cut to maxStatusText.
const truncatedMark = " …"

// statusText is s cut to at most maxStatusText bytes, on a UTF-8
// boundary.
func statusText(s string) string {
	if len(s) <= maxStatusText {
		return s
	}
	cut := maxStatusText - len(truncatedMark)
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + truncatedMark
}

// memberErrorText describes an error of a request to a member. Of an
// answer that is not a success it keeps the status code only, never the
// body, which is whoever spec.apiServer points at to write: the Cluster's
// author would otherwise read what any URL the controller reaches answers.
func memberErrorText(err error) string {
	var status apierrors.APIStatus
	if errors.As(err, &status) {
		code := int(status.Status().Code)
		return strings.TrimSpace(fmt.Sprintf("the member answered %d %s", code, http.StatusText(code)))
	}
	return statusText(err.Error())
}
