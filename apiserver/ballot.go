package apiserver

// Where the view across clusters must show one thing that members may
// claim differently (a resource's kind and scope, a definition in an
// OpenAPI document), it shows what most of the members claiming it claim:
// no member, whatever it says, outweighs the others. A tie goes to the
// claim of the oldest of them (Registry.seniority), which a Cluster
// created later cannot outrank.

// ballot tallies the claims of one thing, cast oldest member first.
type ballot[T any] struct {
	claims []T // in the order first cast
	votes  []int
	equal  func(a, b T) bool
}

func newBallot[T any](equal func(a, b T) bool) *ballot[T] {
	return &ballot[T]{equal: equal}
}

func (b *ballot[T]) cast(claim T) {
	for i, c := range b.claims {
		if b.equal(c, claim) {
			b.votes[i]++
			return
		}
	}
	b.claims = append(b.claims, claim)
	b.votes = append(b.votes, 1)
}

// winner is the claim with the most votes, the first cast among equals;
// a ballot has one once a claim is cast.
func (b *ballot[T]) winner() T {
	best := 0
	for i, v := range b.votes {
		if v > b.votes[best] {
			best = i
		}
	}
	return b.claims[best]
}
