package controllers

import (
	"fmt"
	"io"
	"net/http"

	"k8s.io/client-go/rest"
)

// maxMemberResponseBytes bounds each response body the controller manager
// reads from a member outside the synchronizers' lists and watches:
// /readyz, /version, discovery, the names of its CRDs (a page of them,
// crdListPageSize) and its OpenAPI documents. Whoever spec.apiServer points
// at writes those answers: unbounded, a hostile member could make the
// controller manager allocate without limit. The largest of them
// legitimately is the aggregated discovery document: a member of
// thousands of CRDs serves a few MiB, and the bound leaves room for far
// more while keeping what one reconcile allocates modest.
const maxMemberResponseBytes = 16 << 20

// responseTooLargeError is a member's response whose body is larger than
// the limit; the read of it fails with this error.
type responseTooLargeError struct {
	cluster, path string
	limit         int64
}

func (e *responseTooLargeError) Error() string {
	return fmt.Sprintf("member %s: the response to %s is larger than the limit of %d bytes", e.cluster, e.path, e.limit)
}

// withResponseLimit is a copy of cluster's cfg whose responses are read up
// to maxMemberResponseBytes. The synchronizers' client must not be made
// from it: a page of a list is legitimately larger.
func withResponseLimit(cfg *rest.Config, cluster string) *rest.Config {
	limited := rest.CopyConfig(cfg)
	limited.Wrap(func(rt http.RoundTripper) http.RoundTripper {
		return &responseLimiter{next: rt, cluster: cluster, limit: maxMemberResponseBytes}
	})
	return limited
}

// responseLimiter fails the read of a response body beyond limit bytes.
type responseLimiter struct {
	next    http.RoundTripper
	cluster string
	limit   int64
}

func (l *responseLimiter) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := l.next.RoundTrip(req)
	if err != nil || resp.Body == nil || resp.Body == http.NoBody {
		return resp, err
	}
	body := &limitedBody{ReadCloser: resp.Body, left: l.limit, tooLarge: &responseTooLargeError{cluster: l.cluster, path: req.URL.Path, limit: l.limit}}
	if resp.ContentLength > l.limit {
		// Declared too large: nothing of it is read.
		body.left = -1
	}
	resp.Body = body
	return resp, nil
}

// WrappedRoundTripper lets client-go reach the transport beneath, as its
// own wrappers do (to cancel a request, or find its TLS config).
func (l *responseLimiter) WrappedRoundTripper() http.RoundTripper { return l.next }

// limitedBody reads its ReadCloser up to left bytes, then fails with
// tooLarge if there is more. It reads one byte beyond the limit to tell a
// body of exactly the limit from a larger one.
type limitedBody struct {
	io.ReadCloser
	left     int64
	tooLarge error
}

func (b *limitedBody) Read(p []byte) (int, error) {
	if b.left < 0 {
		return 0, b.tooLarge
	}
	if int64(len(p)) > b.left+1 {
		p = p[:b.left+1]
	}
	n, err := b.ReadCloser.Read(p)
	b.left -= int64(n)
	if b.left < 0 {
		return n - 1, b.tooLarge
	}
	return n, err
}
