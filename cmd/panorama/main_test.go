package main

import (
	"strings"
	"testing"
)

func TestRoute(t *testing.T) {
	for _, tc := range []struct {
		argv0 string
		args  []string
		want  string
	}{
		{"panorama", nil, "serve"},
		{"/bin/panorama", []string{"serve", "--secure-port=6443"}, "serve"},
		{"panorama", []string{"--secure-port=6443"}, "serve"},
		{"panorama", []string{"search", "pods"}, "plugin"},
		{"panorama", []string{"kubeconfig"}, "kubeconfig"},
		{"panorama", []string{"mcp"}, "mcp"},
		{"kubectl-panorama", nil, "plugin"},
		{"/home/u/go/bin/kubectl-panorama", []string{"search", "pods"}, "plugin"},
		{"kubectl-panorama", []string{"--secure-port=6443"}, "plugin"},
		{"kubectl-panorama", []string{"kubeconfig"}, "kubeconfig"},
	} {
		if got, err := route(tc.argv0, tc.args); got != tc.want || err != nil {
			t.Errorf("route(%q, %q) = %q, %v; want %q", tc.argv0, tc.args, got, err, tc.want)
		}
	}
}

// The plugin is a user's kubectl plugin: it does not start a server.
func TestPluginRefusesServe(t *testing.T) {
	for _, argv0 := range []string{"kubectl-panorama", "/home/u/go/bin/kubectl-panorama"} {
		got, err := route(argv0, []string{"serve"})
		if err == nil || got != "" || !strings.Contains(err.Error(), "kubectl-panorama does not serve") {
			t.Errorf("route(%q, serve) = %q, %v; want refused", argv0, got, err)
		}
	}
}
