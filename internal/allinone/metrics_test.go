package allinone

import (
	"errors"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/component-base/metrics/legacyregistry"

	"github.com/panorama-io/panorama/controllers"
	"github.com/panorama-io/panorama/storage/sqlstore"
)

// TestControllerMetricsInTheAPIServerRegistry checks that the all-in-one
// process's /metrics, the API server's registry, holds the controller
// manager's own metrics, which controller-runtime keeps elsewhere, and
// storage's.
func TestControllerMetricsInTheAPIServerRegistry(t *testing.T) {
	collectors := controllers.Collectors()
	if len(collectors) < 5 {
		t.Fatalf("only %d collectors", len(collectors))
	}
	for _, c := range append(collectors, sqlstore.Collectors()...) {
		var already prometheus.AlreadyRegisteredError
		if err := legacyregistry.Registerer().Register(c); !errors.As(err, &already) {
			t.Errorf("a collector is not in the API server's registry: registering it again gave %v", err)
		}
	}
}
