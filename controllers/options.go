package controllers

import (
	"errors"
	"fmt"
	"os"
	"runtime"
	"strings"
	"time"

	"github.com/spf13/pflag"

	"github.com/panorama-io/panorama/controllers/sharding"
	"github.com/panorama-io/panorama/controllers/synchronizer"
	"github.com/panorama-io/panorama/storage"
)

// Options configure SetupWithManager.
type Options struct {
	Sync           synchronizer.Options
	HealthInterval time.Duration
	// CompactionInterval is how often the leader compacts the change log
	// (to the revision of the previous time); 0 never compacts.
	CompactionInterval time.Duration
	// HistoryRetention is how long the compactor keeps the history of
	// changes; 0 keeps none.
	HistoryRetention time.Duration
	// SecretNamespace is the only namespace whose Secrets Clusters may name.
	SecretNamespace string
	// ClusterAPISecretNamespaces are namespaces whose Cluster API kubeconfig
	// Secrets Clusters may name too (the controller needs get of Secrets
	// there).
	ClusterAPISecretNamespaces []string
	// MaxConcurrentReconciles is how many Clusters are reconciled at once;
	// 0 is DefaultMaxConcurrentReconciles.
	MaxConcurrentReconciles int
	// EventRetention is the retention of synced Events of Clusters that set
	// none (spec.eventRetention); 0 is DefaultEventRetention.
	EventRetention time.Duration
	// Sharding, when Shards is not 0, divides the Clusters among the
	// replicas (controllers/sharding); else the leader syncs them all.
	Sharding sharding.Options
	// Tunnel is the endpoint agents connect to (agents.go).
	Tunnel TunnelOptions
}

// DefaultEventRetention is kube-apiserver's default --event-ttl: a member
// keeps its Events that long, and Panorama as long, whatever the member's.
const DefaultEventRetention = time.Hour

// reconcilesPerCPU is how many reconciles run at once per CPU. A reconcile
// that checks a member waits: on round trips to the member (health,
// version, discovery, CRDs) and to the host (the credential Secret, the
// status write; controller-runtime's client leaves their rate to the
// host's priority and fairness), and, a Cluster's first, on storage
// (taking ownership, dropping Secrets' data), behind the synchronizers'
// writes. It spends well under a hundredth of that time on the CPU
// (BenchmarkFleetReconcile's profiles), and every other reconcile is
// answered from memory (membercheck.go). So the CPUs do not bound how
// many run at once; what each holds meanwhile does, a member's discovery,
// and a fleet of Clusters added at once is checked side by side rather
// than one after another.
const reconcilesPerCPU = 64

// DefaultMaxConcurrentReconciles is reconcilesPerCPU for each CPU the
// process may use (GOMAXPROCS, which follows the container's CPU limit).
func DefaultMaxConcurrentReconciles() int { return reconcilesPerCPU * runtime.GOMAXPROCS(0) }

// AddFlags binds the options to flags, with their defaults.
func (o *Options) AddFlags(fs *pflag.FlagSet) {
	fs.DurationVar(&o.HealthInterval, "cluster-health-interval", 30*time.Second, "How often each member is health-checked and its resources rediscovered.")
	fs.DurationVar(&o.CompactionInterval, "compaction-interval", 5*time.Minute, "How often the change log is compacted to the revision of the previous time (watches and continue tokens stay valid at least this long); 0 disables.")
	fs.DurationVar(&o.HistoryRetention, "history-retention", storage.DefaultHistoryRetention, "How long the history of every object's changes is kept past the compaction of the change log (object history, lists asOf a past time); 0 keeps none.")
	fs.IntVar(&o.MaxConcurrentReconciles, "max-concurrent-reconciles", DefaultMaxConcurrentReconciles(), fmt.Sprintf("How many Clusters are reconciled (health-checked, rediscovered) at once (default: %d per CPU the process may use).", reconcilesPerCPU))
	fs.DurationVar(&o.EventRetention, "event-retention", DefaultEventRetention, "How long after it was last seen a synced Event is kept, for Clusters that set no spec.eventRetention.")
	fs.StringVar(&o.SecretNamespace, "secret-namespace", podNamespace(), "The only namespace whose Secrets Clusters may name as member credentials (default: the pod's namespace).")
	fs.StringSliceVar(&o.ClusterAPISecretNamespaces, "cluster-api-secret-namespaces", nil, "Namespaces whose Cluster API kubeconfig Secrets (<cluster>-kubeconfig, type cluster.x-k8s.io/secret) Clusters may name, as imported Clusters of Cluster API do; the controller must be granted get of Secrets there.")
	fs.BoolVar(&o.Sync.KeepManagedFields, "keep-managed-fields", false, "Store metadata.managedFields (dropped by default).")
	fs.BoolVar(&o.Sync.KeepLastApplied, "keep-last-applied", false, "Store the kubectl last-applied-configuration annotation (dropped by default; always dropped from Secrets whose data is).")
	fs.Int64Var(&o.Sync.PageSize, "sync-page-size", synchronizer.DefaultPageSize, "Page size of initial lists.")
	fs.IntVar(&o.Sync.BatchSize, "sync-batch-size", synchronizer.DefaultBatchSize, "Changes written to storage in one transaction at most.")
	fs.IntVar(&o.Sync.MaxObjectBytes, "sync-max-object-bytes", synchronizer.DefaultMaxObjectBytes, "Objects whose JSON is larger are not stored, and are counted in the Cluster's status as refused (refusedCount, lastRefused). Keep it under the database's limit on a statement: MariaDB's and MySQL's max_allowed_packet.")
	fs.IntVar(&o.Sharding.Shards, "shards", 0, "Divide the Clusters into this many shards, synced by whichever replicas hold their Leases (the most replicas that share the work); 0 has the elected leader sync every Cluster. The same on every replica.")
	fs.StringVar(&o.Sharding.Identity, "replica-identity", replicaIdentity(), "This replica's name among the others when sharding (default: POD_NAME, else the host name); unique, a DNS label.")
	fs.DurationVar(&o.Sharding.LeaseDuration, "shard-lease-duration", 15*time.Second, "How long a replica that stopped renewing keeps its shards before others take them over.")
	fs.DurationVar(&o.Sharding.RenewDeadline, "shard-renew-deadline", 10*time.Second, "How long a replica tries to renew a shard's Lease before it stops syncing the shard.")
	fs.DurationVar(&o.Sharding.RetryPeriod, "shard-retry-period", 2*time.Second, "How often shard Leases are tried and the replicas' membership read.")
	fs.StringVar(&o.Tunnel.BindAddress, "tunnel-bind-address", "0", "Address of the endpoint that agents of Clusters with spec.agent connect to (e.g. :8444); 0 disables it, and such Clusters.")
	fs.StringVar(&o.Tunnel.CertDir, "tunnel-cert-path", "", "Folder of the tunnel endpoint's serving certificate and key (tls.crt, tls.key), reloaded when they change; agents verify it.")
	fs.DurationVar(&o.Sync.FlushInterval, "sync-flush-interval", synchronizer.DefaultFlushInterval, "How long a change may wait to share a write with others.")
}

// Validate reports options that cannot work.
func (o *Options) Validate() error {
	var errs []error
	if o.HealthInterval <= 0 {
		errs = append(errs, errors.New("cluster-health-interval must be positive"))
	}
	if o.MaxConcurrentReconciles < 0 {
		errs = append(errs, errors.New("max-concurrent-reconciles must not be negative"))
	}
	if o.EventRetention < 0 {
		errs = append(errs, errors.New("event-retention must not be negative"))
	}
	if o.CompactionInterval < 0 {
		errs = append(errs, errors.New("compaction-interval must not be negative"))
	}
	if o.HistoryRetention < 0 {
		errs = append(errs, errors.New("history-retention must not be negative"))
	}
	if o.Sharding.Shards < 0 {
		errs = append(errs, errors.New("shards must not be negative"))
	}
	if o.Sharding.Shards > 0 && !(o.Sharding.LeaseDuration > o.Sharding.RenewDeadline && o.Sharding.RenewDeadline > o.Sharding.RetryPeriod*6/5 && o.Sharding.RetryPeriod > 0) {
		errs = append(errs, errors.New("shard-lease-duration must exceed shard-renew-deadline, which must exceed 1.2 times shard-retry-period (client-go's jitter)"))
	}
	if o.SecretNamespace == "" {
		errs = append(errs, errors.New("secret-namespace is required"))
	}
	if o.Sync.PageSize < 0 || o.Sync.BatchSize < 0 || o.Sync.FlushInterval < 0 || o.Sync.MaxObjectBytes < 0 {
		errs = append(errs, errors.New("sync-page-size, sync-batch-size, sync-flush-interval and sync-max-object-bytes must not be negative"))
	}
	return errors.Join(errs...)
}

// replicaIdentity is POD_NAME (the chart sets it from the pod's name),
// else the host name, which is the pod's.
func replicaIdentity() string {
	if name := os.Getenv("POD_NAME"); name != "" {
		return name
	}
	name, _ := os.Hostname()
	return name
}

// inClusterNamespaceFile holds the namespace of a pod's service account.
const inClusterNamespaceFile = "/var/run/secrets/kubernetes.io/serviceaccount/namespace"

// podNamespace is where the controller runs: POD_NAMESPACE, else the
// in-cluster namespace, else panorama-system.
func podNamespace() string {
	if ns := os.Getenv("POD_NAMESPACE"); ns != "" {
		return ns
	}
	if b, err := os.ReadFile(inClusterNamespaceFile); err == nil && strings.TrimSpace(string(b)) != "" {
		return strings.TrimSpace(string(b))
	}
	return "panorama-system"
}
