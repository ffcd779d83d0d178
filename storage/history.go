package storage

import (
	"time"

	jsonpatch "github.com/evanphx/json-patch/v5"
	"k8s.io/apimachinery/pkg/watch"
)

// DefaultHistoryRetention is how long the compactor keeps the history of
// changes by default.
const DefaultHistoryRetention = 7 * 24 * time.Hour

// Version is one change of an object, as its history keeps it.
type Version struct {
	Revision int64
	// Time the change was committed; zero when not known (written before
	// history was kept).
	Time                  time.Time
	Type                  watch.EventType
	MemberResourceVersion string
	// Object is the object after the change; for DELETED, its last state.
	Object []byte
	// Patch is the JSON merge patch (RFC 7386) from the previous version to
	// this one: the whole object for ADDED, null for DELETED.
	Patch []byte
}

// nullPatch is the merge patch that removes the whole document.
var nullPatch = []byte("null")

// VersionPatch returns the merge patch of a change of type t from prev to
// next, as Version.Patch has it.
func VersionPatch(t watch.EventType, prev, next []byte) ([]byte, error) {
	switch {
	case t == watch.Deleted:
		return nullPatch, nil
	case prev == nil:
		return next, nil
	}
	return jsonpatch.CreateMergePatch(prev, next)
}

// ApplyPatch applies a merge patch to doc: a history row written before
// history kept versions as deltas holds the merge patch that turns the
// next version back into its own.
func ApplyPatch(doc, patch []byte) ([]byte, error) {
	return jsonpatch.MergePatch(doc, patch)
}
