package synchronizer

import (
	"context"
	"fmt"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/panorama-io/panorama/storage"
)

// Events come at the rate things happen in a member and matter for an
// hour or so; a member deletes them after its --event-ttl (1h by default).
// A synchronizer of Events with a retention keeps only those seen within
// it: older ones are not stored when they arrive, and those that age out
// while stored are deleted by a periodic prune, through storage's normal
// delete path, so that watchers see them go.

// IsEvents reports whether gvr is one of the two APIs of Events, core/v1
// and events.k8s.io: the resources a retention applies to.
func IsEvents(gvr schema.GroupVersionResource) bool {
	return gvr.Resource == "events" && (gvr.Group == "" || gvr.Group == "events.k8s.io")
}

// expired reports whether u is an Event older than the resource's
// retention at now: one storage should not hold.
func (s *Synchronizer) expired(u *unstructured.Unstructured, now time.Time) bool {
	return s.resource.EventRetention > 0 && now.Sub(storage.EventLastSeen(u)) > s.resource.EventRetention
}

// pruneInterval is how often stored Events are checked for their age: a
// tenth of the retention, at most a minute: how long an Event may outlive
// its retention (beyond how late it reached its member, see prune).
func pruneInterval(retention time.Duration) time.Duration {
	return min(retention/10, time.Minute)
}

// pruneLoop prunes every pruneInterval until ctx ends.
func (s *Synchronizer) pruneLoop(ctx context.Context) {
	logger := log.FromContext(ctx)
	for {
		select {
		case <-ctx.Done():
			return
		case <-time.After(pruneInterval(s.resource.EventRetention)):
		}
		if err := s.prune(ctx, time.Now()); err != nil && ctx.Err() == nil {
			syncErrors.WithLabelValues(s.cluster, s.resource.GVR.Resource).Inc()
			logger.Error(err, "pruning expired events")
		}
	}
}

// prune deletes the stored Events that have aged past the retention at
// now, and then counts what is stored. It reads only the Events created
// before the retention began, by storage's index on creation time: an
// Event that keeps recurring is read again at every prune, one that
// stopped is read once. An Event is created in its member when it is
// posted, after it happened (later still if its reporter's clock is
// behind the member's), so it is pruned that much after its retention
// ends. Each delete is at the member resourceVersion read, so an update
// arriving meanwhile is never removed.
func (s *Synchronizer) prune(ctx context.Context, now time.Time) error {
	before := now.Add(-s.resource.EventRetention)
	largest := 0 // of the stored Events read
	q := storage.ListQuery{GVR: s.resource.GVR, Clusters: []string{s.cluster}, CreatedBefore: &before, Limit: s.pageLimit(largest)}
	for {
		page, err := s.store.List(ctx, &q)
		if err != nil {
			return fmt.Errorf("listing stored events: %w", err)
		}
		var changes []pendingChange
		for _, o := range page.Objects {
			largest = max(largest, len(o.Data))
			u := &unstructured.Unstructured{}
			if err := u.UnmarshalJSON(o.Data); err != nil {
				return fmt.Errorf("decoding stored event %s/%s: %w", o.Namespace, o.Name, err)
			}
			if s.expired(u, now) {
				changes = append(changes, pendingChange{change: storage.DeleteAt(o.Namespace, o.Name, o.MemberResourceVersion)})
			}
		}
		if err := s.applyPruned(ctx, changes); err != nil {
			return err
		}
		if q.Continue = page.Continue; q.Continue == "" {
			break
		}
		q.Limit = s.pageLimit(largest)
	}
	return s.recount(ctx)
}

// applyPruned writes the prune's deletes in turn with the synchronizer's
// own writes, so that none lands in the middle of a list.
func (s *Synchronizer) applyPruned(ctx context.Context, changes []pendingChange) error {
	if len(changes) == 0 {
		return nil
	}
	s.flushing.Lock()
	defer s.flushing.Unlock()
	syncEvents.WithLabelValues(s.cluster, s.resource.GVR.Resource, "expired").Add(float64(len(changes)))
	return s.applyBatches(ctx, changes)
}

// recount sets the status's count to what storage holds. The count of
// other resources follows the member's adds and deletes; the deletes of
// Events the prune removed first, or that were never stored, would make
// it drift.
func (s *Synchronizer) recount(ctx context.Context) error {
	// No write between the count and its setting.
	s.flushing.Lock()
	defer s.flushing.Unlock()
	page, err := s.store.List(ctx, &storage.ListQuery{GVR: s.resource.GVR, Clusters: []string{s.cluster}, Limit: 1, WithRemainingCount: true})
	if err != nil {
		return fmt.Errorf("counting stored events: %w", err)
	}
	count := int64(len(page.Objects))
	if page.RemainingCount != nil {
		count += *page.RemainingCount
	}
	s.mu.Lock()
	changed := s.status.Count != count
	s.status.Count = count
	s.mu.Unlock()
	syncedObjects.WithLabelValues(s.cluster, s.resource.GVR.Resource).Set(float64(count))
	if changed {
		// The Cluster's status shows the count: written now, not at the
		// next reconcile.
		s.onChange()
	}
	return nil
}
