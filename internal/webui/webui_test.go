package webui

import (
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"strings"
	"testing"
)

func serve(t *testing.T, method, name string) *httptest.ResponseRecorder {
	t.Helper()
	w := httptest.NewRecorder()
	NewHandler().ServeFile(w, httptest.NewRequest(method, "/ui/"+name, nil), name)
	return w
}

func TestServesFilesWithTheirTypesAndHeaders(t *testing.T) {
	for name, want := range map[string]struct{ contentType, contains string }{
		"":                                   {"text/html; charset=utf-8", `<script type="module" src="app.js">`},
		"/":                                  {"text/html; charset=utf-8", `<input id="q"`},
		"index.html":                         {"text/html; charset=utf-8", "<title>Panorama search</title>"},
		"app.js":                             {"text/javascript; charset=utf-8", "import { terms, parse"},
		"style.css":                          {"text/css; charset=utf-8", ":focus-visible"},
		"vendor/js-yaml/js-yaml.esm.min.mjs": {"text/javascript; charset=utf-8", "as dump"},
		"vendor/diff/index.js":               {"text/javascript; charset=utf-8", "diffLines"},
		"vendor/README.md":                   {"text/plain; charset=utf-8", "npm pack"},
	} {
		w := serve(t, http.MethodGet, name)
		if w.Code != http.StatusOK {
			t.Errorf("%q: %d", name, w.Code)
			continue
		}
		h := w.Header()
		if got := h.Get("Content-Type"); got != want.contentType {
			t.Errorf("%q: Content-Type %q, want %q", name, got, want.contentType)
		}
		if !strings.Contains(w.Body.String(), want.contains) {
			t.Errorf("%q: the body lacks %q", name, want.contains)
		}
		for header, value := range map[string]string{
			"Content-Security-Policy":      "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'none'; connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'; require-trusted-types-for 'script'; trusted-types 'none'",
			"X-Content-Type-Options":       "nosniff",
			"Referrer-Policy":              "no-referrer",
			"Cache-Control":                "no-cache",
			"Cross-Origin-Opener-Policy":   "same-origin",
			"Cross-Origin-Resource-Policy": "same-origin",
		} {
			if got := h.Get(header); got != value {
				t.Errorf("%q: %s %q, want %q", name, header, got, value)
			}
		}
	}
}

// The page holds no inline script or style, which the policy would refuse
// anyway, and no handler attribute.
func TestPageHasNoInlineCode(t *testing.T) {
	body := serve(t, http.MethodGet, "index.html").Body.String()
	for _, bad := range []string{"<script>", "<style", " style=", " onclick=", " onload=", "javascript:"} {
		if strings.Contains(body, bad) {
			t.Errorf("index.html holds %q", bad)
		}
	}
}

func TestRefusesWhatIsNoFile(t *testing.T) {
	for _, name := range []string{
		"nothing.js", "vendor", "vendor/", "vendor/diff", "../webui.go", "vendor/../../webui.go", "./index.html",
		"vendor//diff/index.js", "%2e%2e/webui.go", "static/index.html", "/../../etc/passwd",
	} {
		w := serve(t, http.MethodGet, name)
		if w.Code != http.StatusNotFound {
			t.Errorf("%q: %d, want 404", name, w.Code)
		}
		if strings.Contains(w.Body.String(), "<a href") || strings.Contains(w.Body.String(), "package webui") {
			t.Errorf("%q answered a listing or a source: %q", name, w.Body.String())
		}
		if w.Header().Get("X-Content-Type-Options") != "nosniff" || w.Header().Get("Content-Security-Policy") == "" {
			t.Errorf("%q: a 404 without the page's headers", name)
		}
	}
}

func TestReadsOnly(t *testing.T) {
	if w := serve(t, http.MethodHead, "app.js"); w.Code != http.StatusOK || w.Body.Len() != 0 {
		t.Errorf("HEAD: %d with %d bytes", w.Code, w.Body.Len())
	}
	for _, method := range []string{http.MethodPost, http.MethodPut, http.MethodDelete, http.MethodPatch} {
		if w := serve(t, method, "index.html"); w.Code != http.StatusMethodNotAllowed || w.Header().Get("Allow") != "GET, HEAD" {
			t.Errorf("%s: %d, Allow %q", method, w.Code, w.Header().Get("Allow"))
		}
	}
}

func TestRevalidatesByModificationTime(t *testing.T) {
	h := NewHandler()
	w := httptest.NewRecorder()
	h.ServeFile(w, httptest.NewRequest(http.MethodGet, "/ui/app.js", nil), "app.js")
	lastModified := w.Header().Get("Last-Modified")
	if lastModified == "" {
		t.Fatal("no Last-Modified")
	}
	r := httptest.NewRequest(http.MethodGet, "/ui/app.js", nil)
	r.Header.Set("If-Modified-Since", lastModified)
	w = httptest.NewRecorder()
	h.ServeFile(w, r, "app.js")
	if w.Code != http.StatusNotModified {
		t.Errorf("revalidation: %d, want 304", w.Code)
	}
}

// TestPageModules runs testdata/page_test.mjs, node's unit tests of the
// page's modules (history, diff bounds, discovery), with node's own test
// runner. Without node it skips, or fails where CI requires node (it has
// it for the browser tests).
func TestPageModules(t *testing.T) {
	node, err := exec.LookPath("node")
	if err != nil {
		if os.Getenv("PANORAMA_REQUIRE_DB") != "" || os.Getenv("CI") == "true" {
			t.Fatal("the page's module tests need node")
		}
		t.Skip("the page's module tests need node")
	}
	out, err := exec.Command(node, "--test", "--test-reporter=tap", "testdata/page_test.mjs").CombinedOutput()
	if err != nil {
		t.Fatalf("node --test: %v\n%s", err, out)
	}
	if !strings.Contains(string(out), "# fail 0") || strings.Contains(string(out), "# pass 0") {
		t.Fatalf("node --test ran no test or failed one:\n%s", out)
	}
}
