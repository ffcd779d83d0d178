package synchronizer

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/panorama-io/panorama/storage"
	"github.com/panorama-io/panorama/storage/storagetest"
	"github.com/panorama-io/panorama/test/testenv"
)

var (
	coreEvents = Resource{Resource: storage.Resource{GVR: schema.GroupVersionResource{Version: "v1", Resource: "events"}, Kind: "Event", Namespaced: true}}
	eventsV1   = Resource{Resource: storage.Resource{GVR: schema.GroupVersionResource{Group: "events.k8s.io", Version: "v1", Resource: "events"}, Kind: "Event", Namespaced: true}}
)

// event is an Event created at created with the given time fields (a
// dotted path to an RFC3339 time).
func event(apiVersion, name, memberRV string, created time.Time, times map[string]any) *unstructured.Unstructured {
	u := &unstructured.Unstructured{Object: map[string]any{"apiVersion": apiVersion, "kind": "Event",
		"metadata": map[string]any{"name": name, "namespace": "ns", "resourceVersion": memberRV, "creationTimestamp": created.Format(time.RFC3339)}}}
	for path, v := range times {
		if err := unstructured.SetNestedField(u.Object, v, strings.Split(path, ".")...); err != nil {
			panic(err)
		}
	}
	return u
}

func TestIsEvents(t *testing.T) {
	for gvr, want := range map[schema.GroupVersionResource]bool{
		coreEvents.GVR: true, eventsV1.GVR: true,
		{Group: "events.k8s.io", Version: "v1beta1", Resource: "events"}: true,
		{Group: "example.com", Version: "v1", Resource: "events"}:        false,
		{Version: "v1", Resource: "pods"}:                                false,
	} {
		if IsEvents(gvr) != want {
			t.Errorf("IsEvents(%s) = %v", gvr, !want)
		}
	}
}

// TestExpiredOnArrival: a watch's Event older than the retention is not
// stored, an update that leaves one that old deletes it, and without a
// retention (or for other resources) nothing is judged by age.
func TestExpiredOnArrival(t *testing.T) {
	now := time.Now()
	old := event("v1", "old", "1", now.Add(-3*time.Hour), map[string]any{"lastTimestamp": now.Add(-2 * time.Hour).Format(time.RFC3339)})
	fresh := event("v1", "fresh", "2", now.Add(-3*time.Hour), map[string]any{"lastTimestamp": now.Add(-time.Minute).Format(time.RFC3339)})
	kept := coreEvents
	kept.EventRetention = time.Hour
	for _, c := range []struct {
		res  Resource
		want string // the pending changes after Add(old), Add(fresh), Update(old)
	}{
		{kept, "fresh delete:old"},
		{coreEvents, "old fresh old"},
	} {
		s := New("east", storage.Unfenced, c.res, nil, nil, Options{}, func() {})
		s.ctx = context.Background()
		sink := (*reflectorSink)(s)
		for _, err := range []error{sink.Add(old.DeepCopy()), sink.Add(fresh.DeepCopy()), sink.Update(old.DeepCopy())} {
			if err != nil {
				t.Fatal(err)
			}
		}
		var got []string
		for _, p := range s.pending {
			if p.change.Object == nil {
				got = append(got, "delete:"+p.change.Name)
			} else {
				got = append(got, p.change.Name)
			}
		}
		if strings.Join(got, " ") != c.want {
			t.Errorf("retention %s: pending %v, want %s", c.res.EventRetention, got, c.want)
		}
	}
}

// TestPrune: stored Events that aged past the retention are deleted
// through storage's delete path (so the log, and watchers, see them go),
// on every database; those still within it stay, whatever their creation,
// as do other clusters'; the status counts what is left.
func TestPrune(t *testing.T) {
	storagetest.ForEach(t, func(t *testing.T, b storagetest.Backend) {
		store := b.Open(t)
		ctx := context.Background()
		now := time.Now().Truncate(time.Second)
		ago := func(d time.Duration) string { return now.Add(-d).Format(time.RFC3339) }
		res := eventsV1
		res.EventRetention = 10 * time.Minute
		s := New("east", storage.Unfenced, res, nil, store, Options{PageSize: 2}, func() {})
		write := func(cluster string, us ...*unstructured.Unstructured) {
			t.Helper()
			var changes []storage.Change
			for _, u := range us {
				changes = append(changes, storage.Upsert(u))
			}
			if _, err := store.ForCluster(cluster, storage.Unfenced).Apply(ctx, res.GVR, changes); err != nil {
				t.Fatal(err)
			}
		}
		write("east",
			event("events.k8s.io/v1", "expired-1", "1", now.Add(-time.Hour), map[string]any{"eventTime": ago(time.Hour)}),
			event("events.k8s.io/v1", "expired-2", "2", now.Add(-time.Hour), map[string]any{"deprecatedLastTimestamp": ago(11 * time.Minute)}),
			event("events.k8s.io/v1", "expired-3", "3", now.Add(-time.Hour), map[string]any{"eventTime": ago(50 * time.Minute), "series": map[string]any{"lastObservedTime": ago(30 * time.Minute), "count": int64(4)}}),
			// Created long ago and recurring since: kept.
			event("events.k8s.io/v1", "recurring", "4", now.Add(-time.Hour), map[string]any{"eventTime": ago(time.Hour), "series": map[string]any{"lastObservedTime": ago(time.Minute), "count": int64(40)}}),
			event("events.k8s.io/v1", "new", "5", now, map[string]any{"eventTime": ago(0)}),
		)
		write("west", event("events.k8s.io/v1", "expired-1", "1", now.Add(-time.Hour), map[string]any{"eventTime": ago(time.Hour)}))
		rev, _, err := store.Revision(ctx)
		if err != nil {
			t.Fatal(err)
		}

		if err := s.prune(ctx, now); err != nil {
			t.Fatal(err)
		}
		left, err := store.List(ctx, &storage.ListQuery{GVR: res.GVR})
		if err != nil {
			t.Fatal(err)
		}
		var names []string
		for _, o := range left.Objects {
			names = append(names, o.Cluster+"/"+o.Name)
		}
		if strings.Join(names, " ") != "east/new east/recurring west/expired-1" {
			t.Fatalf("after the prune storage holds %v", names)
		}
		log, _, err := store.Changes(ctx, rev, 100)
		if err != nil {
			t.Fatal(err)
		}
		var deleted []string
		for _, e := range log {
			if e.Type != watch.Deleted || e.Key.Cluster != "east" {
				t.Fatalf("prune logged %s of %v", e.Type, e.Key)
			}
			deleted = append(deleted, e.Key.Name)
		}
		slices.Sort(deleted)
		if strings.Join(deleted, " ") != "expired-1 expired-2 expired-3" {
			t.Fatalf("deletes logged: %v", deleted)
		}
		if st := s.Status(); st.Count != 2 {
			t.Fatalf("status counts %d events, want the 2 left in east", st.Count)
		}
		// Later, the recurring one has stopped recurring.
		if err := s.prune(ctx, now.Add(9*time.Minute+30*time.Second)); err != nil {
			t.Fatal(err)
		}
		if st := s.Status(); st.Count != 1 {
			t.Fatalf("status counts %d events, want 1", st.Count)
		}
	})
}

// turnsStore is a real store that holds every Apply at a gate while
// closed, and logs, in order, the resource of each Apply that returned.
type turnsStore struct {
	storage.Interface
	mu   sync.Mutex
	gate chan struct{} // nil: open
	held map[string]int
	done []string
}

// close holds the Applies to come, and returns how many have returned.
func (s *turnsStore) close() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.gate = make(chan struct{})
	return len(s.done)
}

func (s *turnsStore) open() {
	s.mu.Lock()
	defer s.mu.Unlock()
	close(s.gate)
	s.gate = nil
}

func (s *turnsStore) heldOf(resource string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.held[resource]
}

// ForCluster writes through s's Apply.
func (s *turnsStore) ForCluster(cluster string, epoch int64) storage.ClusterWriter {
	return storagetest.HookApply(s.Interface.ForCluster(cluster, epoch), s.apply)
}

func (s *turnsStore) apply(ctx context.Context, gvr schema.GroupVersionResource, changes []storage.Change, next storagetest.ApplyFunc) (int64, error) {
	s.mu.Lock()
	gate := s.gate
	if gate != nil {
		s.held[gvr.Resource]++
	}
	s.mu.Unlock()
	if gate != nil {
		select {
		case <-gate:
		case <-ctx.Done():
			return 0, ctx.Err()
		}
	}
	rev, err := next(ctx, gvr, changes)
	s.mu.Lock()
	s.done = append(s.done, gvr.Resource)
	s.mu.Unlock()
	return rev, err
}

// TestEventFloodTakesTurns: a member flooding Events does not hold back
// another resource's changes. With storage held, the Events synchronizer
// queues a batch and then as many changes as it may (its watch held
// there), while a config map created meanwhile waits in its own
// synchronizer's queue; once storage goes on, the config map is written
// within the next Events batches, not after the whole backlog, since each
// synchronizer has one batch at a time in storage's queue, which takes
// them in turn.
func TestEventFloodTakesTurns(t *testing.T) {
	m := startMember(t)
	store := &turnsStore{Interface: storagetest.Backends()[0].Open(t), held: map[string]int{}}
	const batch = 20
	p := NewPool(store, Options{BatchSize: batch, MaxPending: 10 * batch}, func(string) {})
	t.Cleanup(p.StopAll)
	if err := p.Ensure(context.Background(), "east", "id", storage.Unfenced, m.dyn, Selection{Resources: []Resource{coreEvents, configMaps}}); err != nil {
		t.Fatal(err)
	}
	synced := func(gvr schema.GroupVersionResource) func() error {
		return func() error {
			if st := p.synchronizer("east", gvr).Status(); st.State != "Synced" {
				return fmt.Errorf("%s: %s", gvr.Resource, st.State)
			}
			return nil
		}
	}
	testenv.Eventually(t, time.Minute, synced(coreEvents.GVR))
	testenv.Eventually(t, time.Minute, synced(configMaps.GVR))

	mark := store.close()
	flood := 12 * batch
	for i := range flood {
		e := &corev1.Event{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: fmt.Sprintf("flood-%d", i)},
			InvolvedObject: corev1.ObjectReference{Kind: "Pod", Namespace: "default", Name: "p"}, Reason: "Flood", Type: "Normal"}
		if _, err := m.kube.CoreV1().Events("default").Create(context.Background(), e, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	events := p.synchronizer("east", coreEvents.GVR)
	testenv.Eventually(t, time.Minute, func() error {
		if n := events.pendingCount(); n < 10*batch || store.heldOf("events") != 1 {
			return fmt.Errorf("events: %d pending, %d writes held", n, store.heldOf("events"))
		}
		return nil
	})
	m.createConfigMap(t, "meanwhile")
	testenv.Eventually(t, time.Minute, func() error {
		if n := store.heldOf("configmaps"); n != 1 {
			return fmt.Errorf("%d config map writes held", n)
		}
		return nil
	})
	store.open()
	testenv.Eventually(t, time.Minute, func() error {
		if n, _ := store.Interface.MemberVersions(context.Background(), "east", coreEvents.GVR); len(n) < flood {
			return fmt.Errorf("%d events stored", len(n))
		}
		return nil
	})
	store.mu.Lock()
	order := slices.Clone(store.done[mark:])
	store.mu.Unlock()
	before := 0
	for _, r := range order {
		if r == "configmaps" {
			break
		}
		before++
	}
	// One Events batch held with the config map's, and one that may have
	// gone ahead of it while it was let through; more is starving it.
	if before > 3 {
		t.Fatalf("%d Events batches written before the config map, of %d (%v)", before, flood/batch, order)
	}
	t.Logf("Events batches written before the config map: %d of %d", before, flood/batch)
}

// TestRetentionChangeKeepsEvents: a Cluster's new retention restarts its
// Events' synchronizer without removing what is stored, as a change of
// Secret data policy would: watchers see no Event go and come back.
func TestRetentionChangeKeepsEvents(t *testing.T) {
	m := startMember(t)
	now := metav1.Now()
	e := &corev1.Event{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "kept"},
		InvolvedObject: corev1.ObjectReference{Kind: "Pod", Namespace: "default", Name: "p"}, Reason: "Kept", Type: "Normal",
		FirstTimestamp: now, LastTimestamp: now}
	if _, err := m.kube.CoreV1().Events("default").Create(context.Background(), e, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	store := storagetest.Backends()[0].Open(t)
	p := NewPool(store, Options{}, func(string) {})
	t.Cleanup(p.StopAll)
	ensure := func(retention time.Duration) *Synchronizer {
		t.Helper()
		res := coreEvents
		res.EventRetention = retention
		if err := p.Ensure(context.Background(), "east", "id", storage.Unfenced, m.dyn, Selection{Resources: []Resource{res}}); err != nil {
			t.Fatal(err)
		}
		s := p.synchronizer("east", coreEvents.GVR)
		// The member's kube-apiserver may post Events of its own.
		testenv.Eventually(t, time.Minute, func() error {
			if st := s.Status(); st.State != "Synced" || st.Count < 1 {
				return fmt.Errorf("state %s, %d events", st.State, st.Count)
			}
			return nil
		})
		return s
	}
	first := ensure(time.Hour)
	rev, _, err := store.Revision(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if second := ensure(2 * time.Hour); second == first {
		t.Fatal("the synchronizer did not restart with the new retention")
	}
	log, _, err := store.Changes(context.Background(), rev, 100)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range log {
		if e.Key.Name == "kept" {
			t.Fatalf("the kept Event changed after the retention changed: %s at %d", e.Type, e.Revision)
		}
	}
	if _, err := store.Get(context.Background(), storage.Key{Cluster: "east", GVR: coreEvents.GVR, Namespace: "default", Name: "kept"}); err != nil {
		t.Fatalf("the kept Event after the retention changed: %v", err)
	}
}
