package watchcache

import (
	"context"
)

// follow starts the store's feed of writes by other processes
// (storage.Log.Follow) from revision from, and returns a channel that
// receives when the log grew past what the cache applied. A store that
// cannot learn of them never sends, which leaves the poll alone to find
// those writes.
func (c *Cache) follow(ctx context.Context, from int64) <-chan struct{} {
	wake := make(chan struct{}, 1)
	go c.store.Follow(ctx, from, c.opts.ProbeInterval, func(rev int64) {
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
