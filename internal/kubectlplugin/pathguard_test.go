package kubectlplugin

import (
	"bytes"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/cli-runtime/pkg/genericiooptions"

	searchv1alpha1 "github.com/panorama-io/panorama/apis/search/v1alpha1"
)

// podsHost is a host whose view across clusters serves pods' discovery,
// whose east serves shop's pod web, and nothing else (a NotFound Status);
// it records the paths asked.
type podsHost struct {
	mu    sync.Mutex
	paths []string
}

func (h *podsHost) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	h.mu.Lock()
	h.paths = append(h.paths, r.URL.EscapedPath())
	h.mu.Unlock()
	all := searchv1alpha1.ViewPath("")
	w.Header().Set("Content-Type", "application/json")
	var body any
	switch r.URL.Path {
	case all + "/api":
		body = metav1.APIVersions{TypeMeta: metav1.TypeMeta{Kind: "APIVersions"}, Versions: []string{"v1"}}
	case all + "/apis":
		body = metav1.APIGroupList{TypeMeta: metav1.TypeMeta{Kind: "APIGroupList", APIVersion: "v1"}}
	case all + "/api/v1":
		body = metav1.APIResourceList{TypeMeta: metav1.TypeMeta{Kind: "APIResourceList", APIVersion: "v1"}, GroupVersion: "v1",
			APIResources: []metav1.APIResource{{Name: "pods", Namespaced: true, Kind: "Pod", Verbs: metav1.Verbs{"get", "list"}}}}
	case searchv1alpha1.ViewPath("east") + "/api/v1/namespaces/shop/pods/web":
		body = map[string]any{"apiVersion": "v1", "kind": "Pod", "metadata": map[string]any{"name": "web", "namespace": "shop"}}
	default:
		status := apierrors.NewNotFound(schema.GroupResource{Resource: "pods"}, "x").ErrStatus
		status.Kind, status.APIVersion = "Status", "v1"
		w.WriteHeader(http.StatusNotFound)
		body = status
	}
	_ = json.NewEncoder(w).Encode(body)
}

// asked are the paths the host was asked beyond the view's discovery.
func (h *podsHost) asked() []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	var out []string
	for _, p := range h.paths {
		if !strings.HasPrefix(p, searchv1alpha1.ViewPath("")+"/api") {
			out = append(out, p)
		}
	}
	return out
}

// runPlugin runs `kubectl panorama args` against host with a kubeconfig
// whose context's namespace is shop.
func runPlugin(t *testing.T, host string, args ...string) (string, error) {
	t.Helper()
	kubeconfig := filepath.Join(t.TempDir(), "config")
	if err := os.WriteFile(kubeconfig, []byte(`apiVersion: v1
kind: Config
clusters: [{name: host, cluster: {server: "`+host+`"}}]
users: [{name: u, user: {}}]
contexts: [{name: c, context: {cluster: host, user: u, namespace: shop}}]
current-context: c
`), 0o600); err != nil {
		t.Fatal(err)
	}
	var out, errOut bytes.Buffer
	cmd := NewCommand(genericiooptions.IOStreams{In: &bytes.Buffer{}, Out: &out, ErrOut: &errOut})
	cmd.SetArgs(append(args, "--kubeconfig", kubeconfig))
	err := cmd.Execute()
	return out.String() + errOut.String(), err
}

// A cluster, namespace or name of dots would have the request resolve
// out of the views, to a path of the host read with the user's rights:
// the plugin refuses it before asking.
func TestObjectPathsStayInTheViews(t *testing.T) {
	for _, args := range [][]string{
		{"history", "pods/web", "--cluster", ".."},
		{"history", "pods/web", "--cluster", "../../../../../api/v1/namespaces/kube-system/secrets"},
		{"history", "pods/web", "--cluster", "east", "-n", ".."},
		{"history", "pods/..", "--cluster", "east"},
		{"diff", "pods", "..", "--cluster", "east"},
		{"diff", "pods/web", "--cluster", "east", "--against", ".."},
		{"search", "pods", "--cluster", ".."},
		{"count", "pods", "--cluster", "..", "-A"},
	} {
		t.Run(strings.Join(args, " "), func(t *testing.T) {
			host := &podsHost{}
			srv := httptest.NewServer(host)
			defer srv.Close()
			_, err := runPlugin(t, srv.URL, args...)
			if err == nil || !strings.Contains(err.Error(), "is not a path of Panorama's views") {
				t.Errorf("err = %v, want the path refused", err)
			}
			// --against's object is read after --cluster's.
			for _, p := range host.asked() {
				if !strings.HasPrefix(p, searchv1alpha1.ViewPath("east")+"/api/v1/namespaces/shop/pods/web") {
					t.Errorf("the host was asked %s", p)
				}
			}
		})
	}
}

// Percent-encoded dots are a name's own characters: the host is asked for
// the object of that name, escaped, and answers for it.
func TestEncodedDotsAreAName(t *testing.T) {
	host := &podsHost{}
	srv := httptest.NewServer(host)
	defer srv.Close()
	_, err := runPlugin(t, srv.URL, "history", "pods/%2e%2e", "--cluster", "east")
	if !apierrors.IsNotFound(err) {
		t.Errorf("err = %v, want the host's NotFound", err)
	}
	want := []string{searchv1alpha1.ViewPath("east") + "/api/v1/namespaces/shop/pods/%252e%252e/history"}
	if got := host.asked(); !slices.Equal(got, want) {
		t.Errorf("the host was asked %v, want %v", got, want)
	}
}
