package sqlstore

import (
	"context"
	"errors"
	"fmt"
	"math"
	"sync/atomic"
	"time"

	"github.com/spf13/pflag"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/klog/v2"

	"github.com/panorama-io/panorama/storage"
)

// Reads from a PostgreSQL streaming replica. A physical standby replays
// the primary's WAL in commit order, so on the standby too commit order is
// revision order: a tail of the log there misses nothing, it is only late.
// What a standby cannot promise on its own is freshness: a client that has
// seen revision N (from another API server, or from this one a moment ago
// through the primary) must never be served an older state. So every read
// that is not of the log first finds the revision it must show at least:
// the one it is pinned to (a list at a resourceVersion, a continue token),
// else the primary's current one, a primary-key read. It waits up to
// ReadWait for the standby to reach it, then reads the primary instead.
//
// The log itself (Changes, History), the revision the watch cache starts
// from, and the watch cache's follow of new writes are the standby's: a
// cache fed by the standby is consistent with the standby, only late.

const (
	// DefaultReadWait is how long a read waits for the standby to reach the
	// revision it must show before it reads the primary.
	DefaultReadWait = time.Second
	// replicaPoll is how often a waiting read reads the standby's revision.
	replicaPoll = 5 * time.Millisecond
	// lagEvery is how often the standby's lag is measured.
	lagEvery = time.Second
)

// AddReadFlags binds the flags of a process that only reads (the API
// server): where its reads go.
func (o *Options) AddReadFlags(fs *pflag.FlagSet) {
	fs.StringVar(&o.ReadDSN, "storage-read-dsn", "", "PostgreSQL only: data source name of a streaming replica (hot standby) "+
		"to read lists, gets and the change log from; --storage-dsn stays the primary. A read waits up to --storage-read-wait "+
		"for the replica to reach the revision it must show (the primary's current one, or the one it is pinned to), then reads the primary.")
	fs.DurationVar(&o.ReadWait, "storage-read-wait", DefaultReadWait, "How long a read waits for the replica of --storage-read-dsn to catch up before it reads the primary.")
}

// validateRead reports read flags in error.
func (o *Options) validateRead() error {
	if o.ReadDSN == "" {
		return nil
	}
	if !readsReplicas(o.Driver) {
		return fmt.Errorf("--storage-read-dsn needs --storage=postgres (a streaming replica), not %s", o.Driver)
	}
	if o.ReadWait < 0 {
		return fmt.Errorf("--storage-read-wait must not be negative, not %s", o.ReadWait)
	}
	return nil
}

// OpenForReads opens the storage of a process that reads: the Store of o,
// or, with a ReadDSN, a Replicated that reads the replica.
func OpenForReads(ctx context.Context, o Options) (storage.Interface, error) {
	if err := o.validateRead(); err != nil {
		return nil, err
	}
	primary, err := Open(ctx, o)
	if err != nil || o.ReadDSN == "" {
		return primary, err
	}
	standby, err := connect(ctx, Options{Driver: o.Driver, DSN: o.ReadDSN, MaxOpenConns: o.MaxOpenConns})
	if err != nil {
		_ = primary.Close()
		return nil, fmt.Errorf("--storage-read-dsn: %w", err)
	}
	standby.standby = true
	if err := caughtUp(ctx, primary, standby); err != nil {
		_ = standby.Close()
		_ = primary.Close()
		return nil, fmt.Errorf("--storage-read-dsn: %w", err)
	}
	return NewReplicated(primary, standby, o.ReadWait), nil
}

// openCatchUp bounds how long opening waits for the standby to replay what
// the primary held at open, its schema first.
const openCatchUp = time.Minute

// caughtUp waits until the standby has replayed the primary's revision as
// of now: before, it may lack the tables themselves (a new database, a
// migration), and every read would fall back. A standby of another
// database never does, which this reports.
func caughtUp(ctx context.Context, primary, standby *Store) error {
	want, _, err := primary.Revision(ctx)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, openCatchUp)
	defer cancel()
	for {
		rev, _, err := standby.Revision(ctx)
		if err == nil && rev >= want {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("the replica has not reached the primary's revision %d in %s (is it a standby of the same database?): at %d, %v", want, openCatchUp, rev, err)
		case <-time.After(replicaPoll):
		}
	}
}

// Replicated reads from a standby and writes to the primary (see above).
type Replicated struct {
	primary, standby *Store
	wait             time.Duration
	stop             context.CancelFunc
	done             chan struct{}

	lagRevisions atomic.Int64
	lagSeconds   atomic.Uint64 // float64 bits
	fallbacks    atomic.Int64
}

var _ storage.Interface = (*Replicated)(nil)

// NewReplicated reads from standby, a Store opened on a hot standby of
// primary's database, and writes to primary; it closes both.
func NewReplicated(primary, standby *Store, wait time.Duration) *Replicated {
	ctx, cancel := context.WithCancel(context.Background())
	r := &Replicated{primary: primary, standby: standby, wait: wait, stop: cancel, done: make(chan struct{})}
	lagged.Store(r)
	go r.measureLag(ctx)
	return r
}

// reader returns the store to read from: the standby once it has reached
// need (the primary's current revision when need is 0), waiting up to the
// read wait, else the primary.
func (r *Replicated) reader(ctx context.Context, need int64) *Store {
	if need <= 0 {
		cur, _, err := r.primary.Revision(ctx)
		if err != nil {
			return r.primary // which answers the error, or recovers
		}
		need = cur
	}
	deadline := time.Now().Add(r.wait)
	for {
		rev, _, err := r.standby.Revision(ctx)
		if err == nil && rev >= need {
			return r.standby
		}
		if err != nil || !time.Now().Before(deadline) {
			r.fallbacks.Add(1)
			return r.primary
		}
		select {
		case <-ctx.Done():
			return r.primary
		case <-time.After(replicaPoll):
		}
	}
}

// ReadableRevision implements storage.Reader: it waits, up to the read
// wait, for the standby to reach rev, and returns the revision a read
// would then show: the standby's, or the primary's if the standby is still
// behind (the read would fall back to it).
func (r *Replicated) ReadableRevision(ctx context.Context, rev int64) (int64, error) {
	s := r.reader(ctx, rev)
	cur, _, err := s.Revision(ctx)
	return cur, err
}

// ReplicaLag returns how far the standby was behind the primary when last
// measured: in revisions, and in seconds since the oldest commit it has
// not replayed (0 when it has replayed all).
func (r *Replicated) ReplicaLag() (revisions int64, seconds float64) {
	return r.lagRevisions.Load(), math.Float64frombits(r.lagSeconds.Load())
}

// Fallbacks counts the reads sent to the primary because the standby had
// not reached their revision within the read wait.
func (r *Replicated) Fallbacks() int64 { return r.fallbacks.Load() }

// measureLag measures the lag every lagEvery until ctx ends.
func (r *Replicated) measureLag(ctx context.Context) {
	defer close(r.done)
	t := time.NewTicker(lagEvery)
	defer t.Stop()
	for {
		if err := r.measure(ctx); err != nil && ctx.Err() == nil {
			klog.FromContext(ctx).Error(err, "Measuring the replica's lag failed")
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

func (r *Replicated) measure(ctx context.Context) error {
	// The standby first: a revision the primary reaches meanwhile counts
	// as lag, never the reverse.
	var seconds float64
	if err := r.standby.db.WithContext(ctx).Raw(`SELECT CASE WHEN pg_last_wal_receive_lsn() = pg_last_wal_replay_lsn() THEN 0
		ELSE COALESCE(EXTRACT(EPOCH FROM now() - pg_last_xact_replay_timestamp()), 0) END`).Scan(&seconds).Error; err != nil {
		return err
	}
	replayed, _, err := r.standby.Revision(ctx)
	if err != nil {
		return err
	}
	cur, _, err := r.primary.Revision(ctx)
	if err != nil {
		return err
	}
	lag := max(cur-replayed, 0)
	if lag == 0 {
		seconds = 0
	}
	r.lagRevisions.Store(lag)
	r.lagSeconds.Store(math.Float64bits(seconds))
	return nil
}

// ForCluster implements storage.Writer on the primary.
func (r *Replicated) ForCluster(cluster string, epoch int64) storage.ClusterWriter {
	return r.primary.ForCluster(cluster, epoch)
}

// DeleteOrphans implements storage.Maintainer on the primary.
func (r *Replicated) DeleteOrphans(ctx context.Context, keep []storage.ClusterResource, epochs map[string]int64) (int64, error) {
	return r.primary.DeleteOrphans(ctx, keep, epochs)
}

// Own implements storage.Owner on the primary.
func (r *Replicated) Own(ctx context.Context, cluster string) (int64, error) {
	return r.primary.Own(ctx, cluster)
}

// Epochs implements storage.Owner on the primary, whose epochs fence the
// writes.
func (r *Replicated) Epochs(ctx context.Context) (map[string]int64, error) {
	return r.primary.Epochs(ctx)
}

// Compact implements storage.Maintainer on the primary.
func (r *Replicated) Compact(ctx context.Context, revision int64, keepHistory bool) error {
	return r.primary.Compact(ctx, revision, keepHistory)
}

// ExpireHistory implements storage.Maintainer on the primary.
func (r *Replicated) ExpireHistory(ctx context.Context, before time.Time) error {
	return r.primary.ExpireHistory(ctx, before)
}

// ObjectHistory implements storage.Reader at the latest revision.
func (r *Replicated) ObjectHistory(ctx context.Context, key storage.Key, limit int) ([]storage.Version, error) {
	return r.reader(ctx, 0).ObjectHistory(ctx, key, limit)
}

// RevisionAt implements storage.Reader at the latest revision, so that
// a recent time maps to what the primary has committed.
func (r *Replicated) RevisionAt(ctx context.Context, t time.Time) (int64, error) {
	return r.reader(ctx, 0).RevisionAt(ctx, t)
}

// SecretsRewritten implements storage.Log from the standby, whose
// log the watch cache reads: a count it sees there was moved by rewrites
// the standby has replayed.
func (r *Replicated) SecretsRewritten(ctx context.Context) (int64, error) {
	return r.standby.SecretsRewritten(ctx)
}

// DeclareFields implements storage.Maintainer on the primary.
func (r *Replicated) DeclareFields(ctx context.Context, decls []storage.FieldDeclaration) error {
	return r.primary.DeclareFields(ctx, decls)
}

// Get implements storage.Reader: the latest state, from the standby
// once it has caught up with the primary.
func (r *Replicated) Get(ctx context.Context, key storage.Key) (*storage.Object, error) {
	return r.reader(ctx, 0).Get(ctx, key)
}

// List implements storage.Reader: at the revision the list is pinned
// to, or the latest, from the standby once it has reached it.
func (r *Replicated) List(ctx context.Context, q *storage.ListQuery) (*storage.ListResult, error) {
	need := q.Revision
	if q.Continue != "" {
		// A token that does not decode is refused by the List it reaches.
		if rev, _, err := storage.DecodeContinue(q.Continue, q.Order()); err == nil {
			need = rev
		}
	}
	return r.reader(ctx, need).List(ctx, q)
}

// Count implements storage.Reader at the latest revision.
func (r *Replicated) Count(ctx context.Context, q *storage.CountQuery) (*storage.CountResult, error) {
	return r.reader(ctx, 0).Count(ctx, q)
}

// MemberVersions implements storage.Reader at the latest revision.
func (r *Replicated) MemberVersions(ctx context.Context, cluster string, gvr schema.GroupVersionResource) (map[storage.NamespacedName]string, error) {
	return r.reader(ctx, 0).MemberVersions(ctx, cluster, gvr)
}

// Changes implements storage.Log from the standby's log.
func (r *Replicated) Changes(ctx context.Context, since int64, limit int) ([]storage.LoggedChange, int64, error) {
	return r.standby.Changes(ctx, since, limit)
}

// History implements storage.Log from the standby's log.
func (r *Replicated) History(ctx context.Context, gvr schema.GroupVersionResource, upTo int64, limit int) ([]storage.LoggedChange, int64, error) {
	return r.standby.History(ctx, gvr, upTo, limit)
}

// LatestRevision implements storage.Reader: the primary's revisions, what
// a consistent read must show, where Revision is what the standby has
// replayed.
func (r *Replicated) LatestRevision(ctx context.Context) (current, compacted int64, err error) {
	return r.primary.Revision(ctx)
}

// ReadsLag implements storage.Reader: the standby replays the primary's
// commits late, whatever --storage-read-wait says of waiting for it.
func (r *Replicated) ReadsLag() bool { return true }

// ReadWait implements storage.Reader: how long a read waits for the
// standby before it reads the primary (--storage-read-wait).
func (r *Replicated) ReadWait() time.Duration { return r.wait }

// Revision implements storage.Log: the standby's, which its log
// holds up to.
func (r *Replicated) Revision(ctx context.Context) (int64, int64, error) {
	return r.standby.Revision(ctx)
}

// Fields implements storage.Reader from the standby.
func (r *Replicated) Fields(ctx context.Context) (*storage.FieldSet, error) {
	return r.standby.Fields(ctx)
}

// Changed implements storage.Log: the primary's writes by this
// process (none, in an API server).
func (r *Replicated) Changed() <-chan struct{} { return r.primary.Changed() }

// Follow implements storage.Log on the standby, which cannot listen
// for notifications (PostgreSQL refuses LISTEN during recovery): its
// revision is probed.
func (r *Replicated) Follow(ctx context.Context, from int64, probe time.Duration, wake func(int64)) {
	r.standby.Follow(ctx, from, probe, wake)
}

// Close implements storage.Maintainer.
func (r *Replicated) Close() error {
	r.stop()
	<-r.done
	return errors.Join(r.standby.Close(), r.primary.Close())
}
