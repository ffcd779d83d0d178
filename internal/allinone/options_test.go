package allinone

import (
	"os"
	"path/filepath"
	"testing"
)

// TestWatchCacheBudgetBesideTheController: in one process with the
// controller, the watch cache's default budget is a quarter of the
// container's memory limit, not the API server's own default, which
// leaves the rest of the limit to a server alone.
func TestWatchCacheBudgetBesideTheController(t *testing.T) {
	root := t.TempDir()
	if err := os.WriteFile(filepath.Join(root, "memory.max"), []byte("4294967296\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if got := newOptions(root).Server.WatchCache.MemoryBudget; got != 1<<30 {
		t.Errorf("under a 4 GiB limit: budget %d MiB, want 1024 MiB", got>>20)
	}
}
