package e2e

import (
	"strings"
	"testing"

	"github.com/panorama-io/panorama/test/testenv"
)

// authzOps are the reads of the matrix, as kubectl arguments against a
// user's kubeconfig (server: the resources prefix across clusters). Member
// east has pods in namespace web; west has pods in default only.
var authzOps = map[string][]string{
	"all-clusters list":        {"get", "pods", "-n", "web"},
	"all-clusters list -A":     {"get", "pods", "-A"},
	"one cluster list":         {"--context", "east", "get", "pods", "-n", "web"},
	"other cluster list":       {"get", "--raw", "/clusters/west/api/v1/pods"},
	"other namespace list":     {"get", "--raw", "/clusters/east/api/v1/namespaces/kube-system/pods"},
	"other resource type list": {"get", "--raw", "/clusters/east/api/v1/namespaces"},
	"watch":                    {"get", "--raw", "/clusters/east/api/v1/namespaces/web/pods?watch=true&timeoutSeconds=1"},
	"other cluster watch":      {"get", "--raw", "/clusters/west/api/v1/namespaces/web/pods?watch=true&timeoutSeconds=1"},
	"get":                      {"--context", "east", "get", "pod", "web-1", "-n", "web"},
	"all-clusters get":         {"get", "pod", "web-1", "-n", "web"},
	"discovery":                {"get", "--raw", "/clusters/east/api/v1"},
	"other cluster discovery":  {"get", "--raw", "/clusters/west/api/v1"},
}

// testAuthzMatrix runs every read as every user of rbacManifest: "" is a
// success, else a word of the error.
func testAuthzMatrix(t *testing.T, users map[string]string) {
	const ok, forbidden, notFound = "", "Forbidden", "NotFound"
	want := map[string]map[string]string{
		"alice": {
			"all-clusters list": ok, "all-clusters list -A": ok, "one cluster list": ok, "other cluster list": ok,
			"other namespace list": ok, "other resource type list": ok, "watch": ok, "other cluster watch": ok,
			"get": ok, "all-clusters get": ok, "discovery": ok, "other cluster discovery": ok,
		},
		"bob": { // cluster east only
			"all-clusters list": ok, "all-clusters list -A": ok, "one cluster list": ok, "other cluster list": forbidden,
			"other namespace list": ok, "other resource type list": ok, "watch": ok, "other cluster watch": forbidden,
			"get": ok, "all-clusters get": ok, "discovery": ok, "other cluster discovery": notFound,
		},
		"carol": { // pods in namespace web, every cluster
			"all-clusters list": ok, "all-clusters list -A": forbidden, "one cluster list": ok, "other cluster list": forbidden,
			"other namespace list": forbidden, "other resource type list": forbidden, "watch": ok, "other cluster watch": ok,
			"get": ok, "all-clusters get": ok, "discovery": ok, "other cluster discovery": ok,
		},
		"mallory": { // nothing: the host refuses before Panorama
			"all-clusters list": forbidden, "all-clusters list -A": forbidden, "one cluster list": forbidden,
			"other cluster list": forbidden, "other namespace list": forbidden, "other resource type list": forbidden,
			"watch": forbidden, "other cluster watch": forbidden, "get": forbidden, "all-clusters get": forbidden,
			"discovery": forbidden, "other cluster discovery": forbidden,
		},
	}
	for user, ops := range want {
		for op, expect := range ops {
			out, stderr, err := testenv.Kubectl(users[user], authzOps[op]...)
			switch {
			case expect == ok && err != nil:
				t.Errorf("%s %s: want success, got %v %s", user, op, err, stderr)
			case expect != ok && (err == nil || !strings.Contains(stderr, expect)):
				t.Errorf("%s %s: want %s, got %v %q %q", user, op, expect, err, out, stderr)
			}
		}
	}
}
