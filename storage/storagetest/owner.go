package storagetest

import (
	"context"
	"testing"

	"github.com/panorama-io/panorama/storage"
)

// Owned makes o the cluster's owner and returns ctx carrying the epoch it
// was given, as a replica's synchronizers write under.
func Owned(t testing.TB, ctx context.Context, o storage.Owner, cluster string) context.Context {
	t.Helper()
	epoch, err := o.Own(ctx, cluster)
	if err != nil {
		t.Fatal(err)
	}
	return storage.WithEpoch(ctx, epoch)
}
