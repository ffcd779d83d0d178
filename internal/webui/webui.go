// Package webui serves the search page: static files embedded in the
// binary, which run in the user's browser and read Panorama's views with
// the user's own requests (kubectl proxy's origin), so the page holds no
// credentials and shows only what the user may read.
package webui

import (
	"bytes"
	"embed"
	"io/fs"
	"mime"
	"net/http"
	"path"
	"strings"
	"time"
)

//go:embed static
var files embed.FS

// contentSecurityPolicy lets the page run only its own scripts and styles
// and reach only its own origin: the members' contents it shows are
// untrusted, so nothing they hold can load or run anything. The page
// shows no images (its chart is SVG it draws) and writes text only, so it
// needs no image source and no Trusted Types policy: the sinks that would
// parse markup or code (innerHTML, eval, script URLs) refuse any string.
const contentSecurityPolicy = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'none'; " +
	"connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'; " +
	"require-trusted-types-for 'script'; trusted-types 'none'"

// contentTypes are set by extension rather than by the machine's MIME
// table, which may lack .mjs or map .js to a type browsers refuse for
// modules under nosniff.
var contentTypes = map[string]string{
	".html": "text/html; charset=utf-8",
	".js":   "text/javascript; charset=utf-8",
	".mjs":  "text/javascript; charset=utf-8",
	".css":  "text/css; charset=utf-8",
	".svg":  "image/svg+xml",
	".png":  "image/png",
	".md":   "text/plain; charset=utf-8",
	".txt":  "text/plain; charset=utf-8",
}

// Handler serves the page's files by the path under the page's root:
// "/" is index.html, a file its path, anything else 404 (no directory
// listings). The files change with the binary only, so browsers
// revalidate (no-cache) and Panorama answers 304 by the binary's start
// time.
type Handler struct {
	root    fs.FS
	modTime time.Time
}

// NewHandler serves the embedded page.
func NewHandler() *Handler {
	root, err := fs.Sub(files, "static")
	if err != nil {
		panic(err) // the embedded tree always has static/
	}
	return &Handler{root: root, modTime: time.Now()}
}

// ServeFile answers the file at name, a slash-separated path under the
// page's root ("/" or "" for the page itself).
func (h *Handler) ServeFile(w http.ResponseWriter, r *http.Request, name string) {
	header := w.Header()
	header.Set("Content-Security-Policy", contentSecurityPolicy)
	header.Set("X-Content-Type-Options", "nosniff")
	header.Set("Referrer-Policy", "no-referrer")
	// Other origins' windows get no handle on the page, nor other origins'
	// pages its files.
	header.Set("Cross-Origin-Opener-Policy", "same-origin")
	header.Set("Cross-Origin-Resource-Policy", "same-origin")
	header.Set("Cache-Control", "no-cache")
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		header.Set("Allow", "GET, HEAD")
		http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
		return
	}
	name = strings.TrimPrefix(name, "/")
	if name == "" {
		name = "index.html"
	}
	// Defense in depth: embed.FS refuses these names itself, but this
	// handler must not depend on the fs.FS it serves to keep a name in the
	// root. fs.ValidPath refuses "..", "." and empty elements; a directory
	// is no file to serve.
	if !fs.ValidPath(name) || strings.HasSuffix(name, "/") {
		http.NotFound(w, r)
		return
	}
	data, err := fs.ReadFile(h.root, name)
	if err != nil {
		http.NotFound(w, r)
		return
	}
	contentType, ok := contentTypes[path.Ext(name)]
	if !ok {
		contentType = mime.TypeByExtension(path.Ext(name))
	}
	if contentType == "" {
		contentType = "application/octet-stream"
	}
	header.Set("Content-Type", contentType)
	http.ServeContent(w, r, name, h.modTime, bytes.NewReader(data))
}
