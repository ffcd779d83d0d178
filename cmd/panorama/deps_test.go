package main

import (
	"os"
	"os/exec"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// shipped are the commands of the image; cmd/panorama-demo is not one.
var shipped = []string{"./cmd/controller-manager", "./cmd/apiserver", "./cmd/panorama", "./cmd/agent"}

// TestImageBuildsTheShippedCommands keeps the Dockerfile building the
// shipped commands, and only them: not the demo, which links envtest.
func TestImageBuildsTheShippedCommands(t *testing.T) {
	dockerfile, err := os.ReadFile("../../Dockerfile")
	if err != nil {
		t.Fatal(err)
	}
	build := regexp.MustCompile(`(?m)^RUN .*go build .* -o /out/ (.*)$`).FindSubmatch(dockerfile)
	if build == nil {
		t.Fatal("the Dockerfile has no `go build ... -o /out/ <commands>` step")
	}
	if got := strings.Fields(string(build[1])); !slices.Equal(got, shipped) {
		t.Errorf("the Dockerfile builds %v, want the shipped commands %v", got, shipped)
	}
}

// TestProductionBinariesLinkNoTestCode keeps test helpers (and with them the
// testing package and envtest) out of the shipped binaries: the demo, which
// needs them, is its own command.
func TestProductionBinariesLinkNoTestCode(t *testing.T) {
	forbidden := []string{
		"testing",
		"sigs.k8s.io/controller-runtime/pkg/envtest",
		"github.com/panorama-io/panorama/test/",
	}
	for _, cmd := range shipped {
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
