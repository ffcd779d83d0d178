package apiserver

import (
	"net/http"
	"strings"
	"testing"

	"k8s.io/client-go/rest"

	searchv1alpha1 "github.com/panorama-io/panorama/apis/search/v1alpha1"
)

// viewURL is the URL of path under the all-clusters view of cfg's server,
// or under cluster X's view for "/clusters/X/...", the tests' shorthand.
func viewURL(cfg *rest.Config, path string) string {
	return strings.TrimSuffix(cfg.Host, searchv1alpha1.ViewPath("")) + viewPathOf(path)
}

func TestSplitPath(t *testing.T) {
	const gv = "/apis/search.panorama.io/v1alpha1"
	for path, want := range map[string]string{
		gv + "/clusters/_all/proxy/api/v1/pods":                 " /api/v1/pods",
		gv + "/clusters/_all/proxy":                             " ",
		gv + "/clusters/east/proxy/apis/apps/v1/deployments":    "east /apis/apps/v1/deployments",
		gv + "/clusters/east/proxy/api/v1/namespaces/web/pods/": "east /api/v1/namespaces/web/pods/",
		gv + "/clusters/east/proxy/":                            "east /",
		gv + "/clusters/api/proxy/api/v1/pods":                  "api /api/v1/pods", // no path shape here
		gv + "/clusters/east":                                   "no",
		gv + "/clusters/east/":                                  "no",
		gv + "/clusters/east/proxyx/api/v1/pods":                "no",
		gv + "/clusters/east/api/v1/pods":                       "no",
		gv + "/clusters//proxy/api/v1/pods":                     "no",
		gv + "/clusters/_all/api/v1/pods":                       "no",
		gv + "/clustersx/east/proxy/api/v1/pods":                "no",
		// The deprecated prefix.
		gv + "/resources/api/v1/pods":               " /api/v1/pods",
		gv + "/resources/clusters/east/api/v1/pods": "east /api/v1/pods",
		gv + "/resources/clusters//api/v1/pods":     "no",
		// The flat view, only on its own path (flatview.go).
		gv + "/clusters/_flat/proxy/api/v1/pods":     "_flat /api/v1/pods",
		gv + "/resources/clusters/_flat/api/v1/pods": "no",
	} {
		cluster, rest, ok := splitPath(path)
		got := cluster + " " + rest
		if !ok {
			got = "no"
		}
		if got != want {
			t.Errorf("%s: %q, want %q", path, got, want)
		}
	}
	if searchv1alpha1.ViewPath("") != gv+"/clusters/_all/proxy" || searchv1alpha1.ViewPath("east") != gv+"/clusters/east/proxy" {
		t.Errorf("view paths %q, %q", searchv1alpha1.ViewPath(""), searchv1alpha1.ViewPath("east"))
	}
}

// TestDeprecatedPathWarns: the deprecated prefix still serves, with a
// Warning naming the path to use instead; the views do not warn.
func TestDeprecatedPathWarns(t *testing.T) {
	_, cfg, _ := testServer(t)
	host := strings.TrimSuffix(cfg.Host, searchv1alpha1.ViewPath(""))
	for path, want := range map[string]string{
		ResourcesPrefix + "/clusters/east/api/v1/pods":   searchv1alpha1.ViewPath("east") + "/api/v1/pods",
		ResourcesPrefix + "/api/v1/pods":                 searchv1alpha1.ViewPath("") + "/api/v1/pods",
		ResourcesPrefix + "/clusters/east/api/v1":        searchv1alpha1.ViewPath("east") + "/api/v1",
		searchv1alpha1.ViewPath("east") + "/api/v1/pods": "",
		searchv1alpha1.ViewPath("") + "/api/v1/pods":     "",
	} {
		resp, err := http.Get(host + path)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		warning := strings.Join(resp.Header.Values("Warning"), "\n")
		if resp.StatusCode != http.StatusOK {
			t.Errorf("GET %s: %s", path, resp.Status)
		}
		if (want == "") != (warning == "") || !strings.Contains(warning, want) || (want != "" && !strings.Contains(warning, "deprecated")) {
			t.Errorf("GET %s warns %q, want one naming %q", path, warning, want)
		}
	}
}

// TestViewRequestInfo: Panorama's own filters see a view's watch as a
// watch (so its own timeout does not cut it) of "resources" named after
// the cluster, which handledByPanorama passes to the handler's checks.
func TestViewRequestInfo(t *testing.T) {
	for path, want := range map[string]string{
		searchv1alpha1.ViewPath("east") + "/api/v1/namespaces/web/pods?watch=true": "watch resources east web",
		searchv1alpha1.ViewPath("") + "/apis/apps/v1/deployments":                  "list resources  ",
		searchv1alpha1.ViewPath("east") + "/api/v1/namespaces/web/pods/a":          "get resources east web",
	} {
		req, _ := http.NewRequest(http.MethodGet, "https://host"+path, nil)
		info, err := requestInfoResolver{}.NewRequestInfo(req)
		if err != nil {
			t.Fatal(err)
		}
		if got := strings.Join([]string{info.Verb, info.Resource, info.Name, info.Namespace}, " "); got != want || !info.IsResourceRequest {
			t.Errorf("%s: %q, want %q", path, got, want)
		}
	}
}
