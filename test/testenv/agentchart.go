package testenv

import (
	"os/exec"
	"path/filepath"
	"testing"
)

// AgentNamespace and AgentServiceAccount are where and as whom the agent's
// chart, rendered for release "panorama-agent", runs the agent.
const (
	AgentNamespace      = "panorama-agent"
	AgentServiceAccount = "panorama-agent"
)

// RenderAgentChart renders charts/panorama-agent with `helm template` for
// release "panorama-agent" in AgentNamespace, with the values the chart
// requires (a hub at https://hub.example.com:8444, Cluster "east", an
// inline token) and args after them, which override them, and returns
// the manifest.
func RenderAgentChart(t testing.TB, args ...string) string {
	t.Helper()
	out, err := TryRenderAgentChart(t, args...)
	if err != nil {
		t.Fatalf("helm template: %v\n%s", err, out)
	}
	return out
}

// TryRenderAgentChart is RenderAgentChart for values the chart may refuse:
// it returns helm's output and error.
func TryRenderAgentChart(t testing.TB, args ...string) (string, error) {
	t.Helper()
	out, err := exec.Command(filepath.Join(Assets(t), "helm"), append([]string{"template", "panorama-agent",
		filepath.Join(RepoRoot(t), "charts", "panorama-agent"), "--namespace", AgentNamespace,
		"--set", "hub.url=https://hub.example.com:8444", "--set", "cluster=east", "--set", "token=agent-token"}, args...)...).CombinedOutput()
	return string(out), err
}
