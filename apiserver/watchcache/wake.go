package watchcache

import (
	"context"

	"github.com/panorama-io/panorama/storage"
)

// follow starts the store's feed of writes by other processes, when it has
// one (storage.Follower), from revision from, and returns a channel that
// receives when the log grew past what the cache applied; nil without a
// feed, which leaves the poll alone to find those writes.
func (c *Cache) follow(ctx context.Context, from int64) <-chan struct{} {
	f, ok := c.store.(storage.Follower)
	if !ok {
		return nil
	}
	wake := make(chan struct{}, 1)
	go f.Follow(ctx, from, c.opts.ProbeInterval, func(rev int64) {
		if rev <= c.Revision() {
			return // applied already: this process's own write, which Changed announced
		}
		select {
		case wake <- struct{}{}:
		default: // a wake is pending: the step it starts reads this revision too
		}
	})
	return wake
}
