package storagetest

import (
	"context"
	"testing"

	"github.com/panorama-io/panorama/storage"
)

// Owned makes o the cluster's owner and returns the epoch it was given,
// which a replica's synchronizers write the cluster under
// (storage.Writer.ForCluster).
func Owned(t testing.TB, ctx context.Context, o storage.Owner, cluster string) int64 {
	t.Helper()
	epoch, err := o.Own(ctx, cluster)
	if err != nil {
		t.Fatal(err)
	}
	return epoch
}
