// Package storage is the contract between the sync side, which writes what
// member clusters hold, and the API side, which serves it: a store of the
// current objects plus a revisioned log of every change.
//
// Every change gets the next value of one global revision. That revision is
// the resourceVersion clients see, so a list or watch across all clusters is
// consistent and resumable from a single integer.
package storage

import (
	"context"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"
)

// Annotations set on every stored object.
const (
	// ClusterAnnotation names the member cluster an object comes from.
	ClusterAnnotation = "panorama.io/cluster"
	// MemberResourceVersionAnnotation keeps the object's resourceVersion in
	// its member cluster; metadata.resourceVersion becomes the global revision.
	MemberResourceVersionAnnotation = "panorama.io/member-resource-version"
)

// Key names one object of one member cluster.
type Key struct {
	Cluster   string
	GVR       schema.GroupVersionResource
	Namespace string
	Name      string
}

// Resource is a member resource as Panorama knows it: the controller syncs
// it and the API server serves it by this one description.
type Resource struct {
	GVR        schema.GroupVersionResource
	Kind       string
	Namespaced bool
}

// Change is one write of a batch: an upsert of Object, or, when Object is nil,
// a delete of Namespace/Name.
type Change struct {
	Object    *unstructured.Unstructured
	Namespace string
	Name      string
	// ResourceVersion of a delete is the member's resourceVersion of the
	// deleted object, when known: a delete older than the stored object is
	// one that arrived late, and is ignored.
	ResourceVersion string
	// Rewrite stores an upsert even when its member resourceVersion is the
	// stored one: the member's object is unchanged, but the form it is
	// stored in is not (fields dropped before storage changed). It is
	// still skipped when older than the stored object.
	Rewrite bool
	// Listed is an upsert that a list of the member found, rather than a
	// watch saw happen: the object may have held its labels and fields
	// since before it, so no count period begins at it (HeldSince), unless
	// it is a watch event's.
	Listed bool
}

// Upsert makes a Change that stores obj.
func Upsert(obj *unstructured.Unstructured) Change {
	return Change{Object: obj, Namespace: obj.GetNamespace(), Name: obj.GetName()}
}

// Rewrite makes a Change that stores obj even if its member
// resourceVersion is the stored one (Change.Rewrite).
func Rewrite(obj *unstructured.Unstructured) Change {
	c := Upsert(obj)
	c.Rewrite = true
	return c
}

// Delete makes a Change that removes namespace/name.
func Delete(namespace, name string) Change { return Change{Namespace: namespace, Name: name} }

// DeleteAt makes a Change that removes namespace/name as of the member's
// resourceVersion rv, so that it cannot remove a newer object.
func DeleteAt(namespace, name, rv string) Change {
	return Change{Namespace: namespace, Name: name, ResourceVersion: rv}
}

// LoggedChange is one entry of the change log: a change as written, at its
// revision. (Change is a write to make.)
type LoggedChange struct {
	Revision int64
	Type     watch.EventType
	Key      Key
	// Object is the object as served after the change; for DELETED, its last
	// state with resourceVersion set to the deletion's revision.
	Object []byte
	// Prev is the object before the change, nil when it was created. Only
	// History fills it.
	Prev []byte
}

// The storage contract comes in roles, each taken by the side that uses
// it: the API server reads (Reader) and tails the change log (Log); the
// synchronizers write (Writer); the controller manager also keeps the
// store (Maintainer). Implementations are safe for concurrent use; several
// processes may share one database.

// Reader reads the current objects and their history. Over a replica
// (sqlstore.Replicated) reads may be late: the read freshness methods say
// what a read must show and what it would.
type Reader interface {
	// Get returns one object; ErrNotFound when absent.
	Get(ctx context.Context, key Key) (*Object, error)
	// List returns the objects matching q at one revision, a page at a time.
	List(ctx context.Context, q *ListQuery) (*ListResult, error)
	// Count counts the objects matching q's query by its groups, at the
	// current revision.
	Count(ctx context.Context, q *CountQuery) (*CountResult, error)
	// MemberVersions maps namespace/name to member resourceVersion for one
	// resource of one cluster: what a synchronizer needs to resume or diff.
	MemberVersions(ctx context.Context, cluster string, gvr schema.GroupVersionResource) (map[NamespacedName]string, error)
	// Fields returns the fields every stored object is indexed with: what
	// field selectors may use.
	Fields(ctx context.Context) (*FieldSet, error)
	// ObjectHistory returns the versions of one object that its history and
	// the log hold, oldest first, the last limit of them (all when limit is
	// 0); ErrNotFound when there are none.
	ObjectHistory(ctx context.Context, key Key, limit int) ([]Version, error)
	// RevisionAt returns the last revision committed at or before t; a
	// TooOldError when the history does not reach back to t.
	RevisionAt(ctx context.Context, t time.Time) (int64, error)

	// LatestRevision returns the revision a consistent read must show, and
	// the compacted one: the last committed, the primary's where reads go
	// to a replica, whose log (Log.Revision) may be behind it.
	LatestRevision(ctx context.Context) (current, compacted int64, err error)
	// ReadableRevision waits, up to ReadWait, for reads to show rev, and
	// returns the revision a read would then show, below rev when the
	// store has not reached it.
	ReadableRevision(ctx context.Context, rev int64) (int64, error)
	// ReadsLag reports whether reads may show less than every commit:
	// they go to a replica, which replays the primary's commits late.
	ReadsLag() bool
	// ReadWait is how long a read that lags waits for its replica to
	// reach the revision it must show before it reads the primary; 0 may
	// mean "read the primary at once" (ReadsLag says whether reads lag).
	ReadWait() time.Duration
}

// Log is the change log: every change, in revision order, from the
// compacted revision on.
type Log interface {
	// Revision returns the revision the log has reached and the compacted
	// one.
	Revision(ctx context.Context) (current, compacted int64, err error)
	// Changes returns up to limit log entries after revision since, oldest
	// first, and the compacted revision it read with them; a TooOldError
	// when since is below it. A tail learns of compactions from it.
	Changes(ctx context.Context, since int64, limit int) (changes []LoggedChange, compacted int64, err error)
	// History returns the last (at most limit) log entries of one resource
	// up to and including revision upTo, oldest first, with Prev filled, and
	// the compacted revision: a watch cache starting at upTo remembers them.
	History(ctx context.Context, gvr schema.GroupVersionResource, upTo int64, limit int) ([]LoggedChange, int64, error)
	// SecretsRewritten returns a count that moves each time states of
	// Secrets (SecretsResource) that the log holds are rewritten in place
	// (DropSecretData, ForgetCluster), which Changes never reports: a cache
	// of the log's Secrets reads them again when it moves. Another
	// process's rewrites are seen within a second, as Fields sees
	// declarations.
	SecretsRewritten(ctx context.Context) (int64, error)
	// Changed returns a channel closed at the next write by this process, so
	// in-process readers need not wait for a poll.
	Changed() <-chan struct{}
	// Follow calls wake with the revision the log has reached each time it
	// learns that it moved past from (and past every revision it woke
	// with before), until ctx ends; it returns when ctx ends. It learns of
	// writes by other processes sharing the database, which Changed does
	// not see: from the database, if it can push its commits, else by
	// reading the revision every probe interval (never when probe <= 0,
	// leaving the caller to its poll).
	Follow(ctx context.Context, from int64, probe time.Duration, wake func(revision int64))
}

// Writer writes what member clusters hold, each cluster's under the epoch
// of its owner (fence.go).
type Writer interface {
	// ForCluster returns the writer of cluster's objects under the owner
	// epoch epoch: its writes succeed only while epoch is the cluster's
	// current one (NeverOwned: while no one has taken the cluster over),
	// and fail with a FencedError, nothing of them written, from then on.
	// Unfenced writes are never refused.
	ForCluster(cluster string, epoch int64) ClusterWriter
}

// ClusterWriter writes one cluster's objects under one owner epoch
// (Writer.ForCluster).
type ClusterWriter interface {
	// Apply writes a batch of changes to one resource in one transaction.
	// Upserts whose member resourceVersion equals the stored one (but
	// rewrites, Change.Rewrite), and deletes of absent objects, are
	// skipped; so are upserts and deletes older than the stored object,
	// when both member resourceVersions are integers (as kube's are),
	// since the member never goes back in time.
	// Objects storage cannot hold are left out and named by an
	// InvalidObjectError, returned with the revision after the rest of the
	// batch. It returns the revision after the batch. The caller's changes
	// and their objects are left as they were.
	Apply(ctx context.Context, gvr schema.GroupVersionResource, changes []Change) (int64, error)
	// DeleteResource removes every object of one resource; gvr zero
	// removes every resource of the cluster. Each removal is logged.
	DeleteResource(ctx context.Context, gvr schema.GroupVersionResource) (int64, error)
	// DropSecretData removes the contents of the cluster's core/v1
	// Secrets (StripSecretData) from every state stored of them: a current
	// object that holds some is written again without, as a change that
	// watches see, and the log's and the history's states are rewritten
	// in place. It goes over what was written since its last call for
	// the cluster, so that calling it again costs little and finishes
	// what a call that failed left.
	DropSecretData(ctx context.Context) error
	// ForgetCluster drops the history of the cluster's objects up to now,
	// which ObjectHistory and lists with History then never read, and the
	// Secret contents of its log: what is left of a deleted Cluster, once
	// DeleteResource removed its objects, so that one created again under
	// its name has none of it. The log's entries stay until compacted, for
	// watches to see the deletions, and compaction keeps none of them as
	// history.
	ForgetCluster(ctx context.Context) error
}

// Maintainer keeps the store: who owns which cluster, what the log and the
// history keep, which fields are indexed, what is left of clusters gone.
type Maintainer interface {
	Owner
	// Revision returns the revision the log has reached and the compacted
	// one, as Log's: what Compact goes by.
	Revision(ctx context.Context) (current, compacted int64, err error)
	// Compact drops log entries up to and including revision; with
	// keepHistory, each is first kept as a history entry (a reverse merge
	// patch), which ObjectHistory and lists with History read.
	Compact(ctx context.Context, revision int64, keepHistory bool) error
	// ExpireHistory drops the history of the changes committed before t:
	// revisions before then answer a TooOldError to history reads.
	ExpireHistory(ctx context.Context, before time.Time) error
	// DeclareFields makes decls, beyond the built-in fields, the indexed
	// fields: the field attributes of every stored object are rewritten,
	// in batches that hold up writers for one batch at a time, before
	// Fields returns them. An InvalidError when a declaration is. The
	// controller manager calls it at start too, so that a change of the
	// built-in fields (BuiltinFieldsRevision) reindexes.
	DeclareFields(ctx context.Context, decls []FieldDeclaration) error
	// DeleteOrphans removes every object of the cluster/resource pairs not
	// in keep: what is left of resources deselected, or clusters deleted,
	// while no synchronizer ran. A pair with a zero GVR keeps every resource
	// of its cluster. Each removal is logged. The removals of a cluster are
	// fenced by its epoch in epochs (Writer.ForCluster), NeverOwned when
	// absent from it, Unfenced not at all; those of a cluster fenced off
	// are skipped: it was taken over since the caller judged it orphaned.
	DeleteOrphans(ctx context.Context, keep []ClusterResource, epochs map[string]int64) (int64, error)
	Close() error
}

// Interface is every role: what the controller manager, which syncs and
// keeps the store and serves the API in the all-in-one binary, opens.
type Interface interface {
	Reader
	Log
	Writer
	Maintainer
}

// ClusterResource names one resource of one member cluster.
type ClusterResource struct {
	Cluster string
	GVR     schema.GroupVersionResource
}

// NamespacedName is an object's name within one cluster and resource.
type NamespacedName struct{ Namespace, Name string }

// CRDResource is where synced CustomResourceDefinitions are stored: the
// controller syncs them (syncAllCustomResources) so that the API server can
// read their printer columns from storage. Both sides name it here.
var CRDResource = schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}
