package importer

import (
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/util/validation"

	clusterv1alpha1 "github.com/panorama-io/panorama/apis/cluster/v1alpha1"
)

// TestClusterName checks that every name the scheme gives is a valid
// Cluster name, and that long names stay apart.
func TestClusterName(t *testing.T) {
	// DNS subdomains of 253, the longest: cut after a dot or a dash too.
	long := strings.Repeat("a", 200) + "." + strings.Repeat("b", 52)
	ns := strings.Repeat("n", 63)
	for _, c := range []struct {
		scheme         clusterv1alpha1.NameScheme
		ns, name, want string
	}{
		{clusterv1alpha1.NameSchemeNamespaceName, "capi-east", "web", "capi-east-web"},
		{"", "fleet", "west", "fleet-west"},
		{clusterv1alpha1.NameSchemeName, "fleet", "west", "west"},
	} {
		if got := clusterName(c.scheme, c.ns, c.name); got != c.want {
			t.Errorf("clusterName(%q, %q, %q) = %q, want %q", c.scheme, c.ns, c.name, got, c.want)
		}
	}
	seen := map[string]string{}
	for _, name := range []string{long, long[:240] + "c", strings.Repeat("x", 179) + "." + strings.Repeat("y", 73), strings.Repeat("x", 179) + "-" + strings.Repeat("y", 73)} {
		got := clusterName(clusterv1alpha1.NameSchemeNamespaceName, ns, name)
		if errs := validation.IsDNS1123Subdomain(got); len(errs) > 0 {
			t.Errorf("name for %s/%s: %q is not a DNS subdomain: %v", ns, name, got, errs)
		}
		if other, ok := seen[got]; ok {
			t.Errorf("%s and %s share the name %q", other, name, got)
		}
		seen[got] = name
	}
}
