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

// freshness bounds how long RBAC decides from caches that no longer hear
// from the host. An informer whose list or watch fails keeps what it last
// saw and retries with backoff for as long as the host is away, and a
// watch on a connection that hangs fails nothing for minutes: a grant
// revoked meanwhile would go on being honoured, where Webhook fails
// closed at once. So what counts is progress, not requests: a list that
// returns, or a watch event that is not an error. A kube-apiserver sends
// each watch that allows them (as reflectors do) a bookmark about every
// minute and before its timeout, so a healthy cache hears from the host
// at least that often, however quiet its kind; a watch that opens and
// then fails or closes before its first event is no progress. Once one
// kind has gone staleAfter without progress, RBAC allows nothing until
// it hears again.
type freshness struct {
	staleAfter time.Duration
	clock      clock.PassiveClock

	mu sync.Mutex
	// heard is, per resource, when its last progress was.
	heard map[string]time.Time
}

func newFreshness(staleAfter time.Duration, c clock.PassiveClock) *freshness {
	return &freshness{staleAfter: staleAfter, clock: c, heard: map[string]time.Time{}}
}

// progress records that resource's cache heard from the host now.
func (f *freshness) progress(resource string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.heard[resource] = f.clock.Now()
}

// stale says which resource's cache has not heard from the host for
// longer than staleAfter, and since when; nil when each has.
func (f *freshness) stale() error {
	f.mu.Lock()
	defer f.mu.Unlock()
	now := f.clock.Now()
	for resource, heard := range f.heard {
		if now.Sub(heard) > f.staleAfter {
			return fmt.Errorf("the host's %s are stale: no list or watch event of them since %s", resource, heard.UTC().Format(time.RFC3339))
		}
	}
	return nil
}

// informer registers with host, for obj's type, an informer of resource
// whose progress f records, or fails if one was registered before: its
// progress would not be recorded.
func (f *freshness) informer(host informers.SharedInformerFactory, obj runtime.Object, resource string) (cache.SharedIndexInformer, error) {
	var made cache.SharedIndexInformer
	got := host.InformerFor(obj, func(client kubernetes.Interface, resync time.Duration) cache.SharedIndexInformer {
		f.progress(resource) // the clock starts at registration: until synced, RBAC allows nothing anyway
		inner := cache.NewListWatchFromClient(client.RbacV1().RESTClient(), resource, metav1.NamespaceAll, fields.Everything())
		lw := &cache.ListWatch{
			ListWithContextFunc: func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
				out, err := inner.ListWithContext(ctx, o)
				if err == nil {
					f.progress(resource)
				}
				return out, err
			},
			WatchFuncWithContext: func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
				w, err := inner.WatchWithContext(ctx, o)
				if err != nil {
					return nil, err
				}
				return watch.Filter(w, func(e watch.Event) (watch.Event, bool) {
					if e.Type != watch.Error {
						f.progress(resource)
					}
					return e, true
				}), nil
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

// rbacInformers are the informers of the four RBAC kinds, whose progress
// f records.
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
