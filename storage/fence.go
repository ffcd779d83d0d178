package storage

import (
	"context"
	"errors"
	"fmt"
)

// Fencing. When controller-manager replicas divide the clusters among
// themselves, a lease in the host says who syncs a cluster, but a replica
// that lost its lease (paused, partitioned from the host) may still have a
// write on its way to the database. So storage keeps, per cluster, the
// epoch of its current owner: a replica takes ownership with Own, which
// moves the epoch on, and writes through Writer.ForCluster with that
// epoch; a write carrying any other epoch than the cluster's current one
// is refused, checked in the write's transaction, so from the moment a new
// owner has its epoch no write of the old one commits. A sweep of orphans fences its deletes the same way
// (DeleteOrphans), with the epochs it read (Epochs) before it listed the
// clusters that exist: a cluster taken over since is not its to delete.

// Owner hands out the owner epochs that fence writes (part of Maintainer).
type Owner interface {
	// Own makes the caller the cluster's owner and returns its epoch, above
	// every epoch given before for that cluster. Writes to the cluster made
	// under any older epoch fail with a FencedError from then on.
	Own(ctx context.Context, cluster string) (epoch int64, err error)
	// Epochs returns the current owner epoch of every cluster ever owned:
	// one absent from it is at NeverOwned.
	Epochs(ctx context.Context) (map[string]int64, error)
}

// Owner epochs a write can carry besides Own's, which are above 0.
const (
	// NeverOwned is the epoch of a cluster no one has taken over yet: a
	// write carrying it is made only while none has.
	NeverOwned int64 = -1
	// Unfenced is no epoch at all: a write carrying it is never refused.
	// It is for writes no owner makes: storage's own (taking ownership,
	// declaring fields) and tests'.
	Unfenced int64 = 0
)

// FencedError says a write was refused, nothing of it written, because its
// owner epoch is not the cluster's current one: another owner took the
// cluster over (or none ever owned it: Current is NeverOwned).
type FencedError struct {
	Cluster        string
	Epoch, Current int64
}

func (e *FencedError) Error() string {
	return fmt.Sprintf("cluster %q is %s, not %s: the write is fenced off", e.Cluster, owned(e.Current), owned(e.Epoch))
}

func owned(epoch int64) string {
	if epoch == NeverOwned {
		return "owned by none"
	}
	return fmt.Sprintf("owned at epoch %d", epoch)
}

// IsFenced reports whether err is a FencedError.
func IsFenced(err error) bool {
	var e *FencedError
	return errors.As(err, &e)
}
