package controllers

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"

	"k8s.io/client-go/discovery"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/rest"
)

// oversizedMember serves /readyz streamed and /version with its length
// declared, both four times maxMemberResponseBytes, and sends on written
// how much of each it wrote before the client went away.
func oversizedMember(t *testing.T, written chan<- int64) *httptest.Server {
	const size = 4 * maxMemberResponseBytes
	chunk := bytes.Repeat([]byte("o"), 64<<10)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		switch req.URL.Path {
		case "/readyz":
		case "/version":
			w.Header().Set("Content-Length", strconv.Itoa(size))
		default:
			http.NotFound(w, req)
			return
		}
		var n int64
		for n < size {
			m, err := w.Write(chunk)
			n += int64(m)
			if err != nil {
				break
			}
		}
		written <- n
	}))
	t.Cleanup(srv.Close)
	return srv
}

// TestMemberResponseLimit: a member's /readyz or /version larger than
// maxMemberResponseBytes fails the request with an error naming the
// member, the path and the limit, and is not read whole.
func TestMemberResponseLimit(t *testing.T) {
	written := make(chan int64, 2)
	srv := oversizedMember(t, written)
	dc, err := discovery.NewDiscoveryClientForConfig(withResponseLimit(&rest.Config{Host: srv.URL}, "east"))
	if err != nil {
		t.Fatal(err)
	}
	_, readyzErr := dc.RESTClient().Get().AbsPath("/readyz").DoRaw(t.Context())
	_, versionErr := dc.ServerVersion()
	for path, err := range map[string]error{"/readyz": readyzErr, "/version": versionErr} {
		var tooLarge *responseTooLargeError
		if !errors.As(err, &tooLarge) {
			t.Fatalf("%s: got %v, want a responseTooLargeError", path, err)
		}
		want := fmt.Sprintf("member east: the response to %s is larger than the limit of %d bytes", path, maxMemberResponseBytes)
		if !strings.Contains(err.Error(), want) {
			t.Errorf("%s: error %q does not say %q", path, err, want)
		}
	}
	srv.CloseClientConnections()
	for range 2 {
		if n := <-written; n >= 4*maxMemberResponseBytes {
			t.Errorf("the member wrote all of its %d bytes: the client read on", n)
		}
	}
}

// TestLimitedBodyBoundary: a body of exactly the limit is read whole, one
// byte more fails with the limit's error after the limit's bytes.
func TestLimitedBodyBoundary(t *testing.T) {
	const limit = 10
	tooLarge := errors.New("too large")
	for size, wantErr := range map[int]error{limit - 1: nil, limit: nil, limit + 1: tooLarge} {
		body := &limitedBody{ReadCloser: io.NopCloser(bytes.NewReader(make([]byte, size))), left: limit, tooLarge: tooLarge}
		got, err := io.ReadAll(body)
		if !errors.Is(err, wantErr) || len(got) != min(size, limit) {
			t.Errorf("body of %d bytes: read %d bytes, error %v; want %d bytes, error %v", size, len(got), err, min(size, limit), wantErr)
		}
	}
}

// TestCRDListPaged: the member's CRDs are listed by pages, and a member
// that never stops answering more of them fails the listing.
func TestCRDListPaged(t *testing.T) {
	for name, tc := range map[string]struct{ pages, items int }{
		"three pages": {3, crdListPageSize}, "endless": {-1, crdListPageSize}, "endless empty pages": {-1, 0},
	} {
		pages := tc.pages
		t.Run(name, func(t *testing.T) {
			served := 0
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
				if got := req.URL.Query().Get("limit"); got != strconv.Itoa(crdListPageSize) {
					t.Errorf("listed with limit %q, want %d", got, crdListPageSize)
				}
				served++
				next := ""
				if pages < 0 || served < pages {
					next = strconv.Itoa(served)
				}
				w.Header().Set("Content-Type", "application/json")
				var items []string
				for i := range tc.items {
					items = append(items, fmt.Sprintf(`{"metadata":{"name":"r%d.g%d.example.com"}}`, i, served))
				}
				fmt.Fprintf(w, `{"kind":"PartialObjectMetadataList","apiVersion":"meta.k8s.io/v1","metadata":{"continue":%q},"items":[%s]}`, next, strings.Join(items, ","))
			}))
			defer srv.Close()
			md, err := metadata.NewForConfig(&rest.Config{Host: srv.URL, QPS: -1}) // no client-side throttling of the endless pages
			if err != nil {
				t.Fatal(err)
			}
			got, err := customResourceSelections(t.Context(), md)
			if pages < 0 {
				if err == nil || !strings.Contains(err.Error(), strconv.Itoa(maxMemberCRDs)) || served != maxMemberCRDs/crdListPageSize+1 {
					t.Fatalf("endless member: %d selections after %d pages, error %v", len(got), served, err)
				}
				return
			}
			if err != nil || len(got) != pages*crdListPageSize || got[len(got)-1].Group != "g3.example.com" {
				t.Fatalf("%d selections after %d pages (%v), want %d", len(got), served, err, pages*crdListPageSize)
			}
		})
	}
}
