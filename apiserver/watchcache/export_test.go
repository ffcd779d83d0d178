package watchcache

// CountInPartsOf has counts split their objects across processors in
// parts of n or more, until the returned restore.
func CountInPartsOf(n int) (restore func()) {
	before := minCountPart
	minCountPart = n
	return func() { minCountPart = before }
}

// CountByReading has counts read every selected object rather than
// intersect the index's sets, until the returned restore.
func CountByReading() (restore func()) {
	before := objectCost
	objectCost = 0
	return func() { objectCost = before }
}

// Ways a page finds its objects, for PageBy.
const (
	Walking      = iota // walks the key order
	Sorting             // sorts the selected objects
	GivingUp            // starts walking, gives up after a visit and sorts
	ByTheirCosts        // as pages do
)

// PageBy has pages find their objects the way given, until the returned
// restore.
func PageBy(way int) (restore func()) {
	cost, visits := sortCost, maxVisits
	switch way {
	case Walking:
		sortCost = 1 << 40
	case Sorting:
		sortCost = 0
	case GivingUp:
		sortCost, maxVisits = 1<<40, 1
	}
	return func() { sortCost, maxVisits = cost, visits }
}

// StaleCompaction is how many poll intervals a page trusts the tail's
// compaction mark.
const StaleCompaction = staleCompaction

// HeldBytes is what the cache estimates its published resources hold.
func HeldBytes(c *Cache) int64 {
	c.tail.Lock()
	defer c.tail.Unlock()
	var n int64
	for _, r := range c.tailing {
		r.mu.RLock()
		n += r.bytes
		r.mu.RUnlock()
	}
	return n
}

// Reserved is what the loads under way reserved of the budget.
func Reserved(c *Cache) int64 { return c.loading.Load() }
