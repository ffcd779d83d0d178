// Package viewclient reads Panorama's views through the host with the
// user's own credentials: every request is one kubectl could make, so the
// host authenticates it and Panorama authorizes it as it would kubectl's.
// The MCP server and the kubectl plugin are its clients.
package viewclient

import (
	"context"
	"encoding/json"
	"fmt"
	"net/url"
	pathpkg "path"
	"strings"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	utiljson "k8s.io/apimachinery/pkg/util/json"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/restmapper"

	clusterv1alpha1 "github.com/panorama-io/panorama/apis/cluster/v1alpha1"
	searchv1alpha1 "github.com/panorama-io/panorama/apis/search/v1alpha1"
)

// tableAccept asks a view for a meta.k8s.io Table, as kubectl get does:
// the member's own printer columns, with Panorama's CLUSTER column.
const tableAccept = "application/json;as=Table;v=v1;g=meta.k8s.io,application/json"

// Client reads the views of one host.
type Client struct {
	rest   rest.Interface
	mapper meta.RESTMapper
	// discovered is the mapper's cache of the view's discovery, reset
	// (at most every rediscoverAfter) when a resource is not in it, so
	// that a resource synced since the client started is found.
	discovered *restmapper.DeferredDiscoveryRESTMapper
	discovery  discovery.CachedDiscoveryInterface
	mu         sync.Mutex
	resetAt    time.Time
}

// rediscoverAfter bounds how often a name the mapper lacks has the view's
// discovery read again.
const rediscoverAfter = 10 * time.Second

// New is a client of the views of the host that host reaches, with its
// credentials.
func New(host *rest.Config) (*Client, error) {
	cfg := rest.CopyConfig(host)
	cfg.APIPath = "/"
	cfg.GroupVersion = &schema.GroupVersion{}
	cfg.NegotiatedSerializer = scheme.Codecs.WithoutConversion()
	// Warnings go to the caller with each answer, not to the log.
	cfg.WarningHandlerWithContext = rest.NoWarnings{}
	// A client asking each cluster's view would take minutes over a large
	// fleet at client-go's default of 5 a second. The host's own priority
	// and fairness still bounds the user.
	cfg.QPS, cfg.Burst = 50, 100
	client, err := rest.UnversionedRESTClientFor(cfg)
	if err != nil {
		return nil, err
	}
	// Discovery of the view across clusters (open to every authenticated
	// user) maps what a user names, "deploy" or "deployments.apps", as
	// kubectl would (rediscover).
	all := rest.CopyConfig(host)
	all.Host = strings.TrimSuffix(host.Host, "/") + searchv1alpha1.ViewPath("")
	dc, err := discovery.NewDiscoveryClientForConfig(all)
	if err != nil {
		return nil, err
	}
	cached := memory.NewMemCacheClient(dc)
	discovered := restmapper.NewDeferredDiscoveryRESTMapper(cached)
	mapper := restmapper.NewShortcutExpander(discovered, cached, nil)
	return &Client{rest: client, mapper: mapper, discovered: discovered, discovery: cached}, nil
}

// Mapper maps kinds and resources as the view across clusters serves them.
func (c *Client) Mapper() meta.RESTMapper { return c.mapper }

// Discovery is the cached discovery of the view across clusters.
func (c *Client) Discovery() discovery.CachedDiscoveryInterface { return c.discovery }

// rediscover resets the mapper's discovery, unless it was reset lately,
// and reports whether it did.
func (c *Client) rediscover() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if time.Since(c.resetAt) < rediscoverAfter {
		return false
	}
	c.resetAt = time.Now()
	c.discovered.Reset()
	return true
}

// Mapping resolves a resource as kubectl spells it (pods, po,
// deployments.apps, deployments.v1.apps).
func (c *Client) Mapping(ctx context.Context, resource string) (*meta.RESTMapping, error) {
	if resource == "" {
		return nil, BadInput("resource is required (pods, deployments.apps, ...)")
	}
	gvr, gr := schema.ParseResourceArg(strings.ToLower(resource))
	if gvr != nil {
		// "deployments.v1.apps", or the group of "deployments.apps" read
		// as a version: the first only if the view serves it.
		if full, err := c.mapper.ResourceFor(*gvr); err == nil {
			return c.restMapping(full)
		}
	}
	full, err := c.mapper.ResourceFor(gr.WithVersion(""))
	if meta.IsNoMatchError(err) && c.rediscover() {
		full, err = c.mapper.ResourceFor(gr.WithVersion(""))
	}
	if meta.IsNoMatchError(err) {
		return nil, BadInput(fmt.Sprintf("resource %q is not served by Panorama's views: see the resources of `kubectl api-resources` through them", resource))
	}
	if err != nil {
		// Discovery keeps the status line of a refusal, not its Status:
		// ask the view once more for the message that says why.
		if _, _, why := c.Get(ctx, searchv1alpha1.ViewPath("")+"/api", nil, false); why != nil {
			return nil, why
		}
		return nil, err
	}
	return c.restMapping(full)
}

func (c *Client) restMapping(gvr schema.GroupVersionResource) (*meta.RESTMapping, error) {
	gvk, err := c.mapper.KindFor(gvr)
	if err != nil {
		return nil, err
	}
	return c.mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
}

// ResourcePath is the member-style path of a resource's collection, in a
// namespace or not.
func ResourcePath(gvr schema.GroupVersionResource, namespace string) string {
	p := "/apis/" + gvr.Group + "/" + gvr.Version
	if gvr.Group == "" {
		p = "/api/" + gvr.Version
	}
	if namespace != "" {
		p += "/namespaces/" + namespace
	}
	return p + "/" + gvr.Resource
}

// ObjectPath is the member-style path of one object.
func ObjectPath(m *meta.RESTMapping, namespace, name string) string {
	if !IsNamespaced(m) {
		namespace = ""
	}
	return ResourcePath(m.Resource, namespace) + "/" + name
}

// CollectionPath is the path of a collection of several kinds.
func CollectionPath(name string) string {
	return panoramaAPI + "collectionresources/" + url.PathEscape(name)
}

// Get reads path of the host with query, as JSON or a Table, and returns
// the body with the warnings the answer carried (clusters left out,
// deprecations). A Status answer comes back as its StatusError.
func (c *Client) Get(ctx context.Context, path string, query url.Values, table bool) ([]byte, []string, error) {
	if err := OfTheViews(path); err != nil {
		return nil, nil, err
	}
	req := c.rest.Get().AbsPath(path)
	for k, vs := range query {
		for _, val := range vs {
			req = req.Param(k, val)
		}
	}
	if table {
		req = req.SetHeader("Accept", tableAccept)
	}
	res := req.Do(ctx)
	var warnings []string
	for _, w := range res.Warnings() {
		warnings = append(warnings, w.Text)
	}
	body, err := res.Raw()
	if err != nil {
		// Raw's error is the status line alone; Error decodes the Status
		// the answer holds, with the message that says why.
		return nil, warnings, res.Error()
	}
	return body, warnings, nil
}

// OfTheViews refuses a path that would leave Panorama's API (its views
// and collections): one whose names (a user's input, an owner reference
// a member's tenant wrote) hold ".." or "." segments, which the request's
// path would resolve elsewhere on the host, as whoever runs the client.
func OfTheViews(p string) error {
	if pathpkg.Clean(p) != p || !strings.HasPrefix(p, panoramaAPI) && p != ClustersPath {
		return BadInput(fmt.Sprintf("%q is not a path of Panorama's views: names, namespaces and clusters may not hold '.' or '..' segments", p))
	}
	return nil
}

// panoramaAPI prefixes the views and collections; ClustersPath lists the
// host's Clusters.
var (
	panoramaAPI  = "/apis/" + searchv1alpha1.GroupName + "/" + searchv1alpha1.Version + "/"
	ClustersPath = "/apis/" + clusterv1alpha1.GroupVersion.Group + "/" + clusterv1alpha1.GroupVersion.Version + "/clusters"
)

// GetJSON reads path into out.
func (c *Client) GetJSON(ctx context.Context, path string, query url.Values, out any) ([]string, error) {
	body, warnings, err := c.Get(ctx, path, query, false)
	if err != nil {
		return warnings, err
	}
	if err := json.Unmarshal(body, out); err != nil {
		return warnings, fmt.Errorf("decoding the answer of %s: %w", path, err)
	}
	return warnings, nil
}

// GetTable reads path as a Table whose rows carry their objects'
// metadata.
func (c *Client) GetTable(ctx context.Context, path string, query url.Values) (*metav1.Table, []string, error) {
	q := url.Values{}
	for k, vs := range query {
		q[k] = vs
	}
	q.Set("includeObject", "Metadata")
	body, warnings, err := c.Get(ctx, path, q, true)
	if err != nil {
		return nil, warnings, err
	}
	// As kubectl decodes it: whole numbers stay integers, which a
	// printer would otherwise write as floats (1.234567e+06).
	var t metav1.Table
	if err := utiljson.Unmarshal(body, &t); err != nil {
		return nil, warnings, fmt.Errorf("decoding the table of %s: %w", path, err)
	}
	if t.Kind != "Table" {
		return nil, warnings, fmt.Errorf("%s answered %s, not a Table", path, t.Kind)
	}
	return &t, warnings, nil
}

// BadInput is the error of an argument no request can be made of: the
// BadRequest Status the server would give it, without asking.
func BadInput(msg string) error { return &InputError{apierrors.NewBadRequest(msg)} }

// InputError is a BadInput error. It is a Status, for clients that answer
// with one (MCP), and says it came from no server, for those that print
// the two apart (kubectl prints "error: ..." for its own).
type InputError struct{ *apierrors.StatusError }

// Unwrap lets errors.As find the StatusError.
func (e *InputError) Unwrap() error { return e.StatusError }

// IsNamespaced reports whether m is of a namespaced resource.
func IsNamespaced(m *meta.RESTMapping) bool { return m.Scope.Name() == meta.RESTScopeNameNamespace }
