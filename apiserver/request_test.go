package apiserver

import (
	"net/http"
	"sync/atomic"
	"testing"

	apirequest "k8s.io/apiserver/pkg/endpoints/request"
)

// countingResolver counts the member paths parsed.
type countingResolver struct {
	apirequest.RequestInfoResolver
	parsed atomic.Int64
}

func (c *countingResolver) NewRequestInfo(r *http.Request) (*apirequest.RequestInfo, error) {
	c.parsed.Add(1)
	return c.RequestInfoResolver.NewRequestInfo(r)
}

// TestPathParsedOnce: a request's member path is parsed once, whatever
// the view and whatever it asks (see request.resolve).
func TestPathParsedOnce(t *testing.T) {
	_, cfg, _ := testServer(t)
	counting := &countingResolver{RequestInfoResolver: memberInfoResolver}
	memberInfoResolver = counting
	t.Cleanup(func() { memberInfoResolver = counting.RequestInfoResolver })
	for _, path := range []string{
		"/api/v1/pods",
		"/clusters/east/api/v1/pods?limit=1",
		"/clusters/_flat/api/v1/pods",
		"/clusters/_flat/api/v1/pods?groupBy=namespace",
		"/clusters/_flat/api/v1/namespaces/east.ns/pods/a",
		"/clusters/_flat/api/v1/namespaces/east.ns/pods/a/history",
		"/clusters/east/api/v1/namespaces/ns/pods/a/log",
	} {
		counting.parsed.Store(0)
		code, _, body := getJSON(t, viewURL(cfg, path), "")
		if n := counting.parsed.Load(); n != 1 {
			t.Errorf("GET %s (%d %v): parsed %d times, want once", path, code, body, n)
		}
	}
}
