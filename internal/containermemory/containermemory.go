// Package containermemory reads the memory limit of the container a
// process runs in, and fits Go's garbage collector to it.
package containermemory

import (
	"os"
	"path/filepath"
	"runtime/debug"
	"strconv"
	"strings"

	"k8s.io/klog/v2"
)

// CgroupRoot is where a container's cgroup file system is.
const CgroupRoot = "/sys/fs/cgroup"

// cgroupUnlimited is at or above what cgroup v1 reports for no limit (the
// largest page-aligned int64).
const cgroupUnlimited = 1 << 62

// Limit is the memory limit of the container whose cgroup file system is
// at root: cgroup v2's memory.max, else v1's memory.limit_in_bytes; 0 when
// it has none.
func Limit(root string) int64 {
	for _, file := range []string{"memory.max", filepath.Join("memory", "memory.limit_in_bytes")} {
		data, err := os.ReadFile(filepath.Join(root, file))
		if err != nil {
			continue
		}
		limit, err := strconv.ParseInt(strings.TrimSpace(string(data)), 10, 64)
		if err != nil || limit <= 0 || limit >= cgroupUnlimited {
			return 0 // "max", or v1's "unlimited"
		}
		return limit
	}
	return 0
}

// SoftLimit is the Go soft memory limit FitGo gives a process in a
// container whose memory limit is limit (0, none: 0), nine tenths of it,
// for processes whose settings derive from it too.
func SoftLimit(limit int64) int64 { return limit / 10 * 9 }

// FitGo sets Go's soft memory limit (GOMEMLIMIT), unless the environment
// sets it, to nine tenths of the limit of the container whose cgroup file
// system is at root, or to most when that is above 0 and smaller, and
// returns what it set (0 when nothing: GOMEMLIMIT is set, or there is
// neither a container limit nor most). Without it, the collector lets the heap grow to twice what is
// live before it collects, whatever the container allows, and a process
// whose live heap is over half its limit (a watch cache at its budget, a
// controller syncing a fleet) is killed rather than made to collect
// sooner. The tenth left is for what the runtime does not count against
// it: memory freed but not yet returned, and the collector's reaction
// time. most is what the process needs by its own settings (an API
// server's watch cache budget): memory it takes as a setting, not as
// whatever its container allows.
func FitGo(root string, most int64) int64 {
	if _, set := os.LookupEnv("GOMEMLIMIT"); set {
		return 0
	}
	limit := Limit(root)
	soft := SoftLimit(limit)
	switch {
	case most > 0 && (soft == 0 || most < soft):
		soft = most
	case most > soft:
		klog.InfoS("The process's settings need more memory than its container's limit allows: it may be killed for running out of memory", "settings", most, "container", limit)
	}
	if soft == 0 {
		return 0
	}
	debug.SetMemoryLimit(soft)
	klog.InfoS("Go's soft memory limit set (GOMEMLIMIT overrides): nine tenths of the container's limit, or what the process's settings need if less", "limit", soft, "container", limit, "settings", most)
	return soft
}
