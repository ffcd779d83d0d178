package testenv

import "testing"

// TestAssetsSkipsWithoutAControlPlane: a test needing a control plane that
// is missing skips, unless CI or PANORAMA_REQUIRE_DB requires it.
func TestAssetsSkipsWithoutAControlPlane(t *testing.T) {
	t.Setenv("KUBEBUILDER_ASSETS", "")
	t.Setenv("PANORAMA_REQUIRE_DB", "")
	t.Setenv("CI", "")
	var needing *testing.T
	t.Run("needing a control plane", func(t *testing.T) {
		needing = t
		Assets(t)
		t.Error("Assets returned without a control plane")
	})
	if !needing.Skipped() {
		t.Error("not skipped")
	}
	for _, env := range []struct{ name, value string }{{"CI", "true"}, {"PANORAMA_REQUIRE_DB", "1"}} {
		t.Run(env.name, func(t *testing.T) {
			t.Setenv(env.name, env.value)
			if !controlPlaneRequired() {
				t.Errorf("%s=%s does not require the control plane", env.name, env.value)
			}
		})
	}
	if controlPlaneRequired() {
		t.Error("required with neither CI nor PANORAMA_REQUIRE_DB")
	}
}
