package viewclient

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/rest"

	searchv1alpha1 "github.com/panorama-io/panorama/apis/search/v1alpha1"
	"github.com/panorama-io/panorama/storage"
)

// recordingHost is an HTTP server that answers every GET with an empty
// object and records the paths that reached it.
type recordingHost struct {
	mu    sync.Mutex
	paths []string
}

func (h *recordingHost) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	h.mu.Lock()
	h.paths = append(h.paths, r.URL.EscapedPath())
	h.mu.Unlock()
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write([]byte("{}"))
}

func TestPathsOutsideTheViewsAreRefusedBeforeAnyRequest(t *testing.T) {
	host := &recordingHost{}
	srv := httptest.NewServer(host)
	defer srv.Close()
	c, err := New(&rest.Config{Host: srv.URL})
	if err != nil {
		t.Fatal(err)
	}
	pods := schema.GroupVersionResource{Version: "v1", Resource: "pods"}
	for _, tc := range []struct{ name, path string }{
		{"cluster ..", searchv1alpha1.ViewPath("..") + ResourcePath(pods, "shop")},
		{"cluster ../..", searchv1alpha1.ViewPath("../..") + ResourcePath(pods, "")},
		{"namespace ..", searchv1alpha1.ViewPath("east") + ResourcePath(pods, "..")},
		{"name ..", searchv1alpha1.ViewPath("east") + ResourcePath(pods, "shop") + "/.."},
		{"name .", searchv1alpha1.ViewPath("east") + ResourcePath(pods, "shop") + "/."},
		{"up to the host's secrets", searchv1alpha1.ViewPath("east") + "/../../../../../../api/v1/secrets"},
		{"not a view", "/api/v1/secrets"},
		{"a prefix of the views", strings.TrimSuffix(panoramaAPI, "/")},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, _, err := c.Get(context.Background(), tc.path, nil, false)
			var input *InputError
			if !errors.As(err, &input) || !apierrors.IsBadRequest(err) ||
				!strings.Contains(err.Error(), "is not a path of Panorama's views") {
				t.Errorf("Get(%q) = %v, want the BadInput of a path outside the views", tc.path, err)
			}
		})
	}
	if len(host.paths) != 0 {
		t.Errorf("refused paths reached the host: %v", host.paths)
	}

	// Percent-encoded dots are a name's own characters, sent escaped: the
	// host reads them as the name, not as a segment to resolve.
	encoded := searchv1alpha1.ViewPath("east") + ResourcePath(pods, "shop") + "/%2e%2e"
	if _, _, err := c.Get(context.Background(), encoded, nil, false); err != nil {
		t.Fatalf("Get(%q): %v", encoded, err)
	}
	want := searchv1alpha1.ViewPath("east") + ResourcePath(pods, "shop") + "/%252e%252e"
	if len(host.paths) != 1 || host.paths[0] != want {
		t.Errorf("the host got %v, want [%s]", host.paths, want)
	}
}

func TestCollectionPaths(t *testing.T) {
	// A name's slashes are escaped: it stays one segment of the views.
	if p := CollectionPath("../../../api/v1/secrets"); OfTheViews(p) != nil || strings.Count(p, "/") != strings.Count(CollectionPath("workloads"), "/") {
		t.Errorf("CollectionPath of a name with slashes = %q, %v", p, OfTheViews(p))
	}
	// A name of dots alone is a segment the request would resolve.
	if p := CollectionPath(".."); OfTheViews(p) == nil {
		t.Errorf("CollectionPath(\"..\") = %q passes the guard", p)
	}
}

// The annotations are the server's: a client spells them apart from the
// storage package only so as not to link it.
func TestAnnotationsAreTheServers(t *testing.T) {
	if ClusterAnnotation != storage.ClusterAnnotation || MemberResourceVersionAnnotation != storage.MemberResourceVersionAnnotation {
		t.Errorf("viewclient's annotations %q, %q differ from storage's %q, %q", ClusterAnnotation,
			MemberResourceVersionAnnotation, storage.ClusterAnnotation, storage.MemberResourceVersionAnnotation)
	}
}
