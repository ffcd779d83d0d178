package controllers

import (
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/types"
)

// memberChecks remembers, per cluster, the last check of its member that
// found it healthy and started what it syncs: its connection, health,
// discovery, the resolution of its selection and its synchronizers. A
// Cluster is reconciled whenever one of its synchronizers changes state,
// which at fleet scale are most of its reconciles (BenchmarkFleetReconcile);
// those only refresh the status from the synchronizers while the last
// check is fresh, and ask neither the member nor the host's API server
// anything.
//
// A check stays fresh for HealthInterval, and only while what it depended
// on is unchanged: the Cluster's spec (its generation), the shared
// selection it names and the owner epoch its synchronizers write with.
// Whatever else a check read (the credential Secret, which no watch tells
// of, the member's discovery) is read again when it is due.
type memberChecks struct {
	mu   sync.Mutex
	last map[string]memberCheck
}

// memberCheck is the outcome of a check that found the member healthy.
type memberCheck struct {
	key checkKey
	at  time.Time
	// version and insecure are what the status shows of the member's
	// version and of its TLS verification.
	version  string
	insecure bool
	// problems are those of the selection (a shared one or the CRDs could
	// not be read), which the Synced condition reports.
	problems []string
}

// checkKey is what a check depended on that the controller is told of.
type checkKey struct {
	// uid tells a Cluster from one deleted and created again under its
	// name, whose generation starts over.
	uid        types.UID
	generation int64
	// sharedVersion is the resourceVersion of the ClusterSyncResources the
	// Cluster names, "" when it names none or that was not found.
	sharedVersion string
	epoch         int64
}

// fresh returns cluster's last check if it was made for key less than
// interval before now.
func (m *memberChecks) fresh(cluster string, key checkKey, interval time.Duration, now time.Time) (memberCheck, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	last, ok := m.last[cluster]
	if !ok || last.key != key || now.Sub(last.at) >= interval {
		return memberCheck{}, false
	}
	return last, true
}

// record remembers check as cluster's last.
func (m *memberChecks) record(cluster string, check memberCheck) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.last == nil {
		m.last = map[string]memberCheck{}
	}
	m.last[cluster] = check
}

// forget has cluster's member checked at its next reconcile.
func (m *memberChecks) forget(cluster string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	delete(m.last, cluster)
}
