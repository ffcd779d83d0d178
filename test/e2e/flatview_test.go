package e2e

import (
	"fmt"
	"strings"
	"testing"

	"k8s.io/client-go/kubernetes"

	"github.com/panorama-io/panorama/test/testenv"
)

// testFlatView: pod db-0 of namespace shop in east and in west are one
// namespace/name across clusters, and two objects in the flat view, for
// real kubectl through the host: listed apart, each one got by its flat
// namespace, and watched with it; authorized on the member namespace, as
// across clusters, for carol (pods of namespace web). It leaves both pods
// for testK9s.
func testFlatView(t *testing.T, user, carol string, east, west kubernetes.Interface) {
	for _, member := range []kubernetes.Interface{east, west} {
		createNS(t, member, "shop")
		createPod(t, member, "shop", "db-0", "db")
	}
	kubectl := func(args ...string) string {
		t.Helper()
		out, stderr, err := testenv.Kubectl(user, append([]string{"--context", "flat"}, args...)...)
		if err != nil {
			t.Fatalf("kubectl %v: %v\n%s", args, err, stderr)
		}
		return out
	}
	eventuallyT(t, func() error {
		out := kubectl("get", "pods", "-A", "-l", "app=db")
		for _, want := range []string{"east.shop   east      db-0", "west.shop   west      db-0"} {
			if !strings.Contains(strings.Join(strings.Fields(out), " "), strings.Join(strings.Fields(want), " ")) {
				return fmt.Errorf("no row %q in:\n%s", want, out)
			}
		}
		return nil
	})
	out := kubectl("get", "pod", "db-0", "-n", "east.shop", "-o", "yaml")
	for _, want := range []string{"namespace: east.shop", "panorama.io/cluster: east", "name: db-0"} {
		if !strings.Contains(out, want) {
			t.Fatalf("-o yaml of east.shop/db-0 lacks %q:\n%s", want, out)
		}
	}
	if out := kubectl("get", "pods", "-n", "west.shop", "-o", "name"); strings.TrimSpace(out) != "pod/db-0" {
		t.Fatalf("pods of west.shop: %q", out)
	}
	if out := kubectl("get", "namespaces", "--field-selector", "metadata.name=west.shop", "-o", "name"); strings.TrimSpace(out) != "namespace/west.shop" {
		t.Fatalf("namespace west.shop: %q", out)
	}

	if out, stderr, err := testenv.Kubectl(carol, "--context", "flat", "get", "pods", "-n", "east.web", "-o", "name"); err != nil || !strings.Contains(out, "pod/web-1") {
		t.Errorf("carol's pods of east.web: %v %s %s", err, out, stderr)
	}
	if _, stderr, err := testenv.Kubectl(carol, "--context", "flat", "get", "pods", "-A"); err == nil || !strings.Contains(stderr, "Forbidden") {
		t.Errorf("carol's pods of every namespace: %v %s", err, stderr)
	}

	// A watch across clusters shows a change with its flat namespace.
	w := startWatch(t, user, "--context", "flat", "get", "pods", "-A", "-w", "-o", `jsonpath={.metadata.namespace}/{.metadata.name}{"\n"}`)
	waitLine(t, w.lines, "east.shop/db-0") // the initial listing
	createPod(t, west, "shop", "db-1", "db")
	waitLine(t, w.lines, "west.shop/db-1")
}
