package storage

import (
	"context"
	"time"

	"k8s.io/klog/v2"
)

// RunCompactor compacts the change log every interval to the revision it
// saw at the previous tick, as kube-apiserver compacts etcd: watches and
// continue tokens stay valid for at least one interval, and the log holds
// no more than about two intervals of changes. What it drops it keeps as
// history for retention (none when 0), which it then expires. It returns
// when ctx ends.
func RunCompactor(ctx context.Context, s Interface, interval, retention time.Duration) {
	logger := klog.FromContext(ctx).WithName("compactor")
	ticker := time.NewTicker(interval)
	defer ticker.Stop()
	var previous int64
	for {
		select {
		case <-ctx.Done():
			return
		case <-ticker.C:
		}
		current, compacted, err := s.Revision(ctx)
		if err != nil {
			logger.Error(err, "Reading the revision failed")
			continue
		}
		if previous > compacted {
			if err := s.Compact(ctx, previous, retention > 0); err != nil {
				logger.Error(err, "Compacting the change log failed", "revision", previous)
				continue
			}
			logger.V(1).Info("Compacted the change log", "revision", previous)
		}
		if retention > 0 {
			if err := s.ExpireHistory(ctx, time.Now().Add(-retention)); err != nil {
				logger.Error(err, "Expiring history failed", "retention", retention)
			}
		}
		previous = current
	}
}
