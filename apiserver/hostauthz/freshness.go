package hostauthz

import (
	"context"
	"fmt"
	"sync"
	"time"

	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
	"k8s.io/utils/clock"
)

// freshness bounds how long RBAC decides from caches whose watch of the
// host has broken. An informer whose list or watch fails keeps what it
// last saw and retries with backoff, for as long as the host is away:
// a grant revoked meanwhile would go on being honoured, where Webhook
// fails closed at once. So each request an informer makes to the host is
// observed: the first failure starts the clock, any success stops it, and
// once one informer has failed for staleAfter without a success, RBAC
// allows nothing until it succeeds again. A watch that is open and quiet
// makes no request and fails nothing: only a broken one counts.
type freshness struct {
	staleAfter time.Duration
	clock      clock.PassiveClock

	mu sync.Mutex
	// failingSince is, per resource, when its first failure since its
	// last success was.
	failingSince map[string]time.Time
}

func newFreshness(staleAfter time.Duration, c clock.PassiveClock) *freshness {
	return &freshness{staleAfter: staleAfter, clock: c, failingSince: map[string]time.Time{}}
}

// observe records the outcome of a request for resource.
func (f *freshness) observe(resource string, err error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	switch _, failing := f.failingSince[resource]; {
	case err == nil:
		delete(f.failingSince, resource)
	case !failing:
		f.failingSince[resource] = f.clock.Now()
	}
}

// stale says which resource's requests have failed for longer than
// staleAfter, and since when; nil when none has.
func (f *freshness) stale() error {
	f.mu.Lock()
	defer f.mu.Unlock()
	now := f.clock.Now()
	for resource, since := range f.failingSince {
		if now.Sub(since) > f.staleAfter {
			return fmt.Errorf("the host's %s are stale: every list and watch of them has failed since %s", resource, since.UTC().Format(time.RFC3339))
		}
	}
	return nil
}

// informer registers with host, for obj's type, an informer of resource
// whose requests f observes, or fails if one was registered before: its
// requests would not be observed.
func (f *freshness) informer(host informers.SharedInformerFactory, obj runtime.Object, resource string) (cache.SharedIndexInformer, error) {
	var made cache.SharedIndexInformer
	got := host.InformerFor(obj, func(client kubernetes.Interface, resync time.Duration) cache.SharedIndexInformer {
		inner := cache.NewListWatchFromClient(client.RbacV1().RESTClient(), resource, metav1.NamespaceAll, fields.Everything())
		lw := &cache.ListWatch{
			ListWithContextFunc: func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
				out, err := inner.ListWithContext(ctx, o)
				f.observe(resource, err)
				return out, err
			},
			WatchFuncWithContext: func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
				w, err := inner.WatchWithContext(ctx, o)
				f.observe(resource, err)
				return w, err
			},
		}
		made = cache.NewSharedIndexInformer(lw, obj, resync, cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc})
		return made
	})
	if got != made {
		return nil, fmt.Errorf("an informer of the host's %s was registered before the RBAC authorizer's", resource)
	}
	return got, nil
}

// rbacInformers are the informers of the four RBAC kinds, observed by f.
type rbacInformers struct {
	roles, roleBindings, clusterRoles, clusterRoleBindings cache.SharedIndexInformer
}

func (f *freshness) rbacInformers(host informers.SharedInformerFactory) (*rbacInformers, error) {
	var out rbacInformers
	for _, k := range []struct {
		obj      runtime.Object
		resource string
		informer *cache.SharedIndexInformer
	}{
		{&rbacv1.Role{}, "roles", &out.roles},
		{&rbacv1.RoleBinding{}, "rolebindings", &out.roleBindings},
		{&rbacv1.ClusterRole{}, "clusterroles", &out.clusterRoles},
		{&rbacv1.ClusterRoleBinding{}, "clusterrolebindings", &out.clusterRoleBindings},
	} {
		inf, err := f.informer(host, k.obj, k.resource)
		if err != nil {
			return nil, err
		}
		*k.informer = inf
	}
	return &out, nil
}

// synced are the informers' HasSynced.
func (i *rbacInformers) synced() []cache.InformerSynced {
	return []cache.InformerSynced{i.roles.HasSynced, i.roleBindings.HasSynced, i.clusterRoles.HasSynced, i.clusterRoleBindings.HasSynced}
}
