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

// TestFitGo: Go's soft limit becomes nine tenths of the container's,
// unless GOMEMLIMIT is set, even empty, or the container has no limit.
func TestFitGo(t *testing.T) {
	before := debug.SetMemoryLimit(-1)
	t.Cleanup(func() { debug.SetMemoryLimit(before) })
	limited := cgroup(t, map[string]string{"memory.max": "1073741824\n"})

	t.Setenv("GOMEMLIMIT", "")
	if got := containermemory.FitGo(limited); got != 0 || debug.SetMemoryLimit(-1) != before {
		t.Fatalf("with GOMEMLIMIT set: set %d, Go's limit %d, want it left at %d", got, debug.SetMemoryLimit(-1), before)
	}
	if err := os.Unsetenv("GOMEMLIMIT"); err != nil {
		t.Fatal(err)
	}
	debug.SetMemoryLimit(math.MaxInt64)
	if got := containermemory.FitGo(cgroup(t, map[string]string{"memory.max": "max\n"})); got != 0 || debug.SetMemoryLimit(-1) != math.MaxInt64 {
		t.Fatalf("without a container limit: set %d, Go's limit %d", got, debug.SetMemoryLimit(-1))
	}
	want := int64(1<<30) / 10 * 9
	if got := containermemory.FitGo(limited); got != want || debug.SetMemoryLimit(-1) != want {
		t.Fatalf("under 1 GiB: set %d, Go's limit %d, want %d", got, debug.SetMemoryLimit(-1), want)
	}
}
