package e2e

import (
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"testing"

	"k8s.io/client-go/rest"

	searchv1alpha1 "github.com/panorama-io/panorama/apis/search/v1alpha1"
	"github.com/panorama-io/panorama/apiserver"
	"github.com/panorama-io/panorama/test/testenv"
)

// authzOps are the reads of the matrix, as kubectl arguments against a
// user's kubeconfig (viewconfig's: the current context is the view across
// clusters, contexts east and west the views of one cluster, context
// "host" the host itself). Member east has pods, Secret token, Deployment
// frontend and StatefulSet ledger in namespace web; west has pods and
// Deployment backend in default (authzMemberObjects).
var authzOps = map[string][]string{
	"all-clusters list":        {"get", "pods", "-n", "web"},
	"all-clusters list -A":     {"get", "pods", "-A"},
	"one cluster list":         {"--context", "east", "get", "pods", "-n", "web"},
	"other cluster list":       {"--context", "west", "get", "--raw", "/api/v1/pods"},
	"other namespace list":     {"--context", "east", "get", "--raw", "/api/v1/namespaces/kube-system/pods"},
	"other resource type list": {"--context", "east", "get", "--raw", "/api/v1/namespaces"},
	"watch":                    {"--context", "east", "get", "--raw", "/api/v1/namespaces/web/pods?watch=true&timeoutSeconds=1"},
	"other cluster watch":      {"--context", "west", "get", "--raw", "/api/v1/namespaces/web/pods?watch=true&timeoutSeconds=1"},
	"get":                      {"--context", "east", "get", "pod", "web-1", "-n", "web"},
	"all-clusters get":         {"get", "pod", "web-1", "-n", "web"},
	"discovery":                {"--context", "east", "get", "--raw", "/api/v1"},
	"other cluster discovery":  {"--context", "west", "get", "--raw", "/api/v1"},
	"secrets list":             {"get", "secrets", "-n", "web"},
	"secrets list -A":          {"get", "secrets", "-A"},
	"secret get":               {"--context", "east", "get", "secret", "token", "-n", "web", "-o", "yaml"},
	"collection":               {"--context", "host", "get", "--raw", "/apis/search.panorama.io/v1alpha1/collectionresources/workloads"},
	"counts":                   {"get", "--raw", "/api/v1/namespaces/web/pods?groupBy=cluster"},
	"counts -A":                {"get", "--raw", "/api/v1/pods?groupBy=cluster"},
	"history":                  {"--context", "east", "get", "--raw", "/api/v1/namespaces/web/pods/web-1/history"},
	"asOf":                     {"--context", "east", "get", "pods", "-n", "web", "-l", "search.panorama.io/asOf=1s"},
	"flat list -A":             {"--context", "flat", "get", "pods", "-A"},
	"flat list":                {"--context", "flat", "get", "pods", "-n", "east.web"},
	"self review":              {"auth", "can-i", "list", "deployments.apps", "-n", "web"},
}

// authzOpNames are the clusters each read names itself (its context, a
// flat namespace): the only names besides those the user may read that
// its answer may hold.
func authzOpNames(op string) []string {
	var named []string
	for _, c := range []string{"east", "west"} {
		if strings.Contains(strings.Join(authzOps[op], " "), c) {
			named = append(named, c)
		}
	}
	return named
}

// The member's Secret holds secretValue; Panorama stores it without data.
const secretValue = "s3cr3t-value"

// authzMemberObjects are the matrix's objects beyond pods, per member.
var authzMemberObjects = [2]string{
	"apiVersion: v1\nkind: Secret\nmetadata: {name: token, namespace: web}\nstringData: {token: " + secretValue + "}\n" +
		workload("Deployment", "frontend", "web") + workload("StatefulSet", "ledger", "web"),
	workload("Deployment", "backend", "default"),
}

// workload is a Deployment or StatefulSet of one container (no pods run:
// the members have no controllers).
func workload(kind, name, namespace string) string {
	serviceName := ""
	if kind == "StatefulSet" {
		serviceName = "\n  serviceName: " + name
	}
	return fmt.Sprintf(`---
apiVersion: apps/v1
kind: %s
metadata: {name: %s, namespace: %s}
spec:%s
  selector: {matchLabels: {app: %s}}
  template:
    metadata: {labels: {app: %s}}
    spec: {containers: [{name: c, image: nginx}]}
`, kind, name, namespace, serviceName, name, name)
}

// rbacManifest makes the matrix's users: alice reads everything; bob
// cluster east only; carol pods in namespace web of every cluster; dave
// pods and deployments everywhere and secrets in namespace web (the
// docs/usage.md's examples); tina pods only, everywhere; sam Secrets only,
// everywhere; mallory nothing. Anonymous requests are granted everything
// by the host, as a misconfigured host might: Panorama must still serve
// them nothing.
//
// Two checks authorize a request. The host's kube-apiserver, before it
// proxies, sees only the path's shape (.../clusters/east/proxy/api/v1/pods
// is "get clusters/proxy" named "east", the view across clusters is named
// "_all"; a self review is "create" of the same): panorama-paths grants that
// and no data. Panorama then checks each member read: verb, resource as
// kubectl spells it (pods, widgets.example.com), the member namespace, and
// the cluster as the name.
var rbacManifest = "apiVersion: v1\nkind: Namespace\nmetadata: {name: web}\n" +
	grant("panorama-paths", "", []string{
		pathsRule,
		`{apiGroups: [search.panorama.io], resources: [collectionresources], verbs: [get, list]}`,
	}, "bob", "carol", "dave", "tina", "sam") +
	grant("alice-search", "", []string{readRule(`"*"`)}, "alice") +
	grant("bob-search-east", "", []string{`{apiGroups: [search.panorama.io], resources: ["*"], resourceNames: [east], verbs: [get, list, watch]}`}, "bob") +
	grant("carol-pods", "web", []string{readRule("pods")}, "carol") +
	// kubectl's discovery of one cluster needs get clusters.
	grant("carol-see-clusters", "", []string{seeClusters}, "carol") +
	grant("dave-pods-deployments", "", []string{readRule("pods, deployments.apps"), seeClusters}, "dave") +
	grant("dave-secrets", "web", []string{readRule("secrets")}, "dave") +
	grant("tina-pods", "", []string{readRule("pods"), seeClusters}, "tina") +
	grant("sam-secrets", "", []string{readRule("secrets"), seeClusters}, "sam") +
	grantGroup("anonymous-everything", "system:unauthenticated", []string{pathsRule, readRule(`"*"`), seeClusters,
		`{apiGroups: [search.panorama.io], resources: [collectionresources], verbs: [get, list]}`})

// pathsRule grants the views' paths on the host (docs/usage.md, "Authorization").
const pathsRule = `{apiGroups: [search.panorama.io], resources: [clusters/proxy], verbs: [get, create]}`

const seeClusters = `{apiGroups: [search.panorama.io], resources: [clusters], verbs: [get]}`

// readRule grants reading member resources (a YAML list's items).
func readRule(resources string) string {
	return "{apiGroups: [search.panorama.io], resources: [" + resources + "], verbs: [get, list, watch]}"
}

// grant is a Role of namespace (a ClusterRole when namespace is "") with
// rules, bound to users.
func grant(name, namespace string, rules []string, users ...string) string {
	kind, meta := "ClusterRole", "name: "+name
	if namespace != "" {
		kind, meta = "Role", meta+", namespace: "+namespace
	}
	var b strings.Builder
	fmt.Fprintf(&b, "---\napiVersion: rbac.authorization.k8s.io/v1\nkind: %s\nmetadata: {%s}\nrules:\n", kind, meta)
	for _, r := range rules {
		fmt.Fprintf(&b, "- %s\n", r)
	}
	fmt.Fprintf(&b, "---\napiVersion: rbac.authorization.k8s.io/v1\nkind: %sBinding\nmetadata: {%s}\n"+
		"roleRef: {apiGroup: rbac.authorization.k8s.io, kind: %s, name: %s}\nsubjects:\n", kind, meta, kind, name)
	for _, u := range users {
		fmt.Fprintf(&b, "- {apiGroup: rbac.authorization.k8s.io, kind: User, name: %s}\n", u)
	}
	return b.String()
}

// grantGroup is a ClusterRole with rules, bound to a group.
func grantGroup(name, group string, rules []string) string {
	return strings.Replace(grant(name, "", rules), "subjects:\n",
		"subjects:\n- {apiGroup: rbac.authorization.k8s.io, kind: Group, name: \""+group+"\"}\n", 1)
}

// authzCell is what a user gets from a read: a word of kubectl's error, or
// a success whose output has (and has not) some words and whose warnings
// name what was left out (none when warning is empty); for a self review,
// the start of kubectl's answer.
type authzCell struct {
	err         string
	has, hasNot []string
	warning     string
	canI        string
}

// authzReadable are the clusters each user of the matrix may read
// something of: the only cluster names, besides those a read names itself,
// that any answer to them may hold.
var authzReadable = map[string][]string{
	"alice": {"east", "west"}, "bob": {"east"}, "carol": {"east", "west"}, "dave": {"east", "west"},
	"tina": {"east", "west"}, "sam": {"east", "west"}, "mallory": nil,
}

// testAuthzMatrix runs every read as every user of rbacManifest and checks the answer, its content, what it says was left
// out, and that nothing in it names a cluster the user may not read.
func testAuthzMatrix(t *testing.T, users map[string]string) {
	waitForAuthzObjects(t, users["alice"])
	var (
		ok        = authzCell{}
		forbidden = authzCell{err: "Forbidden"}
		notFound  = authzCell{err: "NotFound"}
		yes, no   = authzCell{canI: "yes"}, authzCell{canI: "no"}
		// Secrets are served without their data, whoever reads them.
		secretsListed = authzCell{has: []string{"token"}}
		secretNoData  = authzCell{has: []string{"name: token"}, hasNot: []string{"czNjcjN0", secretValue, "\ndata:"}}
		// Across clusters a user learns that some were left out, never
		// which nor how many.
		westLeftOut = func(c authzCell) authzCell {
			c.warning = "clusters you may not"
			return c
		}
		nothing = func(c authzCell) map[string]authzCell {
			cells := map[string]authzCell{}
			for op := range authzOps {
				cells[op] = c
			}
			return cells
		}
	)
	want := map[string]map[string]authzCell{
		"alice": {
			"all-clusters list": ok, "all-clusters list -A": ok, "one cluster list": ok, "other cluster list": ok,
			"other namespace list": ok, "other resource type list": ok, "watch": ok, "other cluster watch": ok,
			"get": ok, "all-clusters get": ok, "discovery": ok, "other cluster discovery": ok,
			"secrets list": secretsListed, "secrets list -A": secretsListed, "secret get": secretNoData,
			"collection":   {has: []string{"frontend", "ledger", "backend"}},
			"counts":       {has: []string{`"east"`}},
			"counts -A":    {has: []string{`"east"`, `"west"`}},
			"history":      {has: []string{"web-1"}},
			"asOf":         ok,
			"flat list -A": {has: []string{"east.web", "west.default"}},
			"flat list":    {has: []string{"web-1"}},
			"self review":  forbidden, // granted no create of the views' paths on the host
		},
		"bob": { // cluster east only
			"all-clusters list": westLeftOut(ok), "all-clusters list -A": westLeftOut(ok), "one cluster list": ok,
			"other cluster list": forbidden, "other namespace list": ok, "other resource type list": ok, "watch": ok,
			"other cluster watch": forbidden, "get": ok, "all-clusters get": westLeftOut(ok), "discovery": ok,
			"other cluster discovery": notFound, "secret get": secretNoData,
			"secrets list": westLeftOut(secretsListed), "secrets list -A": westLeftOut(secretsListed),
			"collection":   westLeftOut(authzCell{has: []string{"frontend", "ledger"}, hasNot: []string{"backend"}}),
			"counts":       westLeftOut(authzCell{has: []string{`"east"`}}),
			"counts -A":    westLeftOut(authzCell{has: []string{`"east"`}}),
			"history":      {has: []string{"web-1"}},
			"asOf":         ok,
			"flat list -A": westLeftOut(authzCell{has: []string{"east.web"}}),
			"flat list":    {has: []string{"web-1"}},
			"self review":  yes,
		},
		"carol": { // pods in namespace web, every cluster; no secrets
			"all-clusters list": ok, "all-clusters list -A": forbidden, "one cluster list": ok, "other cluster list": forbidden,
			"other namespace list": forbidden, "other resource type list": forbidden, "watch": ok, "other cluster watch": ok,
			"get": ok, "all-clusters get": ok, "discovery": ok, "other cluster discovery": ok,
			"secrets list": forbidden, "secrets list -A": forbidden, "secret get": forbidden, "collection": forbidden,
			"counts": {has: []string{`"east"`}}, "counts -A": forbidden, "history": {has: []string{"web-1"}}, "asOf": ok,
			"flat list -A": forbidden, "flat list": {has: []string{"web-1"}}, "self review": no,
		},
		"dave": { // pods and deployments everywhere, secrets in namespace web
			"all-clusters list": ok, "all-clusters list -A": ok, "one cluster list": ok, "other cluster list": ok,
			"other namespace list": ok, "other resource type list": forbidden, "watch": ok, "other cluster watch": ok,
			"get": ok, "all-clusters get": ok, "discovery": ok, "other cluster discovery": ok,
			"secrets list": secretsListed, "secrets list -A": forbidden, "secret get": secretNoData,
			"collection": {has: []string{"frontend", "backend"}, hasNot: []string{"ledger"}, warning: "statefulsets.apps left out"},
			"counts":     {has: []string{`"east"`}}, "counts -A": {has: []string{`"east"`, `"west"`}}, "history": {has: []string{"web-1"}},
			"asOf": ok, "flat list -A": {has: []string{"east.web", "west.default"}}, "flat list": {has: []string{"web-1"}},
			"self review": yes,
		},
		"tina": { // pods only, every cluster
			"all-clusters list": ok, "all-clusters list -A": ok, "one cluster list": ok, "other cluster list": ok,
			"other namespace list": ok, "other resource type list": forbidden, "watch": ok, "other cluster watch": ok,
			"get": ok, "all-clusters get": ok, "discovery": ok, "other cluster discovery": ok,
			"secrets list": forbidden, "secrets list -A": forbidden, "secret get": forbidden, "collection": forbidden,
			"counts": {has: []string{`"east"`}}, "counts -A": {has: []string{`"east"`, `"west"`}}, "history": {has: []string{"web-1"}},
			"asOf": ok, "flat list -A": {has: []string{"east.web", "west.default"}}, "flat list": {has: []string{"web-1"}},
			"self review": no,
		},
		"sam": { // Secrets only, every cluster
			"all-clusters list": forbidden, "all-clusters list -A": forbidden, "one cluster list": forbidden,
			"other cluster list": forbidden, "other namespace list": forbidden, "other resource type list": forbidden,
			"watch": forbidden, "other cluster watch": forbidden, "get": forbidden, "all-clusters get": forbidden,
			"discovery": ok, "other cluster discovery": ok,
			"secrets list": secretsListed, "secrets list -A": secretsListed, "secret get": secretNoData, "collection": forbidden,
			"counts": forbidden, "counts -A": forbidden, "history": forbidden, "asOf": forbidden,
			"flat list -A": forbidden, "flat list": forbidden, "self review": no,
		},
		// Nothing: the host refuses before Panorama.
		"mallory": nothing(forbidden),
	}
	for user, ops := range want {
		if len(ops) != len(authzOps) {
			t.Fatalf("%s has %d cells, the matrix %d reads", user, len(ops), len(authzOps))
		}
		for op, cell := range ops {
			args := authzOps[op]
			out, stderr, err := testenv.Kubectl(users[user], args...)
			if err := checkAuthzCell(cell, out, stderr, err); err != nil {
				t.Errorf("%s %s: %v", user, op, err)
			}
			for _, c := range []string{"east", "west"} {
				if !slices.Contains(authzReadable[user], c) && !slices.Contains(authzOpNames(op), c) && strings.Contains(out+stderr, c) {
					t.Errorf("%s %s: the answer names cluster %s, which they may not read and did not name:\n%s%s", user, op, c, out, stderr)
				}
			}
		}
	}
}

// anonymousReads are reads of every kind through the host's aggregation,
// by path (kubectl asks for a password rather than send none).
var anonymousReads = map[string]string{
	"all-clusters list": searchv1alpha1.ViewPath("") + "/api/v1/namespaces/web/pods",
	"one cluster list":  searchv1alpha1.ViewPath("east") + "/api/v1/namespaces/web/pods",
	"get":               searchv1alpha1.ViewPath("east") + "/api/v1/namespaces/web/pods/web-1",
	"watch":             searchv1alpha1.ViewPath("east") + "/api/v1/namespaces/web/pods?watch=true&timeoutSeconds=1",
	"discovery":         searchv1alpha1.ViewPath("east") + "/api/v1",
	"secrets list":      searchv1alpha1.ViewPath("") + "/api/v1/secrets",
	"counts":            searchv1alpha1.ViewPath("") + "/api/v1/pods?groupBy=cluster",
	"history":           searchv1alpha1.ViewPath("east") + "/api/v1/namespaces/web/pods/web-1/history",
	"asOf":              searchv1alpha1.ViewPath("east") + "/api/v1/namespaces/web/pods?asOf=1s",
	"flat list":         searchv1alpha1.ViewPath(searchv1alpha1.FlatClusters) + "/api/v1/pods",
	"collection":        apiserver.CollectionsPath + "/workloads",
}

// testAnonymousRefused reads as anonymous, whom rbacManifest's host grants
// everything and so passes on: Panorama itself refuses every read and
// self review (403, saying so), and names no cluster the path does not.
func testAnonymousRefused(t *testing.T, host *testenv.Env) {
	client, err := rest.HTTPClientFor(rest.AnonymousClientConfig(host.Config))
	if err != nil {
		t.Fatal(err)
	}
	server := strings.TrimSuffix(host.Config.Host, "/")
	check := func(what string, req *http.Request) {
		t.Helper()
		resp, err := client.Do(req)
		if err != nil {
			t.Fatalf("anonymous %s: %v", what, err)
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != http.StatusForbidden || !strings.Contains(string(body), "Panorama serves anonymous users nothing") {
			t.Errorf("anonymous %s: %d %s, want Panorama's 403", what, resp.StatusCode, body)
		}
		for _, c := range []string{"east", "west"} {
			if strings.Contains(string(body), c) && !strings.Contains(req.URL.Path, c) {
				t.Errorf("anonymous %s: the answer names cluster %s: %s", what, c, body)
			}
		}
	}
	for what, path := range anonymousReads {
		req, err := http.NewRequest(http.MethodGet, server+path, nil)
		if err != nil {
			t.Fatal(err)
		}
		check(what, req)
	}
	review := `{"apiVersion":"authorization.k8s.io/v1","kind":"SelfSubjectAccessReview","spec":{"resourceAttributes":{"verb":"list","resource":"pods"}}}`
	req, err := http.NewRequest(http.MethodPost, server+searchv1alpha1.ViewPath("")+"/apis/authorization.k8s.io/v1/selfsubjectaccessreviews", strings.NewReader(review))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	check("self review", req)
}

func checkAuthzCell(cell authzCell, out, stderr string, err error) error {
	switch {
	case cell.canI != "":
		// kubectl auth can-i exits 1 for "no".
		if !strings.HasPrefix(out, cell.canI) || (err == nil) != (cell.canI == "yes") {
			return fmt.Errorf("want %s, got %v %q %q", cell.canI, err, out, stderr)
		}
		return nil
	case cell.err != "":
		if err == nil || !strings.Contains(stderr, cell.err) {
			return fmt.Errorf("want %s, got %v %q %q", cell.err, err, out, stderr)
		}
		return nil
	case err != nil:
		return fmt.Errorf("want success, got %v %s", err, stderr)
	case cell.warning == "" && strings.Contains(stderr, "left out"):
		return fmt.Errorf("nothing should be left out: %s", stderr)
	case !strings.Contains(stderr, cell.warning):
		return fmt.Errorf("want a warning %q, got %q", cell.warning, stderr)
	}
	for _, w := range cell.has {
		if !strings.Contains(out, w) {
			return fmt.Errorf("%q not in the output:\n%s", w, out)
		}
	}
	for _, w := range cell.hasNot {
		if strings.Contains(out, w) {
			return fmt.Errorf("%q in the output:\n%s", w, out)
		}
	}
	return nil
}

// waitForAuthzObjects waits until the matrix's objects are synced, as a
// user allowed everything sees them.
func waitForAuthzObjects(t *testing.T, kubeconfig string) {
	t.Helper()
	eventuallyT(t, func() error {
		out, stderr, err := testenv.Kubectl(kubeconfig, authzOps["collection"]...)
		if err := checkAuthzCell(authzCell{has: []string{"frontend", "ledger", "backend"}}, out, stderr, err); err != nil {
			return err
		}
		out, stderr, err = testenv.Kubectl(kubeconfig, authzOps["secrets list"]...)
		return checkAuthzCell(authzCell{has: []string{"token"}}, out, stderr, err)
	})
}
