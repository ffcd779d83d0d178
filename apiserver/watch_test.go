package apiserver

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/panorama-io/panorama/apiserver/watchcache"
)

// startWatch opens a watch as user; the caller closes the body.
func startWatch(t *testing.T, ctx context.Context, url, user string) *http.Response {
	t.Helper()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	req.Header.Set("Impersonate-User", user)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	return resp
}

// TestWatchLimit: beyond the per-user limit a watch is refused with a 429
// Status and Retry-After, and a closed watch frees its place.
func TestWatchLimit(t *testing.T) {
	store, cfg, _ := testServerWith(t, watchcache.Options{PollInterval: 100 * time.Millisecond, MaxWatchesPerUser: 1})
	putPod(t, store, "east", "a")
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	url := cfg.Host + "/api/v1/pods?watch=1"
	first := startWatch(t, ctx, url, "admin")
	if first.StatusCode != http.StatusOK {
		t.Fatalf("first watch: %d", first.StatusCode)
	}
	second := startWatch(t, ctx, url, "admin")
	var st metav1.Status
	err := json.NewDecoder(second.Body).Decode(&st)
	second.Body.Close()
	if err != nil || second.StatusCode != http.StatusTooManyRequests || st.Reason != metav1.StatusReasonTooManyRequests ||
		st.Details == nil || st.Details.RetryAfterSeconds != watchRetryAfterSeconds ||
		second.Header.Get("Retry-After") != fmt.Sprint(watchRetryAfterSeconds) {
		t.Fatalf("second watch: %d, Retry-After %q, %+v, %v", second.StatusCode, second.Header.Get("Retry-After"), st, err)
	}
	first.Body.Close()
	for {
		again := startWatch(t, ctx, url, "admin")
		again.Body.Close()
		if again.StatusCode == http.StatusOK {
			break
		}
		if ctx.Err() != nil {
			t.Fatalf("a watch after the first closed: %d", again.StatusCode)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// TestWatchTooLargeResourceVersion: a watch at a revision not reached
// ends, as kube-apiserver's, with an ERROR event carrying a 504 Status
// whose cause is ResourceVersionTooLarge.
func TestWatchTooLargeResourceVersion(t *testing.T) {
	store, cfg, _ := testServerWith(t, watchcache.Options{PollInterval: 100 * time.Millisecond, FreshnessTimeout: 200 * time.Millisecond})
	putPod(t, store, "east", "a")
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	resp := startWatch(t, ctx, cfg.Host+"/api/v1/pods?watch=1&resourceVersion=1000", "admin")
	defer resp.Body.Close()
	var event struct {
		Type   string
		Object metav1.Status
	}
	if err := json.NewDecoder(resp.Body).Decode(&event); err != nil {
		t.Fatalf("no event: %v", err)
	}
	st := event.Object
	if event.Type != "ERROR" || st.Code != http.StatusGatewayTimeout || st.Reason != metav1.StatusReasonTimeout ||
		st.Details == nil || len(st.Details.Causes) != 1 || st.Details.Causes[0].Type != metav1.CauseTypeResourceVersionTooLarge {
		t.Fatalf("watch at 1000 with the store at 1: %+v", event)
	}
}

// TestCachedListIgnoresLimit: a resourceVersion=0 list is the whole
// selection from the watch cache, limit or not, as kube-apiserver 1.37's.
func TestCachedListIgnoresLimit(t *testing.T) {
	store, cfg, _ := testServer(t)
	putPod(t, store, "east", "a")
	putPod(t, store, "west", "b")
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		code, _, body := getJSON(t, cfg.Host+"/api/v1/pods?resourceVersion=0&limit=1", "")
		items, _ := body["items"].([]any)
		meta, _ := body["metadata"].(map[string]any)
		if code == http.StatusOK && len(items) == 2 && meta["continue"] == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("resourceVersion=0&limit=1: %d %v", code, body)
		}
	}
}
