package containermemory_test

import (
	"math"
	"os"
	"path/filepath"
	"runtime/debug"
	"testing"

	"github.com/panorama-io/panorama/internal/containermemory"
)

// cgroup makes a cgroup file system of files under a new root.
func cgroup(t *testing.T, files map[string]string) string {
	t.Helper()
	root := t.TempDir()
	for name, content := range files {
		path := filepath.Join(root, name)
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return root
}

// TestLimit: cgroup v2's limit first, else v1's; none when unlimited or
// absent.
func TestLimit(t *testing.T) {
	for _, tc := range []struct {
		name  string
		files map[string]string
		want  int64
	}{
		{"v2", map[string]string{"memory.max": "4294967296\n"}, 4 << 30},
		{"v2 unlimited", map[string]string{"memory.max": "max\n"}, 0},
		{"v1", map[string]string{"memory/memory.limit_in_bytes": "2147483648\n"}, 2 << 30},
		{"v1 unlimited", map[string]string{"memory/memory.limit_in_bytes": "9223372036854771712\n"}, 0},
		{"v2 before v1", map[string]string{"memory.max": "1073741824", "memory/memory.limit_in_bytes": "2147483648"}, 1 << 30},
		{"unreadable", map[string]string{"memory.max": "a lot"}, 0},
		{"no cgroup", nil, 0},
	} {
		if got := containermemory.Limit(cgroup(t, tc.files)); got != tc.want {
			t.Errorf("%s: limit %d, want %d", tc.name, got, tc.want)
		}
	}
}

// TestFitGo: Go's soft limit becomes nine tenths of the container's, or
// what the process's settings need when that is less, unless GOMEMLIMIT
// is set, even empty; nothing without a container limit or settings.
func TestFitGo(t *testing.T) {
	before := debug.SetMemoryLimit(-1)
	t.Cleanup(func() { debug.SetMemoryLimit(before) })
	limited := cgroup(t, map[string]string{"memory.max": "1073741824\n"})
	unlimited := cgroup(t, map[string]string{"memory.max": "max\n"})

	t.Setenv("GOMEMLIMIT", "")
	if got := containermemory.FitGo(limited, 256<<20); got != 0 || debug.SetMemoryLimit(-1) != before {
		t.Fatalf("with GOMEMLIMIT set: set %d, Go's limit %d, want it left at %d", got, debug.SetMemoryLimit(-1), before)
	}
	if err := os.Unsetenv("GOMEMLIMIT"); err != nil {
		t.Fatal(err)
	}
	debug.SetMemoryLimit(math.MaxInt64)
	if got := containermemory.FitGo(unlimited, 0); got != 0 || debug.SetMemoryLimit(-1) != math.MaxInt64 {
		t.Fatalf("without a container limit or settings: set %d, Go's limit %d", got, debug.SetMemoryLimit(-1))
	}
	nineTenths := int64(1<<30) / 10 * 9
	for _, tc := range []struct {
		name       string
		root       string
		most, want int64
	}{
		{"under 1 GiB", limited, 0, nineTenths},
		{"under 1 GiB, settings needing less", limited, 256 << 20, 256 << 20},
		{"under 1 GiB, settings needing more", limited, 2 << 30, nineTenths},
		{"without a container limit, settings", unlimited, 256 << 20, 256 << 20},
	} {
		if got := containermemory.FitGo(tc.root, tc.most); got != tc.want || debug.SetMemoryLimit(-1) != tc.want {
			t.Errorf("%s: set %d, Go's limit %d, want %d", tc.name, got, debug.SetMemoryLimit(-1), tc.want)
		}
	}
}
