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
	if o.MaxConcurrentReconciles != controllers.DefaultMaxConcurrentReconciles || o.MaxConcurrentReconciles < 2 {
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
