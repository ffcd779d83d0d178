package controllers_test

import (
	"strings"
	"testing"
	"time"

	"github.com/spf13/pflag"

	"github.com/panorama-io/panorama/controllers"
)

// TestMaxConcurrentReconcilesFlag: Clusters reconcile concurrently by
// default, and a negative concurrency is refused.
func TestMaxConcurrentReconcilesFlag(t *testing.T) {
	var o controllers.Options
	fs := pflag.NewFlagSet("controller-manager", pflag.ContinueOnError)
	o.AddFlags(fs)
	if err := fs.Parse([]string{"--secret-namespace=panorama-system"}); err != nil {
		t.Fatal(err)
	}
	if o.MaxConcurrentReconciles != controllers.DefaultMaxConcurrentReconciles() || o.MaxConcurrentReconciles < 16 {
		t.Fatalf("default concurrency %d", o.MaxConcurrentReconciles)
	}
	if err := o.Validate(); err != nil {
		t.Fatal(err)
	}
	if err := fs.Parse([]string{"--max-concurrent-reconciles=-1"}); err != nil {
		t.Fatal(err)
	}
	if err := o.Validate(); err == nil || !strings.Contains(err.Error(), "max-concurrent-reconciles") {
		t.Fatalf("negative concurrency: %v", err)
	}
}

// TestEventRetentionFlag: Events are kept as long as kube-apiserver's
// default --event-ttl unless told otherwise, and never a negative time.
func TestEventRetentionFlag(t *testing.T) {
	var o controllers.Options
	fs := pflag.NewFlagSet("controller-manager", pflag.ContinueOnError)
	o.AddFlags(fs)
	if err := fs.Parse([]string{"--secret-namespace=panorama-system"}); err != nil {
		t.Fatal(err)
	}
	if o.EventRetention != time.Hour || o.Validate() != nil {
		t.Fatalf("default retention %v (%v)", o.EventRetention, o.Validate())
	}
	if err := fs.Parse([]string{"--event-retention=-1m"}); err != nil {
		t.Fatal(err)
	}
	if err := o.Validate(); err == nil || !strings.Contains(err.Error(), "event-retention") {
		t.Fatalf("negative retention: %v", err)
	}
}

func TestHistoryRetentionFlag(t *testing.T) {
	var o controllers.Options
	fs := pflag.NewFlagSet("controller-manager", pflag.ContinueOnError)
	o.AddFlags(fs)
	if err := fs.Parse([]string{"--secret-namespace=panorama-system"}); err != nil {
		t.Fatal(err)
	}
	if o.HistoryRetention != 7*24*time.Hour || o.Validate() != nil {
		t.Fatalf("default retention %v (%v)", o.HistoryRetention, o.Validate())
	}
	if err := fs.Parse([]string{"--history-retention=0"}); err != nil || o.HistoryRetention != 0 || o.Validate() != nil {
		t.Fatalf("no history: %v %v (%v)", err, o.HistoryRetention, o.Validate())
	}
	if err := fs.Parse([]string{"--history-retention=-1h"}); err != nil {
		t.Fatal(err)
	}
	if err := o.Validate(); err == nil || !strings.Contains(err.Error(), "history-retention") {
		t.Fatalf("negative retention: %v", err)
	}
}

// TestShardFlags: sharding is off by default; on, its timings must let a
// replica stop before its Leases expire, as client-go's electors require.
func TestShardFlags(t *testing.T) {
	var o controllers.Options
	fs := pflag.NewFlagSet("controller-manager", pflag.ContinueOnError)
	o.AddFlags(fs)
	if err := fs.Parse([]string{"--secret-namespace=panorama-system"}); err != nil {
		t.Fatal(err)
	}
	if o.Sharding.Shards != 0 || o.Validate() != nil {
		t.Fatalf("default shards %d (%v)", o.Sharding.Shards, o.Validate())
	}
	if err := fs.Parse([]string{"--shards=16", "--replica-identity=cm-0"}); err != nil {
		t.Fatal(err)
	}
	if err := o.Validate(); err != nil || o.Sharding.Identity != "cm-0" {
		t.Fatalf("16 shards at the default timings: %v, identity %q", err, o.Sharding.Identity)
	}
	for _, args := range [][]string{
		{"--shard-renew-deadline=15s"},                            // not below the lease duration
		{"--shard-renew-deadline=10s", "--shard-retry-period=9s"}, // not above 1.2 retry periods
		{"--shard-retry-period=0s"},
		{"--shards=-1", "--shard-retry-period=2s"},
	} {
		var bad controllers.Options
		fs := pflag.NewFlagSet("controller-manager", pflag.ContinueOnError)
		bad.AddFlags(fs)
		if err := fs.Parse(append([]string{"--secret-namespace=panorama-system", "--shards=4"}, args...)); err != nil {
			t.Fatal(err)
		}
		if err := bad.Validate(); err == nil || !strings.Contains(err.Error(), "shard") {
			t.Fatalf("%v: %v", args, err)
		}
	}
}
