package main

import (
	"os/exec"
	"strings"
	"testing"
)

// TestProductionBinariesLinkNoTestCode keeps test helpers (and with them the
// testing package and envtest) out of the shipped binaries: the demo, which
// needs them, is its own command.
func TestProductionBinariesLinkNoTestCode(t *testing.T) {
	forbidden := []string{
		"testing",
		"sigs.k8s.io/controller-runtime/pkg/envtest",
		"github.com/panorama-io/panorama/test/",
	}
	for _, cmd := range []string{"./cmd/panorama", "./cmd/apiserver", "./cmd/controller-manager"} {
		out, err := exec.Command("go", "list", "-deps", "github.com/panorama-io/panorama/"+strings.TrimPrefix(cmd, "./")).CombinedOutput()
		if err != nil {
			t.Fatalf("go list -deps %s: %v\n%s", cmd, err, out)
		}
		deps := strings.Fields(string(out))
		if len(deps) < 100 {
			t.Fatalf("go list -deps %s listed only %d packages: %s", cmd, len(deps), out)
		}
		for _, dep := range deps {
			for _, f := range forbidden {
				if dep == f || (strings.HasSuffix(f, "/") && strings.HasPrefix(dep, f)) {
					t.Errorf("%s links %s", cmd, dep)
				}
			}
		}
	}
}
