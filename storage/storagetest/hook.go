package storagetest

import (
	"context"

	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/panorama-io/panorama/storage"
)

// ApplyFunc is a ClusterWriter's Apply.
type ApplyFunc func(ctx context.Context, gvr schema.GroupVersionResource, changes []storage.Change) (int64, error)

// HookApply returns w with its Applies made by hook, which is given w's
// own Apply to write with, or not: a test's stand-in for a database that
// stalls, fails or refuses a write.
func HookApply(w storage.ClusterWriter, hook func(ctx context.Context, gvr schema.GroupVersionResource, changes []storage.Change, apply ApplyFunc) (int64, error)) storage.ClusterWriter {
	return hookedApply{ClusterWriter: w, hook: hook}
}

type hookedApply struct {
	storage.ClusterWriter
	hook func(context.Context, schema.GroupVersionResource, []storage.Change, ApplyFunc) (int64, error)
}

func (h hookedApply) Apply(ctx context.Context, gvr schema.GroupVersionResource, changes []storage.Change) (int64, error) {
	return h.hook(ctx, gvr, changes, h.ClusterWriter.Apply)
}
