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

// PageBy has pages walk the objects in key order (walk) or sort the
// selected ones, until the returned restore.
func PageBy(walk bool) (restore func()) {
	before := sortCost
	sortCost = 0
	if walk {
		sortCost = 1 << 40
	}
	return func() { sortCost = before }
}
