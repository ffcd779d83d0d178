package synchronizer

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"maps"
	"math"
	"strconv"
	"strings"
	"sync"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"

	"github.com/panorama-io/panorama/storage"
	"github.com/panorama-io/panorama/storage/storagetest"
)

// TestJSONSizeBounds: the bounds hold the JSON's length, newline aside,
// whatever escaping and numbers it takes.
func TestJSONSizeBounds(t *testing.T) {
	for _, v := range []map[string]any{
		{},
		{"a": "b"},
		{"empty": map[string]any{}, "none": []any{}, "null": nil, "t": true, "f": false},
		{"escaped": "<&>\"\\\n\x01\u2028\xff", "k\x00<": []any{"\x7f", ""}},
		{"ints": []any{int64(0), int64(math.MinInt64), int64(math.MaxInt64)}},
		{"floats": []any{0.0, -math.MaxFloat64, math.SmallestNonzeroFloat64, -1.2345678901234567e-7, 999999999999999900000.0, 0.1}},
		{"nested": map[string]any{"a": []any{map[string]any{"b": []any{"c", int64(1)}}}}},
		{"other": 3, "types": []string{"x"}},
	} {
		u := &unstructured.Unstructured{Object: v}
		data, err := u.MarshalJSON()
		if err != nil {
			t.Fatal(err)
		}
		n := len(data) - 1 // the newline
		if s := sizeOf(v); s.least > n || s.most < n {
			t.Errorf("%q: %d bytes, bounds %+v", data, n, s)
		}
		for _, limit := range []int{n, n + 1, n + 2} {
			if want := n+1 <= limit; fits(u, sizeOf(v), limit) != want {
				t.Errorf("%q fits in %d: %v, want %v", data, limit, !want, want)
			}
		}
	}
}

// pagedMember serves a resource's list in pages of the limit asked, as a
// kube-apiserver does, and records the limits.
type pagedMember struct {
	dynamic.ResourceInterface
	items []*unstructured.Unstructured

	mu     sync.Mutex
	limits []int64
}

func (m *pagedMember) List(_ context.Context, opts metav1.ListOptions) (*unstructured.UnstructuredList, error) {
	m.mu.Lock()
	m.limits = append(m.limits, opts.Limit)
	m.mu.Unlock()
	start, _ := strconv.Atoi(opts.Continue)
	end := len(m.items)
	if opts.Limit > 0 {
		end = min(start+int(opts.Limit), end)
	}
	list := &unstructured.UnstructuredList{Object: map[string]any{"apiVersion": "v1", "kind": "ConfigMapList"}}
	list.SetResourceVersion("100")
	for _, u := range m.items[start:end] {
		list.Items = append(list.Items, *u.DeepCopy())
	}
	if end < len(m.items) {
		list.SetContinue(strconv.Itoa(end))
	}
	return list, nil
}

// configMap is a ConfigMap whose data is n bytes: random, so that no
// compression makes it smaller, or repeated.
func configMap(name string, n int, random bool) *unstructured.Unstructured {
	u := object("ConfigMap", name)
	data := strings.Repeat("x", n)
	if random {
		raw := make([]byte, n*3/4)
		_, _ = rand.Read(raw)
		data = base64.StdEncoding.EncodeToString(raw)
	}
	u.Object["data"] = map[string]any{"k": data}
	return u
}

// listInto runs a synchronizer's list of m into store, as its reflector
// does when it starts, and returns the synchronizer.
func listInto(t *testing.T, store storage.Interface, m *pagedMember, opts Options) *Synchronizer {
	t.Helper()
	s := New("east", storage.Unfenced, configMaps, nil, store, opts, func() {})
	if _, err := s.list(context.Background(), m, metav1.NamespaceAll); err != nil {
		t.Fatalf("list: %v", err)
	}
	return s
}

// storedNames are the names storage holds of the synchronizer's resource.
func storedNames(t *testing.T, store storage.Interface) []string {
	t.Helper()
	versions, err := store.MemberVersions(context.Background(), "east", configMaps.GVR)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for k := range maps.Keys(versions) {
		names = append(names, k.Name)
	}
	return names
}

// TestOversizeObjectRefusedAlone: an object larger than MaxObjectBytes
// (18 MiB, beyond MariaDB's default max_allowed_packet, which failed its
// whole batch there, every time) is refused alone, counted and named in
// the status, on every database; the objects around it are stored and
// the list ends.
func TestOversizeObjectRefusedAlone(t *testing.T) {
	storagetest.ForEach(t, func(t *testing.T, b storagetest.Backend) {
		store := b.Open(t)
		m := &pagedMember{items: []*unstructured.Unstructured{
			configMap("a", 100, false), configMap("big", 18<<20, true), configMap("c", 100, false),
		}}
		s := listInto(t, store, m, Options{})
		if got := strings.Join(storedNames(t, store), " "); got != "a c" && got != "c a" {
			t.Errorf("stored %q, want a and c", got)
		}
		if st := s.Status(); st.Refused != 1 || !strings.Contains(st.LastRefused, `"big"`) || !strings.Contains(st.LastRefused, "--sync-max-object-bytes") {
			t.Errorf("status %+v, want big refused for its size", st)
		}
	})
}

// TestDatabaseRefusesOversizeObject: an object the database refuses for
// its size, under a MaxObjectBytes raised above what MariaDB's
// max_allowed_packet takes, is refused alone too: the database's error
// refuses the write's objects rather than failing it every time.
// PostgreSQL and SQLite take it.
func TestDatabaseRefusesOversizeObject(t *testing.T) {
	storagetest.ForEach(t, func(t *testing.T, b storagetest.Backend) {
		store := b.Open(t)
		m := &pagedMember{items: []*unstructured.Unstructured{
			configMap("a", 100, false), configMap("big", 24<<20, true), configMap("c", 100, false),
		}}
		s := listInto(t, store, m, Options{MaxObjectBytes: 64 << 20})
		want, refused := 3, 0
		if b.Name == "mysql" {
			want, refused = 2, 1
		}
		if names := storedNames(t, store); len(names) != want {
			t.Errorf("stored %q, want %d", names, want)
		}
		if st := s.Status(); st.Refused != int64(refused) || refused > 0 && !strings.Contains(st.LastRefused, "too large") {
			t.Errorf("status %+v, want %d refused as too large", st, refused)
		}
	})
}

// refusingStore refuses whole, as a database refuses a statement, every
// batch that holds an object named poison.
type refusingStore struct {
	storage.Interface
	applies int
}

// ForCluster writes through s's Apply.
func (s *refusingStore) ForCluster(cluster string, epoch int64) storage.ClusterWriter {
	return storagetest.HookApply(s.Interface.ForCluster(cluster, epoch), s.apply)
}

func (s *refusingStore) apply(ctx context.Context, gvr schema.GroupVersionResource, changes []storage.Change, next storagetest.ApplyFunc) (int64, error) {
	s.applies++
	for _, c := range changes {
		if strings.HasPrefix(c.Name, "poison") {
			return 0, storage.Invalid("object", "the database refused a value as too large")
		}
	}
	return next(ctx, gvr, changes)
}

// TestBatchRefusedWholeIsWrittenInHalves: a batch storage refuses whole is
// written again in halves down to the objects refused, and the batch as
// queued keeps the member's objects, which a write of a half would have
// rewritten with storage's revision.
func TestBatchRefusedWholeIsWrittenInHalves(t *testing.T) {
	store := &refusingStore{Interface: storagetest.Backends()[0].Open(t)}
	s := New("east", storage.Unfenced, configMaps, nil, store, Options{}, func() {})
	var batch []pendingChange
	for i := range 16 {
		name := fmt.Sprintf("cm-%02d", i)
		if i == 5 || i == 11 {
			name = fmt.Sprintf("poison-%02d", i)
		}
		batch = append(batch, upsert(object("ConfigMap", name)))
	}
	if err := s.apply(context.Background(), batch); err != nil {
		t.Fatal(err)
	}
	if names := storedNames(t, store); len(names) != 14 || strings.Contains(strings.Join(names, " "), "poison") {
		t.Errorf("stored %q, want the 14 others", names)
	}
	if st := s.Status(); st.Refused != 2 || !strings.Contains(st.LastRefused, "poison-05") {
		t.Errorf("status %+v, want both poisons refused", st)
	}
	for _, p := range batch {
		if rv := p.change.Object.GetResourceVersion(); rv != "1" {
			t.Fatalf("%s queued at resourceVersion %s, not the member's 1", p.change.Name, rv)
		}
	}
	// 1 whole, 2 halves, 4 quarters, 4 eighths of the poisons' quarters, and
	// the poisons alone: no object written alone but those.
	if store.applies > 1+2+4+4+4 {
		t.Errorf("%d writes", store.applies)
	}
}

// TestListPagesBoundedInBytes: a list of large objects asks for pages that
// hold about pageBytes of them, not PageSize objects of any size, and
// writes them in batches of batchBytes at most.
func TestListPagesBoundedInBytes(t *testing.T) {
	const objectBytes = 3 << 20
	m := &pagedMember{}
	for i := range 24 {
		m.items = append(m.items, configMap(fmt.Sprintf("cm-%02d", i), objectBytes, false))
	}
	store := &batchSizes{Interface: storagetest.Backends()[0].Open(t)}
	listInto(t, store, m, Options{})
	if names := storedNames(t, store); len(names) != len(m.items) {
		t.Fatalf("stored %d of %d", len(names), len(m.items))
	}
	for _, limit := range m.limits {
		if limit*objectBytes > pageBytes {
			t.Fatalf("pages of %v objects of %d bytes, more than %d", m.limits, objectBytes, pageBytes)
		}
	}
	if len(m.limits) > 2*len(m.items)*objectBytes/pageBytes+2 {
		t.Errorf("pages of %v objects: smaller than pageBytes needs", m.limits)
	}
	for _, n := range store.sizes {
		if n*objectBytes > batchBytes {
			t.Fatalf("writes of %v objects of %d bytes, more than %d", store.sizes, objectBytes, batchBytes)
		}
	}
}

// batchSizes records the size of each write.
type batchSizes struct {
	storage.Interface
	mu    sync.Mutex
	sizes []int
}

// ForCluster writes through s's Apply.
func (s *batchSizes) ForCluster(cluster string, epoch int64) storage.ClusterWriter {
	return storagetest.HookApply(s.Interface.ForCluster(cluster, epoch), s.apply)
}

func (s *batchSizes) apply(ctx context.Context, gvr schema.GroupVersionResource, changes []storage.Change, next storagetest.ApplyFunc) (int64, error) {
	s.mu.Lock()
	s.sizes = append(s.sizes, len(changes))
	s.mu.Unlock()
	return next(ctx, gvr, changes)
}

// TestPendingBoundedInBytes: the watch is held once pendingBytes of
// objects wait for storage, however few they are.
func TestPendingBoundedInBytes(t *testing.T) {
	s := New("east", storage.Unfenced, configMaps, nil, nil, Options{}, func() {})
	ctx, cancel := context.WithCancel(context.Background())
	cancel() // an enqueue that waits returns at once
	s.ctx = ctx
	const objectBytes = 17 << 20
	sink := (*reflectorSink)(s)
	for i := range 4 { // 0, 17, 34 and 51 MiB wait before each
		if err := sink.Add(configMap(fmt.Sprintf("cm-%d", i), objectBytes, false)); err != nil {
			t.Fatalf("add %d: %v", i, err)
		}
	}
	if err := sink.Add(configMap("held", objectBytes, false)); !errors.Is(err, context.Canceled) {
		t.Fatalf("add with %d bytes pending: %v, want it held", s.pendingBytes, err)
	}
}
