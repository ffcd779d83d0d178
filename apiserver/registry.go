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
	"github.com/panorama-io/panorama/internal/builtin"
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
// cluster is "", in discovery's order (see groupOrder). Across clusters
// each resource has the kind and scope that most of the clusters serving
// it claim (see ballot.go): whatever a member says of a resource, it does
// not change how the view serves the others' objects of it, unless it is
// the oldest of a tie.
func (r *Registry) Resources(cluster string) []storage.Resource {
	return r.ResourcesWith(cluster)
}

// ResourcesWith is Resources with the server's own resources among them,
// as discovery lists them.
func (r *Registry) ResourcesWith(cluster string, own ...storage.Resource) []storage.Resource {
	r.mu.RLock()
	defer r.mu.RUnlock()
	var out []storage.Resource
	order := groupOrder{}
	if cluster != "" {
		if c := r.clusters[cluster]; c != nil {
			out = slices.Collect(maps.Values(c.resources))
		}
	} else {
		ballots := map[schema.GroupVersionResource]*ballot[storage.Resource]{}
		for seniority, c := range r.seniority() {
			groups := map[string]bool{}
			for gvr, res := range c.resources {
				if ballots[gvr] == nil {
					ballots[gvr] = newBallot(sameResource)
				}
				ballots[gvr].cast(res)
				groups[gvr.Group] = true
			}
			for g := range groups {
				order.servedBy(g, seniority)
			}
		}
		for _, b := range ballots {
			out = append(out, b.winner())
		}
	}
	out = append(out, own...)
	slices.SortFunc(out, func(a, b storage.Resource) int {
		return cmp.Or(order.compare(a.GVR.Group, b.GVR.Group),
			version.CompareKubeAwareVersionStrings(b.GVR.Version, a.GVR.Version),
			strings.Compare(a.GVR.Version, b.GVR.Version), // v1 and v01 compare equal above
			strings.Compare(a.GVR.Resource, b.GVR.Resource))
	})
	return out
}

func sameResource(a, b storage.Resource) bool { return a == b }

// groupOrder orders groups as discovery lists them: the core group, then
// the groups Kubernetes itself serves, then the rest. Clients resolve a
// name that several groups serve (a CRD's `deployments`, a short name) to
// the group discovery lists first, as kube-apiserver's own discovery ranks
// its groups above any CRD's: a member's group must not capture `kubectl
// get deployments` of the view. Which groups are Kubernetes' own is
// package builtin's to know, not the order a member claims. Within each,
// across clusters, the groups more clusters serve come first, then those
// of older clusters (see seniority), then by name: one member's CRD
// `httproutes` does not take the name from the fleet's Gateway API.
type groupOrder map[string]*groupServers

type groupServers struct {
	clusters int
	eldest   int // the seniority of the oldest cluster serving the group
}

// servedBy counts a cluster, by its seniority (oldest first), as serving
// group.
func (o groupOrder) servedBy(group string, seniority int) {
	if o[group] == nil {
		o[group] = &groupServers{eldest: seniority}
	}
	o[group].clusters++
}

func (o groupOrder) compare(a, b string) int {
	sa, sb := o[a], o[b]
	if sa == nil {
		sa = &groupServers{}
	}
	if sb == nil {
		sb = &groupServers{}
	}
	return cmp.Or(cmp.Compare(groupRank(a), groupRank(b)), cmp.Compare(sb.clusters, sa.clusters),
		cmp.Compare(sa.eldest, sb.eldest), strings.Compare(a, b))
}

// groupRank is a group's place in discovery: the core group, then
// Kubernetes' own (kubernetesRank), then the rest.
func groupRank(group string) int {
	switch {
	case group == "":
		return 0
	case builtin.Group(group):
		return kubernetesRank
	default:
		return kubernetesRank + 1
	}
}

const kubernetesRank = 1

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
