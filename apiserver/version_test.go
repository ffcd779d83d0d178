package apiserver

import (
	"strings"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	utilversion "k8s.io/apimachinery/pkg/util/version"
	"k8s.io/client-go/discovery"
)

// TestVersion: /version under a cluster's view is that member's, as its
// Cluster status records it, and only for who sees the cluster; across
// clusters it is Panorama's own, which clients can parse.
func TestVersion(t *testing.T) {
	_, cfg, reg := testServer(t)
	east := clusterServing("east", podsGVR, "Pod")
	east.Status.Version = "v1.36.4"
	reg.Set(east)

	serverVersion := func(user, cluster string) (string, error) {
		info, err := discovery.NewDiscoveryClientForConfigOrDie(as(cfg, user, cluster)).ServerVersion()
		if err != nil {
			return "", err
		}
		return info.GitVersion + " " + info.Major + "." + info.Minor, nil
	}
	if got, err := serverVersion("east", "east"); err != nil || got != "v1.36.4 1.36" {
		t.Errorf("east's version to east's user: %q %v", got, err)
	}
	got, err := serverVersion("nobody", "")
	if err != nil || got != panoramaVersion.GitVersion+" 1.37" || !strings.HasPrefix(got, "v1.37.0-panorama") {
		t.Errorf("Panorama's version across clusters: %q %v", got, err)
	}
	if _, err := utilversion.ParseSemantic(panoramaVersion.GitVersion); err != nil {
		t.Errorf("kubectl version cannot parse %q: %v", panoramaVersion.GitVersion, err)
	}
	for _, c := range []struct{ user, cluster string }{{"east", "west"}, {"nobody", "east"}, {"admin", "south"}} {
		if got, err := serverVersion(c.user, c.cluster); !apierrors.IsNotFound(err) {
			t.Errorf("%s's version to %s: %q %v, want 404", c.cluster, c.user, got, err)
		}
	}
	// west's controller has not recorded a version yet.
	if got, err := serverVersion("admin", "west"); !apierrors.IsServiceUnavailable(err) {
		t.Errorf("west's unknown version: %q %v, want 503", got, err)
	}
}
