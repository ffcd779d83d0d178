package apiserver

import (
	"fmt"
	"net/http"
	"runtime/debug"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	utilversion "k8s.io/apimachinery/pkg/util/version"
	"k8s.io/apimachinery/pkg/version"
	"k8s.io/component-base/compatibility"

	"github.com/panorama-io/panorama/internal/responsewriters"
)

// servedKubeVersion is the Kubernetes release of the libraries Panorama is
// built on, whose API it serves.
const servedKubeVersion = "1.37"

// effectiveVersion is the generic server's version, which its /version and
// the all-clusters view's answer: Kubernetes' own, with a GitVersion that
// clients can parse. Kubernetes stamps its GitVersion at build time
// (-ldflags -X k8s.io/component-base/version.gitVersion=...); a plain
// `go build` leaves "v0.0.0-master+$Format:%H$", on which `kubectl version`
// fails ("server version error").
type effectiveVersion struct {
	compatibility.MutableEffectiveVersion
}

func newEffectiveVersion() effectiveVersion {
	return effectiveVersion{compatibility.NewEffectiveVersionFromString(servedKubeVersion, "", "")}
}

// Info is the version with, unless the build stamped one, GitVersion
// v<served major>.<served minor>.0-panorama+<commit>: kubectl compares the
// major and minor with its own, and the rest says what runs.
func (v effectiveVersion) Info() *version.Info {
	info := v.MutableEffectiveVersion.Info()
	if _, err := utilversion.ParseSemantic(info.GitVersion); err != nil {
		info.GitVersion = fmt.Sprintf("v%s.%s.0-panorama%s", info.Major, info.Minor, buildRevision())
	}
	return info
}

// buildRevision is "+<commit>" ("+<commit>.dirty" with uncommitted
// changes) when the Go toolchain recorded one, else "".
func buildRevision() string {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return ""
	}
	var rev, dirty string
	for _, s := range bi.Settings {
		switch {
		case s.Key == "vcs.revision" && len(s.Value) >= 12:
			rev = s.Value[:12]
		case s.Key == "vcs.modified" && s.Value == "true":
			dirty = ".dirty"
		}
	}
	if rev == "" {
		return ""
	}
	return "+" + rev + dirty
}

// panoramaVersion is what the all-clusters view answers to /version.
var panoramaVersion = newEffectiveVersion().Info()

// clusterVersion is a member's version as its Cluster status records it
// (GitVersion only: the controller keeps what clients show), "" while
// the controller has not reached it.
func (r *Registry) clusterVersion(name string) string {
	r.mu.RLock()
	defer r.mu.RUnlock()
	if c := r.clusters[name]; c != nil {
		return c.version
	}
	return ""
}

// isVersion reports whether rest is the path of /version.
func isVersion(rest string) bool { return rest == "/version" || rest == "/version/" }

// serveVersion answers GET <view>/version, which kubectl version and k9s
// ask before anything else: a member's version under a cluster's view,
// Panorama's across clusters.
func (h *Handler) serveVersion(w http.ResponseWriter, req *request) {
	cluster := req.cluster
	if cluster == "" {
		responsewriters.WriteJSON(w, http.StatusOK, panoramaVersion)
		return
	}
	if !h.seesCluster(req.r, cluster) {
		writeError(w, req.r, clusterNotFound(cluster), schema.GroupResource{})
		return
	}
	gitVersion := h.registry.clusterVersion(cluster)
	if gitVersion == "" {
		_, _, message := h.registry.Cluster(cluster)
		writeError(w, req.r, apierrors.NewServiceUnavailable(fmt.Sprintf("the version of cluster %q is not known yet: %s", cluster, message)), schema.GroupResource{})
		return
	}
	info := &version.Info{GitVersion: gitVersion}
	if v, err := utilversion.ParseGeneric(gitVersion); err == nil {
		info.Major, info.Minor = fmt.Sprint(v.Major()), fmt.Sprint(v.Minor())
	}
	responsewriters.WriteJSON(w, http.StatusOK, info)
}
