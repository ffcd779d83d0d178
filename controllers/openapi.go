package controllers

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"net/url"
	"slices"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/client-go/rest"
	"k8s.io/kube-openapi/pkg/handler3"
	"sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/panorama-io/panorama/controllers/synchronizer"
	"github.com/panorama-io/panorama/storage"
)

// Limits on what a member sends about its OpenAPI, which is untrusted
// input: a few times kube-apiserver's largest document (docs/operations.md,
// "Measurements behind the design": OpenAPI documents), and its index. The
// log entry of a changed document holds it twice (object and pre-image),
// which must stay under MariaDB's default max_allowed_packet (16 MiB). A
// document over the limit is left out, the rest stored.
const (
	maxOpenAPIIndexBytes    = 1 << 20
	maxOpenAPIDocumentBytes = 4 << 20
)

// openAPIChecks remembers, per cluster, what its stored documents were last
// checked for and when, so that the member is asked again only every
// HealthInterval or when that changes: a member is checked again before
// that whenever its Cluster's spec changes or a synchronizer of it fails
// (membercheck.go).
//
// The syncs run beside the reconciles, a few at once (openAPISyncsAtOnce):
// a member's documents, fetched, checked and stored, took most of a
// reconcile's time and CPU when many Clusters were added at once
// (BenchmarkFleetReconcile's profile), while the Clusters waited in the
// queue.
type openAPIChecks struct {
	mu   sync.Mutex
	last map[string]openAPICheck
	// running holds each cluster's sync in flight.
	running map[string]*openAPIRun
	// slots holds a token for each sync in flight.
	slots chan struct{}
	// stopped is set by stopAll: no sync starts after it.
	stopped bool
}

// openAPISyncsAtOnce bounds the syncs in flight: each holds documents of
// up to maxOpenAPIDocumentBytes, decoded and encoded again.
const openAPISyncsAtOnce = 2

type openAPIRun struct {
	cancel context.CancelFunc
	done   chan struct{}
}

type openAPICheck struct {
	key string
	at  time.Time
}

// due reports whether cluster's documents should be checked now for key,
// and if so records the check.
func (c *openAPIChecks) due(cluster, key string, interval time.Duration, now time.Time) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if last, ok := c.last[cluster]; ok && last.key == key && now.Sub(last.at) < interval {
		return false
	}
	if c.last == nil {
		c.last = map[string]openAPICheck{}
	}
	c.last[cluster] = openAPICheck{key: key, at: now}
	return true
}

// start runs sync for cluster in the background, unless a sync of it is
// in flight: then the cluster's documents are due at its next check.
func (c *openAPIChecks) start(ctx context.Context, cluster string, sync func(context.Context)) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.stopped {
		return
	}
	if _, ok := c.running[cluster]; ok {
		delete(c.last, cluster)
		return
	}
	if c.running == nil {
		c.running, c.slots = map[string]*openAPIRun{}, make(chan struct{}, openAPISyncsAtOnce)
	}
	ctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	run := &openAPIRun{cancel: cancel, done: make(chan struct{})}
	c.running[cluster] = run
	go func() {
		defer close(run.done)
		defer func() {
			c.mu.Lock()
			delete(c.running, cluster)
			c.mu.Unlock()
		}()
		select {
		case c.slots <- struct{}{}:
			defer func() { <-c.slots }()
		case <-ctx.Done():
			return
		}
		sync(ctx)
	}()
}

// forget cancels cluster's sync in flight and returns once it has
// returned: nothing it writes lands after the cluster's objects are
// removed or another owner takes the cluster over.
func (c *openAPIChecks) forget(cluster string) {
	c.mu.Lock()
	delete(c.last, cluster)
	run := c.running[cluster]
	c.mu.Unlock()
	if run != nil {
		run.cancel()
		<-run.done
	}
}

// stopAll stops every sync, and any from starting, as forget does.
func (c *openAPIChecks) stopAll() {
	c.mu.Lock()
	c.stopped = true
	names := slices.Collect(maps.Keys(c.running))
	c.mu.Unlock()
	for _, name := range names {
		c.forget(name)
	}
}

// checkOpenAPI starts syncOpenAPI when due: every HealthInterval, and at
// once when the connection, the member's version or the selection changes.
// A failure is logged, and the documents stored before are kept: they are
// schemas, which a view serves as the member last had them.
func (r *ClusterReconciler) checkOpenAPI(ctx context.Context, cluster string, epoch int64, configID, memberVersion string, member rest.Interface, sel synchronizer.Selection) {
	key := fmt.Sprint(configID, memberVersion, sel)
	if !r.openAPI.due(cluster, key, r.HealthInterval, time.Now()) {
		return
	}
	r.openAPI.start(ctx, cluster, func(ctx context.Context) {
		if err := syncOpenAPI(ctx, r.Store, cluster, epoch, memberVersion, member, sel); err != nil && ctx.Err() == nil {
			log.FromContext(ctx).Error(err, "storing the member's OpenAPI documents")
		}
	})
}

// syncOpenAPI keeps the member's OpenAPI v3 documents of the group versions
// of sel's resources in storage (storage.OpenAPIResource), for the API server to
// serve under the cluster's views. It reads the member's index and fetches a
// document only when its URL, which carries the member's hash of it, has
// changed since it was stored; documents of group versions no longer synced
// are removed, unless sel is partial. A document the member fails to send, or sends too large or
// not a JSON object, is left out (an older one of it stays) and named in
// the error; the others are stored.
func syncOpenAPI(ctx context.Context, store storage.Interface, cluster string, epoch int64, memberVersion string, member rest.Interface, sel synchronizer.Selection) error {
	var want []string
	for _, res := range sel.Resources {
		if p := storage.OpenAPIPath(res.GVR.GroupVersion()); !slices.Contains(want, p) {
			want = append(want, p)
		}
	}
	stored := storage.OpenAPIIndex{GroupVersions: map[string]storage.OpenAPIEntry{}}
	if o, err := store.Get(ctx, storage.Key{Cluster: cluster, GVR: storage.OpenAPIResource, Name: storage.OpenAPIIndexName}); err == nil {
		if err := storage.DecodeOpenAPI(o.Data, &stored); err != nil {
			return err
		}
	} else if !errors.Is(err, storage.ErrNotFound) {
		return err
	}
	var served handler3.OpenAPIV3Discovery
	if len(want) > 0 {
		data, err := readLimited(ctx, member.Get().AbsPath("/openapi/v3"), maxOpenAPIIndexBytes)
		switch {
		case apierrors.IsNotFound(err):
			// A member without OpenAPI v3 (before Kubernetes 1.27, or
			// turned off): nothing to explain there.
		case err != nil:
			return fmt.Errorf("reading the member's OpenAPI v3 index: %w", err)
		default:
			if err := json.Unmarshal(data, &served); err != nil {
				return fmt.Errorf("the member's OpenAPI v3 index: %w", err)
			}
		}
	}

	index := storage.OpenAPIIndex{MemberVersion: memberVersion, GroupVersions: map[string]storage.OpenAPIEntry{}}
	var changes []storage.Change
	var problems []error
	for _, path := range want {
		gv, ok := served.Paths[path]
		if !ok {
			continue
		}
		if old, ok := stored.GroupVersions[path]; ok && old.MemberURL == gv.ServerRelativeURL {
			index.GroupVersions[path] = old
			continue
		}
		doc, err := fetchOpenAPIDocument(ctx, member, gv.ServerRelativeURL)
		if err != nil {
			problems = append(problems, fmt.Errorf("OpenAPI document %s: %w", path, err))
			if old, ok := stored.GroupVersions[path]; ok {
				index.GroupVersions[path] = old
			}
			continue
		}
		entry := storage.OpenAPIEntry{Hash: storage.Digest(doc), MemberURL: gv.ServerRelativeURL}
		index.GroupVersions[path] = entry
		u, err := storage.OpenAPIDocumentObject(path, storage.OpenAPIDocument{Hash: entry.Hash, Document: string(doc)})
		if err != nil {
			return err
		}
		changes = append(changes, storage.Upsert(u))
	}
	for path, old := range stored.GroupVersions {
		switch _, ok := index.GroupVersions[path]; {
		case ok:
		case sel.Partial && !slices.Contains(want, path):
			index.GroupVersions[path] = old // may still be synced
		default:
			changes = append(changes, storage.Delete("", path))
		}
	}
	u, err := storage.OpenAPIIndexObject(index)
	if err != nil {
		return err
	}
	// The index last: the documents it names are written before it, in
	// the same transaction.
	changes = append(changes, storage.Upsert(u))
	if _, err := store.ForCluster(cluster, epoch).Apply(ctx, storage.OpenAPIResource, changes); err != nil {
		return fmt.Errorf("storing OpenAPI documents: %w", err)
	}
	return errors.Join(problems...)
}

// fetchOpenAPIDocument reads one document by the URL the member's index
// gives, relative to the member's root as client-go's openapi client takes
// it, and checks that it is an OpenAPI document in the shapes the API server
// merges.
func fetchOpenAPIDocument(ctx context.Context, member rest.Interface, serverRelativeURL string) ([]byte, error) {
	u, err := url.Parse(serverRelativeURL)
	if err != nil {
		return nil, err
	}
	req := member.Get().AbsPath(u.Path).SetHeader("Accept", "application/json")
	for k, vs := range u.Query() {
		for _, v := range vs {
			req.Param(k, v)
		}
	}
	data, err := readLimited(ctx, req, maxOpenAPIDocumentBytes)
	if err != nil {
		return nil, err
	}
	var parts storage.OpenAPIParts
	if err := json.Unmarshal(data, &parts); err != nil {
		return nil, fmt.Errorf("not an OpenAPI document: %w", err)
	}
	if parts.OpenAPI == "" {
		return nil, errors.New("not an OpenAPI document: no openapi version")
	}
	return data, nil
}

// readLimited reads the body of req, failing rather than reading more than
// limit bytes.
func readLimited(ctx context.Context, req *rest.Request, limit int64) ([]byte, error) {
	body, err := req.Stream(ctx)
	if err != nil {
		return nil, err
	}
	defer body.Close()
	var buf bytes.Buffer
	n, err := io.Copy(&buf, io.LimitReader(body, limit+1))
	if err != nil {
		return nil, err
	}
	if n > limit {
		return nil, fmt.Errorf("larger than %d bytes", limit)
	}
	return buf.Bytes(), nil
}
