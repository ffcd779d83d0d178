package controllers

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"mime"
	"net/http"
	"sync"

	apidiscoveryv2 "k8s.io/api/apidiscovery/v2"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/rest"
)

// aggregatedPaths are where kube-apiserver serves its aggregated discovery
// (apidiscovery.k8s.io/v2): the core group, then every other.
var aggregatedPaths = [2]string{"/api", "/apis"}

// discoveries remembers, per cluster, the member's resources as its last
// aggregated discovery documents gave them, with their ETags. kube-apiserver
// answers a request for a document that names its ETag with 304 Not
// Modified, so a member whose resources did not change is rediscovered in
// two empty answers rather than by decoding every group's resources again;
// a CRD added or removed changes the document, and so its ETag. A member
// that serves no aggregated discovery (before Kubernetes 1.30, or another
// API server) is discovered in full each time.
type discoveries struct {
	mu   sync.Mutex
	last map[string]discovered
}

type discovered struct {
	// configID is the connection's: another member may answer there now.
	configID  string
	etags     [2]string // of aggregatedPaths
	resources *memberResources
}

// discover returns what the member dc reaches serves.
func (d *discoveries) discover(ctx context.Context, cluster, configID string, dc *discovery.DiscoveryClient) (*memberResources, error) {
	d.mu.Lock()
	last, ok := d.last[cluster]
	d.mu.Unlock()
	if !ok || last.configID != configID {
		last = discovered{configID: configID}
	}
	rc, ok := dc.RESTClient().(*rest.RESTClient)
	if !ok {
		return discover(dc)
	}
	var docs [2]*apidiscoveryv2.APIGroupDiscoveryList
	var etags [2]string
	for i, path := range aggregatedPaths {
		doc, etag, unchanged, err := fetchAggregated(ctx, rc, path, last.etags[i])
		if err != nil {
			d.forget(cluster)
			return nil, err
		}
		if unchanged {
			continue
		}
		if doc == nil {
			// Not served, or failed: client-go's discovery says which.
			d.forget(cluster)
			return discover(dc)
		}
		docs[i], etags[i] = doc, etag
	}
	if docs[0] == nil && docs[1] == nil && last.resources != nil {
		return last.resources, nil
	}
	// A document changed: both are read afresh, since what is remembered
	// is what the two made together.
	for i, path := range aggregatedPaths {
		if docs[i] != nil {
			continue
		}
		doc, etag, _, err := fetchAggregated(ctx, rc, path, "")
		if err != nil {
			d.forget(cluster)
			return nil, err
		}
		if doc == nil {
			d.forget(cluster)
			return discover(dc)
		}
		docs[i], etags[i] = doc, etag
	}
	var groups []metav1.APIGroup
	var lists []*metav1.APIResourceList
	partial := false
	for _, doc := range docs {
		g, resources, failed := discovery.SplitGroupsAndResources(*doc)
		groups = append(groups, g.Groups...)
		for _, l := range resources {
			lists = append(lists, l)
		}
		partial = partial || len(failed) > 0
	}
	m := memberResourcesOf(groups, lists, partial)
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.last == nil {
		d.last = map[string]discovered{}
	}
	d.last[cluster] = discovered{configID: configID, etags: etags, resources: m}
	return m, nil
}

func (d *discoveries) forget(cluster string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	delete(d.last, cluster)
}

// fetchAggregated reads the aggregated discovery document at path, unless
// etag, when not empty, is still its ETag (unchanged). doc is nil when the
// member answered anything else than the document, or failed: client-go's
// discovery then reads the member. err is a document larger than rc's
// client reads (withResponseLimit), which ends discovery instead, since
// client-go's would read the same document again.
func fetchAggregated(ctx context.Context, rc *rest.RESTClient, path, etag string) (doc *apidiscoveryv2.APIGroupDiscoveryList, newETag string, unchanged bool, err error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, rc.Get().AbsPath(path).URL().String(), nil)
	if err != nil {
		return nil, "", false, nil
	}
	req.Header.Set("Accept", discovery.AcceptV2)
	if etag != "" {
		req.Header.Set("If-None-Match", etag)
	}
	resp, err := rc.Client.Do(req)
	if err != nil {
		return nil, "", false, tooLarge(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode == http.StatusNotModified && etag != "" {
		return nil, etag, true, nil
	}
	if resp.StatusCode != http.StatusOK || !isAggregated(resp.Header.Get("Content-Type")) {
		return nil, "", false, nil
	}
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, "", false, tooLarge(err)
	}
	doc = &apidiscoveryv2.APIGroupDiscoveryList{}
	if err := json.Unmarshal(body, doc); err != nil {
		return nil, "", false, nil
	}
	return doc, resp.Header.Get("ETag"), false, nil
}

// tooLarge is err if a response was larger than its client reads, and nil
// for any other failure.
func tooLarge(err error) error {
	var e *responseTooLargeError
	if errors.As(err, &e) {
		return err
	}
	return nil
}

// isAggregated says whether contentType is that of an aggregated
// discovery document, apidiscovery.k8s.io/v2's APIGroupDiscoveryList.
func isAggregated(contentType string) bool {
	_, params, err := mime.ParseMediaType(contentType)
	return err == nil && params["g"] == apidiscoveryv2.SchemeGroupVersion.Group && params["v"] == apidiscoveryv2.SchemeGroupVersion.Version &&
		params["as"] == "APIGroupDiscoveryList"
}
