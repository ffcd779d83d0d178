package apiserver

import (
	"strconv"

	metainternalversion "k8s.io/apimachinery/pkg/apis/meta/internalversion"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/panorama-io/panorama/apiserver/watchcache"
	"github.com/panorama-io/panorama/storage"
)

// What resourceVersion asks of a read, as kube-apiserver has it
// (https://kubernetes.io/docs/reference/using-api/api-concepts/#resource-versions),
// all in this file. A Panorama resourceVersion is a global revision (see
// package storage); "0" and unset are not revisions but requests.
//
// Get and list (resourceVersionMatch, paging; columns are resourceVersion):
//
//	match         paging              unset        "0"                 "N"
//	unset         no limit            MostRecent   Any                 NotOlderThan N
//	unset         limit, no continue  MostRecent   Any                 Exact N
//	unset         continue            token's      token's             400
//	NotOlderThan  no continue         400          Any                 NotOlderThan N
//	Exact         no continue         400          400                 Exact N
//
// A match with continue is 400 too. The 400s of the match rows are
// apimachinery's ListOptions validation, which parseListOptions runs first.
// Served as:
//
//   - MostRecent: the store's latest state, a consistent read: the watch
//     cache's once it has applied the store's latest revision
//     (watchcache.Reads), else the store's.
//   - Any: the watch cache's state, which follows the store's log; from
//     the store when the cache cannot answer (owner filters). A continue
//     token fixes the revision itself: its page is read as Exact N's.
//   - NotOlderThan N: the latest state as MostRecent, after checking the
//     store has reached N; if not, 504 "Too large resource version"
//     (kube's answer, which clients retry).
//   - Exact N, and a continue token's page: the state at N, from the
//     watch cache while its ring reaches back to N, else a store snapshot;
//     410 Expired when N is compacted.
//
// Watch (sendInitialEvents needs resourceVersionMatch=NotOlderThan and, for
// client-go, allowWatchBookmarks; validation enforces the match):
//
//	sendInitialEvents  unset                 "0"                   "N"
//	unset or false     state, then changes   state, then changes   changes after N (Exact)
//	true               state, bookmark, ...  state, bookmark, ...  state not older than N, bookmark, ...
//
// The state comes from the watch cache; a bookmark annotated
// k8s.io/initial-events-end ends it. A watch from N below what the cache
// remembers is 410 (the watch cache's check); a state not older than N
// waits a little for the cache to reach N, then answers 504.
//
// Where Panorama differs from kube-apiserver: kube starts a watch with
// sendInitialEvents=false and resourceVersion unset or "0" at the latest
// revision without sending the state, and makes sendInitialEvents=true
// with resourceVersion unset a consistent read (the cache first catches up
// with the store's current revision). Panorama sends the state in the
// first case and sends the cache's state, at most one poll behind, in the
// second. Get ignores resourceVersion and reads the latest state.

// versionMatch is how the state served relates to the revision asked for.
type versionMatch int

const (
	mostRecent   versionMatch = iota // resourceVersion unset
	anyVersion                       // resourceVersion "0"
	notOlderThan                     // the state at rev or later
	exact                            // the state at rev; for a watch, the changes after rev
)

func (m versionMatch) String() string {
	return [...]string{"MostRecent", "Any", "NotOlderThan", "Exact"}[m]
}

// readVersion is what a list or watch asks of resourceVersion.
type readVersion struct {
	match versionMatch
	// rev is the revision of NotOlderThan and Exact, 0 otherwise.
	rev   int64
	watch bool
	// sendInitialEvents: a watch sends the state it starts from, then a
	// bookmark ending it (the watch-list protocol).
	sendInitialEvents bool
}

// parseReadVersion reads resourceVersion, resourceVersionMatch, limit,
// continue and sendInitialEvents of options that passed apimachinery's
// ListOptions validation.
func parseReadVersion(opts *metainternalversion.ListOptions) (readVersion, error) {
	v := readVersion{watch: opts.Watch, sendInitialEvents: opts.Watch && opts.SendInitialEvents != nil && *opts.SendInitialEvents}
	if opts.ResourceVersion == "" {
		return v, nil
	}
	rev, err := strconv.ParseInt(opts.ResourceVersion, 10, 64)
	if err != nil || rev < 0 {
		return v, badf("invalid resourceVersion %q: must be a non-negative integer", opts.ResourceVersion)
	}
	switch {
	case rev == 0:
		v.match = anyVersion
		return v, nil
	case v.watch:
		v.match = exact
		if v.sendInitialEvents {
			v.match = notOlderThan
		}
	case opts.Continue != "":
		// The token fixes the revision (kube-apiserver's words).
		return v, badRequest("specifying resource version is not allowed when using continue")
	case opts.ResourceVersionMatch == metav1.ResourceVersionMatchExact,
		opts.ResourceVersionMatch == "" && opts.Limit > 0: // the legacy paged list
		v.match = exact
	default:
		v.match = notOlderThan
	}
	v.rev = rev
	return v, nil
}

// fromCache reports whether the watch cache serves the list q: only a
// resourceVersion="0" list may see its state, and only when q has neither
// owner filters (which the cache does not evaluate) nor a continue token.
func (v readVersion) fromCache(q *storage.ListQuery) bool {
	return !v.watch && v.match == anyVersion && q.Continue == "" && !q.HasOwnerFilter()
}

// storeRevision is the revision a list reads the store at: Exact's, else 0
// (the latest, or the continue token's).
func (v readVersion) storeRevision() int64 {
	if !v.watch && v.match == exact {
		return v.rev
	}
	return 0
}

// freshness is what a list asks of the state it reads.
func (v readVersion) freshness(q *storage.ListQuery) watchcache.Freshness {
	f := watchcache.Freshness{Any: v.fromCache(q)}
	if !v.watch && v.match == notOlderThan {
		f.NotOlderThan = v.rev
	}
	return f
}
