package watchcache

// CountInPartsOf has counts split their objects across processors in
// parts of n or more, until the returned restore.
func CountInPartsOf(n int) (restore func()) {
	before := minCountPart
	minCountPart = n
	return func() { minCountPart = before }
}
