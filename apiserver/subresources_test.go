package apiserver

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	clientscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/tools/remotecommand"
	"k8s.io/streaming/pkg/httpstream"
)

// TestSubresources refuses at once, with a Status saying where to go, the
// subresources Panorama holds nothing for, to whoever may read the object.
func TestSubresources(t *testing.T) {
	store, cfg, _ := testServer(t)
	putPod(t, store, "east", "a")
	east := kubernetes.NewForConfigOrDie(as(cfg, "admin", "east"))
	ctx := context.Background()

	start := time.Now()
	_, err := east.CoreV1().Pods("ns").GetLogs("a", &corev1.PodLogOptions{Follow: true}).Stream(ctx)
	if !apierrors.IsMethodNotSupported(err) ||
		!strings.Contains(err.Error(), `holds no logs; ask cluster "east" directly: kubectl --context <context of east> logs -n ns pods/a`) {
		t.Fatalf("logs: %v", err)
	}
	if d := time.Since(start); d > 2*time.Second {
		t.Errorf("logs answered in %v", d)
	}
	// kubectl exec's first try, a WebSocket, gets the message itself (it
	// falls back to a POST only when the upgrade fails).
	url := east.CoreV1().RESTClient().Post().Namespace("ns").Resource("pods").Name("a").SubResource("exec").
		VersionedParams(&corev1.PodExecOptions{Command: []string{"sh"}, Stdout: true}, clientscheme.ParameterCodec).URL()
	ws, err := remotecommand.NewWebSocketExecutor(as(cfg, "admin", "east"), "GET", url.String())
	if err != nil {
		t.Fatal(err)
	}
	err = ws.StreamWithContext(ctx, remotecommand.StreamOptions{Stdout: io.Discard})
	t.Logf("DEBUG %T %v", err, err)
	if err == nil || httpstream.IsUpgradeFailure(err) || !strings.Contains(err.Error(), "cannot run commands in containers; ask cluster \"east\" directly") {
		t.Fatalf("WebSocket exec: %v", err)
	}
	for _, c := range []struct {
		method, path, want string
	}{
		{http.MethodPost, "/clusters/east/api/v1/namespaces/ns/pods/a/exec?command=sh", "cannot run commands in containers; ask cluster \"east\" directly: kubectl --context <context of east> exec -n ns pods/a -- <command>"},
		{http.MethodGet, "/clusters/east/api/v1/namespaces/ns/pods/a/exec?command=sh", "cannot run commands"}, // a WebSocket exec
		{http.MethodPost, "/clusters/east/api/v1/namespaces/ns/pods/a/attach", "cannot attach"},
		{http.MethodPost, "/clusters/east/api/v1/namespaces/ns/pods/a/portforward", "port-forward -n ns pods/a <port>"},
		{http.MethodGet, "/clusters/east/api/v1/namespaces/ns/pods/a/proxy/metrics", "get --raw /api/v1/namespaces/ns/pods/a/proxy/"},
		{http.MethodGet, "/clusters/east/api/v1/namespaces/ns/pods/a/status", `without their "status" subresource`},
		{http.MethodGet, "/api/v1/namespaces/ns/pods/a/log", "ask the member cluster its panorama.io/cluster annotation names directly"},
	} {
		req, _ := http.NewRequest(c.method, viewURL(cfg, c.path), nil)
		code, body := do(t, req)
		var st metav1.Status
		_ = json.Unmarshal([]byte(body), &st)
		if code != http.StatusMethodNotAllowed || st.Reason != metav1.StatusReasonMethodNotAllowed || !strings.Contains(st.Message, c.want) {
			t.Errorf("%s %s: %d %s, want 405 saying %q", c.method, c.path, code, body, c.want)
		}
	}
	// Who may not read pods there, or a resource the view does not serve,
	// gets what it got before.
	for path, want := range map[string]int{
		"/clusters/east/api/v1/namespaces/ns/services/a/proxy/": http.StatusNotFound,
		"/clusters/west/api/v1/namespaces/ns/pods/a/log":        http.StatusNotFound,
	} {
		req, _ := http.NewRequest(http.MethodGet, viewURL(cfg, path), nil)
		req.Header.Set("Impersonate-User", "east")
		if code, body := do(t, req); code != want || strings.Contains(body, "Panorama") {
			t.Errorf("user east, %s: %d %s, want %d", path, code, body, want)
		}
	}
}

func do(t *testing.T, req *http.Request) (int, string) {
	t.Helper()
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, string(body)
}
