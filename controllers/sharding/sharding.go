// Package sharding divides the Clusters among controller-manager replicas.
//
// Clusters fall into a fixed number of shards by a hash of their name. Each
// shard has a Lease in the host, and only its holder syncs the shard's
// clusters. Which replica should hold a shard is decided by rendezvous
// hashing over the live replicas, each of which keeps a membership Lease of
// its own renewed: every replica computes the same assignment from the same
// Leases, and its elector of a shard (client-go leaderelection; one per
// shard on every replica) takes the shard's Lease only while it is assigned
// here, and releases it when it is assigned elsewhere. So a replica that
// joins takes its share, one that leaves (or stops renewing) has its shards
// taken over once their Leases expire. Two replicas whose views differ for a
// moment contend for a Lease, which one holds.
//
// A Lease bounds in time who believes it owns a shard, not when its last
// write reaches the database: storage fences that (storage.Owner).
package sharding

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/fnv"
	"slices"
	"strconv"
	"sync"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/leaderelection"
	"k8s.io/client-go/tools/leaderelection/resourcelock"
	"sigs.k8s.io/controller-runtime/pkg/log"
)

// MemberLabel marks membership Leases; its value is the Options.Name they
// belong to.
const MemberLabel = "cluster.panorama.io/controller-manager-member"

// Options configure a Coordinator.
type Options struct {
	// Shards is how many shards the clusters fall into: the most replicas
	// that can share the work. Every replica must be given the same.
	Shards int
	// Name prefixes the Leases: <Name>-member-<Identity>, <Name>-shard-<n>.
	Name      string
	Namespace string
	// Identity names this replica among the others; unique and a DNS label
	// (the pod's name).
	Identity string
	// LeaseDuration is how long a replica that stopped renewing still holds
	// its shards; RenewDeadline how long it tries to renew before it lets them
	// go; RetryPeriod how often Leases are tried and membership read.
	LeaseDuration, RenewDeadline, RetryPeriod time.Duration
}

// Coordinator runs this replica's membership and its shards' electors. It
// is a manager.Runnable that runs on every replica.
type Coordinator struct {
	opts   Options
	client kubernetes.Interface
	// onChange is called with a shard this replica has come to hold or has
	// stopped holding.
	onChange func(ctx context.Context, shard int)

	mu       sync.Mutex
	held     map[int]bool
	assigned map[int]bool          // shards this replica may take
	running  map[int]*shardElector // the current elector of each shard

	// seen is when each member Lease was last seen renewed, by this
	// replica's clock: membership does not depend on clocks agreeing. Only
	// Start's goroutine uses it.
	seen map[string]observation
}

type observation struct {
	renewed metav1.MicroTime
	at      time.Time
}

// New makes a Coordinator.
func New(client kubernetes.Interface, opts Options, onChange func(ctx context.Context, shard int)) (*Coordinator, error) {
	if opts.Shards <= 0 || opts.Name == "" || opts.Namespace == "" || opts.Identity == "" {
		return nil, fmt.Errorf("sharding needs shards, a name, a namespace and an identity: %+v", opts)
	}
	return &Coordinator{opts: opts, client: client, onChange: onChange, held: map[int]bool{}, assigned: map[int]bool{}, running: map[int]*shardElector{}, seen: map[string]observation{}}, nil
}

// ShardOf is the shard of a cluster.
func ShardOf(cluster string, shards int) int {
	h := fnv.New32a()
	h.Write([]byte(cluster))
	return int(h.Sum32() % uint32(shards))
}

// Shard is the shard of a cluster under these options.
func (c *Coordinator) Shard(cluster string) int { return ShardOf(cluster, c.opts.Shards) }

// Identity is this replica's.
func (c *Coordinator) Identity() string { return c.opts.Identity }

// Owns reports whether this replica holds the cluster's shard.
func (c *Coordinator) Owns(cluster string) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.held[c.Shard(cluster)]
}

// Held lists the shards this replica holds.
func (c *Coordinator) Held() []int {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []int
	for s, ok := range c.held {
		if ok {
			out = append(out, s)
		}
	}
	slices.Sort(out)
	return out
}

// NeedLeaderElection: every replica takes part.
func (c *Coordinator) NeedLeaderElection() bool { return false }

// Start keeps the membership Lease renewed and the electors of the shards
// assigned here running until ctx ends, then releases every Lease held.
func (c *Coordinator) Start(ctx context.Context) error {
	logger := log.FromContext(ctx).WithName("sharding").WithValues("replica", c.opts.Identity)
	ctx = log.IntoContext(ctx, logger)
	var member *leaderelection.LeaderElector
	var wg sync.WaitGroup
	defer wg.Wait()
	memberLost := make(chan struct{}, 1)
	runMember := func() error {
		le, err := c.elector(c.opts.Name+"-member-"+c.opts.Identity, map[string]string{MemberLabel: c.opts.Name}, nil, leaderelection.LeaderCallbacks{
			OnStartedLeading: func(context.Context) {},
			OnStoppedLeading: func() {
				select {
				case memberLost <- struct{}{}:
				default:
				}
			},
		})
		if err != nil {
			return err
		}
		member = le
		wg.Go(func() { le.Run(ctx) })
		return nil
	}
	if err := runMember(); err != nil {
		return err
	}
	for shard := range c.opts.Shards {
		wg.Go(func() { c.runShard(ctx, shard) })
	}
	tick := time.NewTicker(c.opts.RetryPeriod)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil // the electors release the Leases they hold
		case <-memberLost:
			// Renewing failed: the others count this replica out and take its
			// shards, whose electors have stopped by the same deadline. Join again.
			if ctx.Err() == nil {
				if err := runMember(); err != nil {
					return err
				}
			}
		case <-tick.C:
			members, err := c.members(ctx, member.IsLeader())
			if err != nil {
				logger.Error(err, "reading the members' Leases")
				continue
			}
			c.assign(ctx, members)
		}
	}
}

// members lists the live replicas: those whose membership Lease is held and
// was renewed within a lease duration, as seen here.
func (c *Coordinator) members(ctx context.Context, self bool) ([]string, error) {
	leases, err := c.client.CoordinationV1().Leases(c.opts.Namespace).List(ctx, metav1.ListOptions{LabelSelector: MemberLabel + "=" + c.opts.Name})
	if err != nil {
		return nil, err
	}
	now := time.Now()
	var out []string
	seen := map[string]observation{}
	for _, l := range leases.Items {
		holder := ptrValue(l.Spec.HolderIdentity)
		if holder == "" || l.Spec.RenewTime == nil {
			continue // released
		}
		o, ok := c.seen[holder]
		if !ok || !o.renewed.Equal(l.Spec.RenewTime) {
			o = observation{renewed: *l.Spec.RenewTime, at: now}
		}
		seen[holder] = o
		if holder == c.opts.Identity {
			continue // by our own elector instead
		}
		if now.Sub(o.at) < c.opts.LeaseDuration {
			out = append(out, holder)
		}
	}
	if self {
		out = append(out, c.opts.Identity)
	}
	c.seen = seen
	return out, nil
}

func ptrValue(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

// Assignment is the replica among members that should hold shard: the one
// of the highest rendezvous hash, so a member joining or leaving moves only
// the shards it gains or loses. "" when there are none.
func Assignment(members []string, shard int) string {
	var best string
	var bestScore uint64
	for _, m := range members {
		// SHA-256, not FNV: names that differ in a character or two, as
		// replicas' do, must still score independently.
		sum := sha256.Sum256([]byte(m + "/" + strconv.Itoa(shard)))
		if score := binary.BigEndian.Uint64(sum[:8]); best == "" || score > bestScore || (score == bestScore && m < best) {
			best, bestScore = m, score
		}
	}
	return best
}

// assign lets this replica take the shards assigned to it, and hands over
// those it holds that are assigned elsewhere.
func (c *Coordinator) assign(ctx context.Context, members []string) {
	logger := log.FromContext(ctx)
	for shard := range c.opts.Shards {
		mine := Assignment(members, shard) == c.opts.Identity
		c.mu.Lock()
		c.assigned[shard] = mine
		e := c.running[shard]
		handOver := !mine && c.held[shard]
		c.mu.Unlock()
		if handOver {
			// Stop syncing before the Lease is released, so that the next
			// holder rarely finds a write of ours still on its way.
			logger.Info("handing over a shard", "shard", shard)
			c.setHeld(ctx, shard, false)
			e.cancel()
		}
	}
}

// shardElector is one run of a shard's elector.
type shardElector struct{ cancel context.CancelFunc }

// runShard runs electors of shard one after the other until ctx ends. Every
// replica runs one for every shard, so that each has watched the shard's
// Lease for a lease duration by the time the shard is assigned to it (an
// elector trusts only its own observation of the holder's renewals, not
// their timestamps): the replica a dead one's shards move to takes them as
// soon as their Leases expire. An elector may take or renew the Lease only
// while the shard is assigned here (gatedLock). A run ends when the shard is
// handed over, releasing the Lease, or when renewing fails.
func (c *Coordinator) runShard(ctx context.Context, shard int) {
	logger := log.FromContext(ctx)
	for ctx.Err() == nil {
		runCtx, cancel := context.WithCancel(ctx)
		e := &shardElector{cancel: cancel}
		// Only the shard's current run says whether it is held: one handed
		// over (marked not held then) may still be releasing.
		current := func() bool {
			c.mu.Lock()
			defer c.mu.Unlock()
			return c.running[shard] == e
		}
		le, err := c.elector(fmt.Sprintf("%s-shard-%d", c.opts.Name, shard), nil, func() bool {
			c.mu.Lock()
			defer c.mu.Unlock()
			return c.assigned[shard]
		}, leaderelection.LeaderCallbacks{
			OnStartedLeading: func(context.Context) {
				if current() {
					c.setHeld(ctx, shard, true)
				}
			},
			OnStoppedLeading: func() {
				if current() {
					c.setHeld(ctx, shard, false)
				}
			},
		})
		if err != nil {
			cancel()
			logger.Error(err, "starting the elector of a shard", "shard", shard)
			return
		}
		c.mu.Lock()
		c.running[shard] = e
		c.mu.Unlock()
		le.Run(runCtx)
		cancel()
	}
}

func (c *Coordinator) setHeld(ctx context.Context, shard int, held bool) {
	c.mu.Lock()
	changed := c.held[shard] != held
	if held {
		c.held[shard] = true
	} else {
		delete(c.held, shard)
	}
	c.mu.Unlock()
	if changed {
		log.FromContext(ctx).Info("shard", "shard", shard, "held", held)
		shardsHeld.WithLabelValues(c.opts.Identity).Set(float64(len(c.Held())))
		c.onChange(ctx, shard)
	}
}

// elector makes an elector of the Lease name; allowed, when set, gates
// taking and renewing it.
func (c *Coordinator) elector(name string, labels map[string]string, allowed func() bool, cb leaderelection.LeaderCallbacks) (*leaderelection.LeaderElector, error) {
	var lock resourcelock.Interface = &resourcelock.LeaseLock{
		LeaseMeta:  metav1.ObjectMeta{Name: name, Namespace: c.opts.Namespace},
		Client:     c.client.CoordinationV1(),
		LockConfig: resourcelock.ResourceLockConfig{Identity: c.opts.Identity},
		Labels:     labels,
	}
	if allowed != nil {
		lock = gatedLock{Interface: lock, allowed: allowed}
	}
	return leaderelection.NewLeaderElector(leaderelection.LeaderElectionConfig{
		Lock:          lock,
		LeaseDuration: c.opts.LeaseDuration,
		RenewDeadline: c.opts.RenewDeadline,
		RetryPeriod:   c.opts.RetryPeriod,
		// A shard handed over is taken at once by its next holder, which
		// fences this replica's writes in storage as it takes it.
		ReleaseOnCancel: true,
		Callbacks:       cb,
		Name:            name,
	})
}

// errNotAssigned refuses to take or renew a shard's Lease.
var errNotAssigned = errors.New("the shard is not assigned to this replica")

// gatedLock is a Lease lock that may be taken or renewed only while allowed
// says so; it is always read, and may always be released.
type gatedLock struct {
	resourcelock.Interface
	allowed func() bool
}

func (l gatedLock) Create(ctx context.Context, r resourcelock.LeaderElectionRecord) error {
	if !l.allowed() {
		return errNotAssigned
	}
	return l.Interface.Create(ctx, r)
}

func (l gatedLock) Update(ctx context.Context, r resourcelock.LeaderElectionRecord) error {
	if r.HolderIdentity != "" && !l.allowed() {
		return errNotAssigned
	}
	return l.Interface.Update(ctx, r)
}
