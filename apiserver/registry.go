package apiserver

import (
	"cmp"
	"context"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/version"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/dynamic/dynamicinformer"
	"k8s.io/client-go/tools/cache"

	clusterv1alpha1 "github.com/panorama-io/panorama/apis/cluster/v1alpha1"
	"github.com/panorama-io/panorama/storage"
)

var clustersGVR = clusterv1alpha1.GroupVersion.WithResource("clusters")

// clusterInfo is what the server knows of one Cluster.
type clusterInfo struct {
	name         string
	created      time.Time // the Cluster's creationTimestamp: see seniority
	ready        bool
	readyMessage string
	resources    map[schema.GroupVersionResource]storage.Resource
	version      string // the member's GitVersion, "" until known (version.go)
}

// Registry knows which clusters exist and which resources each syncs, from
// the Cluster objects of the host: discovery and routing follow it live.
type Registry struct {
	mu       sync.RWMutex
	clusters map[string]*clusterInfo
}

// NewRegistry makes an empty registry.
func NewRegistry() *Registry { return &Registry{clusters: map[string]*clusterInfo{}} }

// Run keeps the registry up to date from the host's Cluster objects.
func (r *Registry) Run(ctx context.Context, client dynamic.Interface) {
	factory := dynamicinformer.NewDynamicSharedInformerFactory(client, 0)
	inf := factory.ForResource(clustersGVR).Informer()
	_, _ = inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(o any) { r.set(o) },
		UpdateFunc: func(_, o any) { r.set(o) },
		DeleteFunc: func(o any) {
			if d, ok := o.(cache.DeletedFinalStateUnknown); ok {
				o = d.Obj
			}
			if u, ok := o.(*unstructured.Unstructured); ok {
				r.mu.Lock()
				delete(r.clusters, u.GetName())
				r.mu.Unlock()
			}
		},
	})
	factory.Start(ctx.Done())
	cache.WaitForCacheSync(ctx.Done(), inf.HasSynced)
}

func (r *Registry) set(o any) {
	u, ok := o.(*unstructured.Unstructured)
	if !ok {
		return
	}
	var c clusterv1alpha1.Cluster
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, &c); err != nil {
		return
	}
	r.Set(&c)
}

// Set records one Cluster.
func (r *Registry) Set(c *clusterv1alpha1.Cluster) {
	info := &clusterInfo{
		name: c.Name, created: c.CreationTimestamp.Time, version: c.Status.Version,
		resources: map[schema.GroupVersionResource]storage.Resource{storage.CRDResource: crdResource}, // crds.go
	}
	if cond := meta.FindStatusCondition(c.Status.Conditions, clusterv1alpha1.ConditionReady); cond != nil {
		info.ready = cond.Status == "True"
		info.readyMessage = cond.Message
	}
	for _, s := range c.Status.SyncResources {
		gvr := schema.GroupVersionResource{Group: s.Group, Version: s.Version, Resource: s.Resource}
		info.resources[gvr] = storage.Resource{GVR: gvr, Kind: s.Kind, Namespaced: s.Namespaced}
	}
	r.mu.Lock()
	r.clusters[c.Name] = info
	r.mu.Unlock()
}

// Cluster reports whether a cluster exists, and whether it is ready.
func (r *Registry) Cluster(name string) (exists, ready bool, message string) {
	r.mu.RLock()
	defer r.mu.RUnlock()
	c := r.clusters[name]
	if c == nil {
		return false, false, ""
	}
	return true, c.ready, c.readyMessage
}

// Resources lists what cluster serves, or what any cluster serves when
// cluster is "", sorted by group, version and resource. Across clusters
// each resource has the kind and scope that most of the clusters serving
// it claim (see ballot.go): whatever a member says of a resource, it does
// not change how the view serves the others' objects of it, unless it is
// the oldest of a tie.
func (r *Registry) Resources(cluster string) []storage.Resource {
	r.mu.RLock()
	defer r.mu.RUnlock()
	var out []storage.Resource
	if cluster != "" {
		if c := r.clusters[cluster]; c != nil {
			out = slices.Collect(maps.Values(c.resources))
		}
	} else {
		ballots := map[schema.GroupVersionResource]*ballot[storage.Resource]{}
		for _, c := range r.seniority() {
			for gvr, res := range c.resources {
				if ballots[gvr] == nil {
					ballots[gvr] = newBallot(sameResource)
				}
				ballots[gvr].cast(res)
			}
		}
		for _, b := range ballots {
			out = append(out, b.winner())
		}
	}
	slices.SortFunc(out, func(a, b storage.Resource) int {
		if c := strings.Compare(a.GVR.Group, b.GVR.Group); c != 0 {
			return c
		}
		if c := version.CompareKubeAwareVersionStrings(b.GVR.Version, a.GVR.Version); c != 0 {
			return c
		}
		return strings.Compare(a.GVR.Resource, b.GVR.Resource)
	})
	return out
}

func sameResource(a, b storage.Resource) bool { return a == b }

// Lookup finds a served resource by group, version and plural name, as
// Resources has it.
func (r *Registry) Lookup(cluster string, gvr schema.GroupVersionResource) (storage.Resource, bool) {
	for _, res := range r.Resources(cluster) {
		if res.GVR == gvr {
			return res, true
		}
	}
	return storage.Resource{}, false
}

// serving lists the clusters that serve gvr, oldest first.
func (r *Registry) serving(gvr schema.GroupVersionResource) []string {
	r.mu.RLock()
	defer r.mu.RUnlock()
	var out []string
	for _, c := range r.seniority() {
		if _, ok := c.resources[gvr]; ok {
			out = append(out, c.name)
		}
	}
	return out
}

// seniorityRanks ranks the clusters, the oldest 0 (see seniority).
func (r *Registry) seniorityRanks() map[string]int {
	r.mu.RLock()
	defer r.mu.RUnlock()
	out := map[string]int{}
	for i, c := range r.seniority() {
		out[c.name] = i
	}
	return out
}

// seniority lists the clusters oldest first: by the creation of their
// Cluster, then by name. It decides what members claim in a tie, since
// whoever may create a Cluster can neither backdate it nor (unlike its
// name) choose where it ranks among those already there. The caller holds
// r.mu.
func (r *Registry) seniority() []*clusterInfo {
	out := slices.Collect(maps.Values(r.clusters))
	slices.SortFunc(out, func(a, b *clusterInfo) int {
		return cmp.Or(a.created.Compare(b.created), strings.Compare(a.name, b.name))
	})
	return out
}

// Names lists the clusters, sorted.
func (r *Registry) Names() []string {
	r.mu.RLock()
	defer r.mu.RUnlock()
	out := make([]string, 0, len(r.clusters))
	for name := range r.clusters {
		out = append(out, name)
	}
	slices.Sort(out)
	return out
}

// NotReady maps the clusters that are not ready to why, for warnings.
func (r *Registry) NotReady() map[string]string {
	r.mu.RLock()
	defer r.mu.RUnlock()
	out := map[string]string{}
	for name, c := range r.clusters {
		if !c.ready {
			out[name] = c.readyMessage
		}
	}
	return out
}
