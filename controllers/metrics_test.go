package controllers_test

import (
	"fmt"
	"testing"

	"sigs.k8s.io/controller-runtime/pkg/metrics"
)

// seriesOf says which Panorama series of a cluster the controller-runtime
// metrics registry still holds (nil when none).
func seriesOf(t *testing.T, cluster string) error {
	t.Helper()
	families, err := metrics.Registry.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range families {
		for _, m := range f.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "cluster" && l.GetValue() == cluster {
					return fmt.Errorf("%s still has a series of %s", f.GetName(), cluster)
				}
			}
		}
	}
	return nil
}
