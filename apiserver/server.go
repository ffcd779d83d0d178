// Package apiserver is Panorama's aggregated API server: discovery, get,
// list and watch of every synced resource, across clusters or for one, on
// k8s.io/apiserver's GenericAPIServer with delegated authentication and the
// host's authorization (hostauthz).
package apiserver

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strings"

	"github.com/spf13/pflag"
	apidiscoveryv2 "k8s.io/api/apidiscovery/v2"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	utilerrors "k8s.io/apimachinery/pkg/util/errors"
	"k8s.io/apiserver/pkg/authorization/authorizer"
	apirequest "k8s.io/apiserver/pkg/endpoints/request"
	genericapiserver "k8s.io/apiserver/pkg/server"
	"k8s.io/apiserver/pkg/server/healthz"
	genericoptions "k8s.io/apiserver/pkg/server/options"
	"k8s.io/client-go/dynamic"

	searchv1alpha1 "github.com/panorama-io/panorama/apis/search/v1alpha1"
	"github.com/panorama-io/panorama/apiserver/hostauthz"
	"github.com/panorama-io/panorama/apiserver/watchcache"
	"github.com/panorama-io/panorama/internal/responsewriters"
)

var (
	scheme = runtime.NewScheme()
	codecs = serializer.NewCodecFactory(scheme)
)

func init() {
	_ = searchv1alpha1.AddToScheme(scheme)
	metav1.AddToGroupVersion(scheme, schema.GroupVersion{Version: "v1"})
	unversioned := schema.GroupVersion{Group: "", Version: "v1"}
	scheme.AddUnversionedTypes(unversioned, &metav1.Status{}, &metav1.APIVersions{}, &metav1.APIGroupList{},
		&metav1.APIGroup{}, &metav1.APIResourceList{})
}

// Options are the server's flags: the standard ones of an aggregated API
// server, minus etcd and admission, plus how requests are authorized and
// the watch cache. Storage is opened
// by the caller (its flags are sqlstore.Options'), since the all-in-one
// binary shares one store with the controller manager.
type Options struct {
	Recommended *genericoptions.RecommendedOptions
	// ServerRun holds kube-apiserver's own serving flags: in-flight limits
	// (API Priority and Fairness's seats), request timeouts, shutdown.
	ServerRun *genericoptions.ServerRunOptions
	// Authorization chooses how the host's authorization is asked: its
	// RBAC in process, by SubjectAccessReview, or both in turn.
	Authorization hostauthz.Options
	WatchCache    watchcache.Options
}

// NewOptions returns the defaults.
func NewOptions() *Options {
	ro := genericoptions.NewRecommendedOptions("/registry/panorama", codecs.LegacyCodec(searchv1alpha1.SchemeGroupVersion))
	ro.Etcd = nil
	ro.Admission = nil
	return &Options{Recommended: ro, ServerRun: genericoptions.NewServerRunOptions(), Authorization: hostauthz.NewOptions(), WatchCache: watchcache.NewOptions()}
}

// AddFlags binds every flag.
func (o *Options) AddFlags(fs *pflag.FlagSet) {
	o.Recommended.AddFlags(fs)
	o.ServerRun.AddUniversalFlags(fs)
	o.Authorization.AddFlags(fs)
	o.WatchCache.AddFlags(fs)
}

// Complete fills defaults that depend on other flags: outside a cluster the
// delegated authentication and authorization ask the host named by
// --kubeconfig, so `apiserver --kubeconfig X` alone runs.
func (o *Options) Complete() {
	host := o.Recommended.CoreAPI.CoreAPIKubeconfigPath
	if o.Recommended.Authentication.RemoteKubeConfigFile == "" {
		o.Recommended.Authentication.RemoteKubeConfigFile = host
	}
	if o.Recommended.Authorization.RemoteKubeConfigFile == "" {
		o.Recommended.Authorization.RemoteKubeConfigFile = host
	}
}

// Validate reports every flag in error.
func (o *Options) Validate() error {
	errs := append(o.Recommended.Validate(), o.ServerRun.Validate()...)
	errs = append(errs, o.Authorization.Validate()...)
	errs = append(errs, o.WatchCache.Validate()...)
	return utilerrors.NewAggregate(errs)
}

// Server is a ready-to-run server.
type Server struct {
	generic  *genericapiserver.GenericAPIServer
	store    watchcache.Store
	cache    *watchcache.Cache
	registry *Registry
	host     dynamic.Interface
	authz    authorizer.Authorizer
}

// New builds the server over an open store (which the caller closes). It
// reads the store and tails its change log, and never writes to it.
func (o *Options) New(store watchcache.Store) (*Server, error) {
	if err := o.Recommended.SecureServing.MaybeDefaultWithSelfSignedCerts("localhost", nil, []net.IP{net.ParseIP("127.0.0.1")}); err != nil {
		return nil, fmt.Errorf("creating self-signed certificates: %w", err)
	}
	cfg := genericapiserver.NewRecommendedConfig(codecs)
	// ServerRun first: API Priority and Fairness, set up by Recommended,
	// sizes itself by the in-flight limits.
	if err := o.ServerRun.ApplyTo(&cfg.Config); err != nil {
		return nil, err
	}
	cfg.EffectiveVersion = newEffectiveVersion() // version.go; after ServerRun, which sets kube's
	if err := o.Recommended.ApplyTo(cfg); err != nil {
		return nil, err
	}
	if cfg.ClientConfig == nil {
		return nil, errors.New("no host cluster to read Cluster objects from: set --kubeconfig or run in a cluster")
	}
	cfg.RequestInfoResolver = requestInfoResolver{delegate: genericapiserver.NewRequestInfoResolver(&cfg.Config)}
	// The delegated authorizer, which caches the host's answers for
	// --authorization-webhook-cache-{authorized,unauthorized}-ttl, is the
	// Webhook mode; the RBAC mode's informers start with the generic
	// server's, before it is ready.
	delegated := cfg.Authorization.Authorizer
	if delegated == nil {
		return nil, errors.New("no authorizer: Panorama asks the host's authorization for every read")
	}
	authz, authzReady, err := o.Authorization.New(cfg.SharedInformerFactory, delegated, o.Recommended.Authorization)
	if err != nil {
		return nil, err
	}
	if cfg.Authorization.Authorizer, err = serverAuthorizer(authz, o.Recommended.Authorization.AlwaysAllowPaths); err != nil { // authz.go
		return nil, err
	}
	generic, err := cfg.Complete().New("panorama-apiserver", genericapiserver.NewEmptyDelegate())
	if err != nil {
		return nil, err
	}
	host, err := dynamic.NewForConfig(cfg.ClientConfig)
	if err != nil {
		return nil, err
	}
	s := &Server{
		generic: generic, store: store, cache: watchcache.New(store, o.WatchCache),
		registry: NewRegistry(), host: host, authz: authz,
	}
	s.install()
	if err := generic.AddReadyzChecks(append(authzReady, healthz.NamedCheck("storage", func(r *http.Request) error {
		_, _, err := store.Revision(r.Context())
		return err
	}))...); err != nil {
		return nil, err
	}
	return s, nil
}

func (s *Server) install() {
	gv := searchv1alpha1.SchemeGroupVersion
	version := metav1.GroupVersionForDiscovery{GroupVersion: gv.String(), Version: gv.Version}
	group := metav1.APIGroup{Name: gv.Group, Versions: []metav1.GroupVersionForDiscovery{version}, PreferredVersion: version}
	s.generic.DiscoveryGroupManager.AddGroup(group)
	s.generic.AggregatedDiscoveryGroupManager.AddGroupVersion(gv.Group, apidiscoveryv2.APIVersionDiscovery{
		Version: gv.Version, Freshness: apidiscoveryv2.DiscoveryFreshnessCurrent,
		Resources: []apidiscoveryv2.APIResourceDiscovery{{
			Resource: "resources", Scope: apidiscoveryv2.ScopeCluster, Verbs: []string{"get", "list", "watch"},
			ResponseKind: &metav1.GroupVersionKind{Group: gv.Group, Version: gv.Version, Kind: "Resources"},
		}, {
			Resource: "collectionresources", Scope: apidiscoveryv2.ScopeCluster, Verbs: []string{"get", "list"},
			ResponseKind: &metav1.GroupVersionKind{Group: gv.Group, Version: gv.Version, Kind: "CollectionResource"},
		}},
	})
	mux := s.generic.Handler.NonGoRestfulMux
	mux.Handle("/apis/"+gv.Group, http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		g := group
		g.TypeMeta = metav1.TypeMeta{Kind: "APIGroup", APIVersion: "v1"}
		responsewriters.WriteJSON(w, http.StatusOK, &g)
	}))
	mux.Handle("/apis/"+gv.String(), http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		responsewriters.WriteJSON(w, http.StatusOK, &metav1.APIResourceList{
			TypeMeta:     metav1.TypeMeta{Kind: "APIResourceList", APIVersion: "v1"},
			GroupVersion: gv.String(),
			APIResources: []metav1.APIResource{
				{Name: "resources", Kind: "Resources", Verbs: servedVerbs},
				{Name: "collectionresources", SingularName: "collectionresource", Kind: "CollectionResource", Verbs: metav1.Verbs{"get", "list"}},
				viewsResource,
			},
		})
	}))
	h := &Handler{registry: s.registry, store: s.store, cache: s.cache, crds: crdColumns{store: s.store}, authz: s.authz}
	mux.HandlePrefix(searchv1alpha1.ViewsPrefix+"/", h)
	mux.Handle(ResourcesPrefix, h)
	mux.HandlePrefix(ResourcesPrefix+"/", h)
	mux.HandleFunc(CollectionsPath, h.ServeCollections)
	mux.HandlePrefix(CollectionsPath+"/", http.HandlerFunc(h.ServeCollections))
}

// Run serves until ctx ends or the watch cache fails. The Cluster registry
// and the watch cache start as post-start hooks, so /readyz stays false
// until both are filled and no request is served from an empty registry.
func (s *Server) Run(ctx context.Context) error {
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	err := s.generic.AddPostStartHook("panorama-watch-cache", func(hc genericapiserver.PostStartHookContext) error {
		go func() {
			if err := s.cache.Run(hc); err != nil {
				cancel(fmt.Errorf("watch cache: %w", err))
			}
		}()
		return s.cache.WaitForRevision(hc, 0)
	})
	if err != nil {
		return err
	}
	err = s.generic.AddPostStartHook("panorama-cluster-registry", func(hc genericapiserver.PostStartHookContext) error {
		s.registry.Run(hc, s.host) // returns once the Clusters are listed
		return hc.Err()
	})
	if err != nil {
		return err
	}
	err = s.generic.PrepareRun().RunWithContext(ctx)
	if cause := context.Cause(ctx); err == nil && cause != nil && !errors.Is(cause, context.Canceled) {
		err = cause
	}
	return err
}

// requestInfoResolver gives the generic server's filters one resource
// request, get, list or watch of search.panorama.io "resources" named after
// the cluster, for every member resource request; handledByPanorama lets it
// pass and the handler authorizes it per resource type (see authz.go).
// Discovery under the prefix is a non-resource request, which
// system:discovery allows.
type requestInfoResolver struct {
	delegate apirequest.RequestInfoResolver
}

func (r requestInfoResolver) NewRequestInfo(req *http.Request) (*apirequest.RequestInfo, error) {
	cluster, rest, ok := splitPath(req.URL.Path)
	if !ok {
		return r.delegate.NewRequestInfo(req)
	}
	inner, err := memberRequestInfo(req, rest)
	if err != nil || !inner.IsResourceRequest {
		return &apirequest.RequestInfo{Path: req.URL.Path, Verb: strings.ToLower(req.Method)}, nil
	}
	if info, ok := selfReviewInfo(req, inner); ok {
		return info, nil // authorized as the host authorizes its own (selfreview.go)
	}
	gv := searchv1alpha1.SchemeGroupVersion
	return &apirequest.RequestInfo{
		IsResourceRequest: true, Path: req.URL.Path, Verb: inner.Verb, APIPrefix: "apis",
		APIGroup: gv.Group, APIVersion: gv.Version, Namespace: inner.Namespace, Resource: "resources",
		Name: cluster, Parts: []string{"resources", cluster},
	}, nil
}
