package main

import (
	"os"
	"path/filepath"
	"testing"
)

// TestHTTPToken: the token file's first line is the token, whatever line
// ends it; one a caller's header could never carry is refused.
func TestHTTPToken(t *testing.T) {
	for content, want := range map[string]string{
		"s3cret\n":          "s3cret",
		"s3cret\r\nignored": "s3cret",
		"  s3cret  ":        "s3cret",
		"two words\n":       "",
		"\n\n":              "",
	} {
		file := filepath.Join(t.TempDir(), "token")
		if err := os.WriteFile(file, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
		got, err := httpToken(file)
		if want == "" && err == nil || want != "" && (err != nil || got != want) {
			t.Errorf("httpToken of %q = %q, %v; want %q", content, got, err, want)
		}
	}
	if got := loopbackByDefault(":8765"); got != "127.0.0.1:8765" {
		t.Errorf("a bare port binds %s, want loopback", got)
	}
}
