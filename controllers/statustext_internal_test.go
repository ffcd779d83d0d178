package controllers

import (
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"unicode/utf8"

	"k8s.io/client-go/discovery"
	"k8s.io/client-go/rest"

	clusterv1alpha1 "github.com/panorama-io/panorama/apis/cluster/v1alpha1"
)

// TestStatusTextBounded checks that every text a member makes is cut to
// maxStatusText bytes on a UTF-8 boundary before it reaches a Cluster's
// status, conditions included.
func TestStatusTextBounded(t *testing.T) {
	long := strings.Repeat("é", 40<<10) // 80 KiB, two bytes a rune
	for _, s := range []string{long, "x" + long, strings.Repeat("x", maxStatusText+1)} {
		got := statusText(s)
		if len(got) > maxStatusText || !utf8.ValidString(got) || !strings.HasSuffix(got, truncatedMark) || !strings.HasPrefix(s, strings.TrimSuffix(got, truncatedMark)) {
			t.Fatalf("statusText of %d bytes: %d bytes, valid UTF-8 %v, %q…", len(s), len(got), utf8.ValidString(got), got[:20])
		}
	}
	if short := strings.Repeat("x", maxStatusText); statusText(short) != short {
		t.Fatal("a text within the bound is changed")
	}

	var status clusterv1alpha1.ClusterStatus
	setCondition(&status, clusterv1alpha1.ConditionSynced, false, ReasonSyncError, long)
	if m := status.Conditions[0].Message; len(m) > maxStatusText {
		t.Fatalf("condition message of %d bytes", len(m))
	}
}

// TestMemberErrorWithoutBody checks that an error answer of a member is
// described by its status code, never by its body: a Cluster may point at
// any URL the controller reaches, and its author reads the status.
func TestMemberErrorWithoutBody(t *testing.T) {
	const secret = "internal-service-secret"
	for name, answer := range map[string]struct {
		contentType, body string
	}{
		"text":   {"text/plain", "the internal service says " + secret},
		"status": {"application/json", `{"kind":"Status","apiVersion":"v1","status":"Failure","message":"` + secret + `","code":500}`},
		"none":   {"", secret},
	} {
		t.Run(name, func(t *testing.T) {
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if answer.contentType != "" {
					w.Header().Set("Content-Type", answer.contentType)
				}
				w.WriteHeader(http.StatusInternalServerError)
				w.Write([]byte(answer.body))
			}))
			defer srv.Close()
			dc, err := discovery.NewDiscoveryClientForConfig(&rest.Config{Host: srv.URL})
			if err != nil {
				t.Fatal(err)
			}
			// As the health check asks, as discovery, as a client decoding
			// the answer (listing CRDs).
			_, readyz := dc.RESTClient().Get().AbsPath("/readyz").DoRaw(t.Context())
			_, discoveryErr := discover(dc)
			decoded := dc.RESTClient().Get().AbsPath("/apis").Do(t.Context()).Error()
			errs := []error{readyz, discoveryErr, decoded}
			if !slices.ContainsFunc(errs, func(err error) bool { return err != nil && strings.Contains(err.Error(), secret) }) {
				t.Fatalf("no error of client-go holds the body (%v): the test shows nothing", errs)
			}
			for _, err := range errs {
				if err == nil {
					t.Fatal("no error")
				}
				if got := memberErrorText(err); strings.Contains(got, secret) || !strings.Contains(got, "500 Internal Server Error") {
					t.Fatalf("%v: %q", err, got)
				}
			}
		})
	}
}
