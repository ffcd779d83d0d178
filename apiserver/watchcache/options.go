package watchcache

import (
	"fmt"
	"time"

	"github.com/spf13/pflag"
	apiresource "k8s.io/apimachinery/pkg/api/resource"

	"github.com/panorama-io/panorama/internal/containermemory"
)

// Defaults.
const (
	DefaultPollInterval = time.Second
	// DefaultProbeInterval keeps a write's watch event close behind it on
	// databases that cannot notify (BenchmarkWatchLatency), at one
	// primary-key read of the revision per interval.
	DefaultProbeInterval = 25 * time.Millisecond
	DefaultRingSize      = 10000
	// DefaultWatchBuffer is small, as kube-apiserver's watch channels are:
	// an idle watch costs little, and a client that falls this far behind
	// reads the rest from the ring (Watcher).
	DefaultWatchBuffer       = 100
	DefaultMaxWatches        = 10000
	DefaultMaxWatchesPerUser = 1000
	// DefaultFreshnessTimeout is kube-apiserver's watch cache blockTimeout:
	// how long a watch at a resourceVersion the cache has not reached waits
	// for it before the 504 "Too large resource version".
	DefaultFreshnessTimeout = 3 * time.Second
)

// Options tune a Cache. Zero values take the defaults, except the watch
// limits, where 0 means unlimited.
type Options struct {
	PollInterval time.Duration
	// ProbeInterval is how often the revision is read, on MySQL/MariaDB,
	// to find writes by other processes before the poll.
	ProbeInterval time.Duration
	// RingSize is how many recent changes each resource keeps for watches
	// that resume.
	RingSize int
	// WatchBuffer is how many events a watch queues for a slow client;
	// past them, the watch reads what it missed from the ring, and is
	// closed only when the ring no longer holds it.
	WatchBuffer int
	// MaxWatches and MaxWatchesPerUser bound the open watches; beyond them
	// a watch is refused with a TooManyWatchesError.
	MaxWatches        int
	MaxWatchesPerUser int
	// FreshnessTimeout is how long a watch waits for the cache to reach its
	// resourceVersion.
	FreshnessTimeout time.Duration
	// MemoryBudget bounds, in bytes, what the cached resources hold
	// (budget.go); 0 means unlimited.
	MemoryBudget int64
}

// NewOptions returns the defaults.
func NewOptions() Options {
	return Options{
		PollInterval: DefaultPollInterval, ProbeInterval: DefaultProbeInterval, RingSize: DefaultRingSize,
		WatchBuffer: DefaultWatchBuffer, MaxWatches: DefaultMaxWatches,
		MaxWatchesPerUser: DefaultMaxWatchesPerUser, FreshnessTimeout: DefaultFreshnessTimeout,
		MemoryBudget: DefaultMemoryBudget(containermemory.CgroupRoot),
	}
}

// AddFlags binds the watch cache's flags.
func (o *Options) AddFlags(fs *pflag.FlagSet) {
	fs.DurationVar(&o.PollInterval, "watch-cache-poll-interval", o.PollInterval,
		"How often the change log is read for writes by other processes sharing the database: the safety net behind PostgreSQL notifications and the revision probe, which find them sooner.")
	fs.DurationVar(&o.ProbeInterval, "watch-cache-probe-interval", o.ProbeInterval,
		"On MySQL/MariaDB, how often the revision is read to find writes by other processes (PostgreSQL notifies them instead).")
	fs.IntVar(&o.RingSize, "watch-cache-size", o.RingSize, "Recent changes kept per resource for watches that resume.")
	fs.IntVar(&o.WatchBuffer, "watch-buffer-size", o.WatchBuffer,
		"Events queued per watch for a slow client; past them, a watch reads what its client has yet to take from the watch cache's ring of recent changes, and is closed, for its client to resume from its last resourceVersion, only when the ring no longer holds them.")
	fs.IntVar(&o.MaxWatches, "max-watches", o.MaxWatches,
		"Most watches open at once; beyond, a watch is refused with 429 Too Many Requests. 0 means unlimited.")
	fs.IntVar(&o.MaxWatchesPerUser, "max-watches-per-user", o.MaxWatchesPerUser,
		"Most watches one user has open at once; beyond, a watch is refused with 429 Too Many Requests. 0 means unlimited.")
	fs.Var(quantityBytes{&o.MemoryBudget}, "watch-cache-memory-budget",
		"Memory the watch cache's resources may hold (a quantity: 4Gi, 500M). Past it, the least recently read resources without watches are evicted, "+
			"and what the cache does not hold is read from the database. The API server's Go soft memory limit follows it (1.3 times the budget and 300Mi, "+
			"at most nine tenths of the container's memory limit; GOMEMLIMIT overrides). The default, under a container memory limit (cgroup memory.max), "+
			"is the budget whose soft limit is nine tenths of it, at least a quarter of it (a quarter in panorama serve, beside the controller), "+
			"and unlimited without one. 0 means unlimited.")
}

// quantityBytes binds a flag given as a resource.Quantity to a count of
// bytes.
type quantityBytes struct{ n *int64 }

func (q quantityBytes) String() string {
	return apiresource.NewQuantity(*q.n, apiresource.BinarySI).String()
}
func (q quantityBytes) Type() string { return "quantity" }

func (q quantityBytes) Set(s string) error {
	v, err := apiresource.ParseQuantity(s)
	if err != nil {
		return err
	}
	*q.n = v.Value()
	return nil
}

// Validate reports every flag in error.
func (o *Options) Validate() []error {
	var errs []error
	if o.PollInterval <= 0 {
		errs = append(errs, fmt.Errorf("--watch-cache-poll-interval must be positive, not %s", o.PollInterval))
	}
	if o.ProbeInterval <= 0 {
		errs = append(errs, fmt.Errorf("--watch-cache-probe-interval must be positive, not %s", o.ProbeInterval))
	}
	if o.MemoryBudget < 0 {
		errs = append(errs, fmt.Errorf("--watch-cache-memory-budget must not be negative, not %d bytes", o.MemoryBudget))
	}
	for _, f := range []struct {
		flag     string
		n, least int
	}{
		{"--watch-cache-size", o.RingSize, 1}, {"--watch-buffer-size", o.WatchBuffer, 1},
		{"--max-watches", o.MaxWatches, 0}, {"--max-watches-per-user", o.MaxWatchesPerUser, 0},
	} {
		if f.n < f.least {
			errs = append(errs, fmt.Errorf("%s must be at least %d, not %d", f.flag, f.least, f.n))
		}
	}
	return errs
}
