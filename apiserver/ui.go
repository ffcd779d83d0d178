package apiserver

import (
	"net/http"
	"path"
	"strings"

	"github.com/panorama-io/panorama/internal/webui"
)

// uiPath is the search page's path under every view (internal/webui): the
// page reads the view it is served under with relative paths, so the
// view's grant is all a user needs to use it. Like discovery under a view
// it is a non-resource read, so the generic server has already refused
// anonymous users (refuseAnonymous) and the page only runs the user's own
// requests.
const uiPath = "/ui"

var searchPage = webui.NewHandler()

// isUI reports whether rest, a view's member-style path, is the page's.
func isUI(rest string) bool {
	return rest == uiPath || strings.HasPrefix(rest, uiPath+"/")
}

// serveUI answers the page's files; /ui redirects to /ui/, relatively, so
// that the page's relative paths resolve under it behind any proxy prefix.
// The page is only under the views' paths: it finds its view in its own
// path, and under the deprecated ResourcesPrefix it would not, and would
// search every cluster the user may read from a cluster's path.
func serveUI(w http.ResponseWriter, req *request) {
	if _, _, ok := splitView(req.r.URL.Path); !ok {
		serveNotFound(w, req)
		return
	}
	if req.rest == uiPath {
		target := path.Base(uiPath) + "/"
		if req.r.URL.RawQuery != "" {
			target += "?" + req.r.URL.RawQuery
		}
		// http.Redirect would make target absolute, as the server sees
		// the path, not as the browser does.
		w.Header().Set("Location", target)
		w.WriteHeader(http.StatusMovedPermanently)
		return
	}
	searchPage.ServeFile(w, req.r, strings.TrimPrefix(req.rest, uiPath+"/"))
}
