package sqlstore_test

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/panorama-io/panorama/storage"
	"github.com/panorama-io/panorama/storage/sqlstore"
)

// FuzzListQuery compiles fuzzed queries against a generated SQLite store
// (one per fuzzing process): a query either fails with a typed storage
// error (never a driver's error, never a panic) or its first two pages are
// what ListQuery.Matches selects, at the current revision or at one before
// later changes (which pages read from the log).
func FuzzListQuery(f *testing.F) {
	f.Add("", "", "", "", "", "", "", "", "", 0, int64(0), int64(0), "", int64(0), []byte(nil), uint8(0), false)
	f.Add("east,north", "web", "", "1", "app in (web,db),!tier", "status.phase!=Running", "nginx", "", "", 0, int64(0), int64(0), "created_at desc", int64(7), []byte(nil), uint8(0), true)
	f.Add("", "db,web", "app-3-rs-0,app-4-rs-1", "", "example.com/canary=true", "metadata.namespace=db,images=redis:7", "", "", "", 0, int64(1767300000), int64(1768000000), "name,cluster desc", int64(3), []byte(nil), uint8(0), true)
	f.Add("", "", "", "", "", "ownerKind=ReplicaSet", "", "app-2", "", 1, int64(0), int64(0), "namespace desc", int64(5), []byte(nil), uint8(1), false)
	f.Add("west", "", "", "%", "tier notin (front)", "spec.nodeName=", "sha256:,busybox", "", "some-uid", 0, int64(0), int64(0), "cluster", int64(2), []byte(nil), uint8(2), true)
	f.Add("x\xff", "", "a\x00b", "", "a>1", "status.secret=x", ",x\x00", "", "", 99, int64(0), int64(0), "nope", int64(-1), []byte("garbage"), uint8(0), false)
	f.Add("", "", "", "", "", "", "", "", "", 0, int64(0), int64(0), "", int64(4),
		[]byte(storage.EncodeContinue(1, (&storage.ListQuery{}).Order(), &storage.Object{Key: storage.Key{Cluster: "east", Namespace: "web", Name: "app-1"}})), uint8(0), false)
	f.Add("", "", "", "", "", "", "", "", "", 0, int64(0), int64(0), "", int64(4),
		[]byte(storage.EncodeContinue(1<<40, (&storage.ListQuery{}).Order(), &storage.Object{Key: storage.Key{Name: "a"}})), uint8(0), false)

	s, now, pinned, pin := fuzzFixture(f)
	gvrs := []schema.GroupVersionResource{podsGVR, deploymentsGVR, replicaSetsGVR, {Version: "v1", Resource: "nothing"}}
	f.Fuzz(func(t *testing.T, clusterList, nsList, nameList, fuzzy, labelSel, fieldSel, images, ownerName, ownerUID string, seniority int,
		since, before int64, orderBy string, limit int64, token []byte, gvr uint8, atPin bool) {
		q := storage.ListQuery{
			GVR: gvrs[int(gvr)%len(gvrs)], Clusters: split(clusterList), Namespaces: split(nsList), Names: split(nameList),
			FuzzyName: fuzzy, Images: split(images), OwnerName: ownerName, OwnerUID: ownerUID, OwnerSeniority: seniority, Limit: limit, Continue: string(token),
		}
		if sel, err := labels.Parse(labelSel); err == nil {
			q.Labels, _ = sel.Requirements()
		}
		if sel, err := fields.ParseSelector(fieldSel); err == nil {
			q.Fields = sel.Requirements()
		}
		if since != 0 {
			t := time.Unix(since, 0)
			q.CreatedSince = &t
		}
		if before != 0 {
			t := time.Unix(before, 0)
			q.CreatedBefore = &t
		}
		for _, term := range split(orderBy) {
			field, desc := strings.CutSuffix(term, " desc")
			q.OrderBy = append(q.OrderBy, storage.OrderBy{Field: storage.OrderField(field), Desc: desc})
		}
		w := now
		if atPin {
			q.Revision, w = pin, pinned
		}
		ctx := context.Background()
		res, err := s.List(ctx, &q)
		if err != nil {
			assertTyped(t, q, err)
			return
		}
		if q.Continue != "" {
			return // a position the fuzzer made up: no panic, no raw error is all there is to check
		}
		want := w.expect(&q)
		pageSize := len(want)
		if q.Limit > 0 {
			pageSize = int(min(q.Limit, storage.MaxLimit))
		}
		checkPage(t, q, res, want, pageSize)
		if res.Continue == "" {
			return
		}
		q.Continue = res.Continue
		if res, err = s.List(ctx, &q); err != nil {
			t.Fatalf("second page of %s: %v", describe(q), err)
		}
		checkPage(t, q, res, want[pageSize:], pageSize)
	})
}

// fuzzFixture opens the store FuzzListQuery searches: generated objects,
// pinned, then pods modified, deleted and added after the pin. It returns
// the brute-force worlds now and at the pin.
func fuzzFixture(f *testing.F) (s *sqlstore.Store, now, pinned *world, pin int64) {
	ctx := context.Background()
	s, err := sqlstore.Open(ctx, sqlstore.Options{Driver: "sqlite", DSN: filepath.Join(f.TempDir(), "fuzz.db")})
	if err != nil {
		f.Fatal(err)
	}
	f.Cleanup(func() { _ = s.Close() })
	rng := rand.New(rand.NewPCG(5, 6))
	pinned = generate(f, s, rng, 12)
	if pin, _, err = s.Revision(ctx); err != nil {
		f.Fatal(err)
	}
	// Only pods change, so owners (resolved at the current revision) are
	// the same at the pin.
	keys := slices.SortedFunc(maps.Keys(pinned.objects), func(a, b storage.Key) int {
		return strings.Compare(a.Cluster+"/"+a.GVR.String()+"/"+a.Namespace+"/"+a.Name, b.Cluster+"/"+b.GVR.String()+"/"+b.Namespace+"/"+b.Name)
	})
	byCluster := map[string][]storage.Change{}
	for _, k := range keys {
		switch {
		case k.GVR != podsGVR || rng.IntN(3) > 0:
		case rng.IntN(2) == 0:
			byCluster[k.Cluster] = append(byCluster[k.Cluster], storage.Delete(k.Namespace, k.Name))
		default:
			byCluster[k.Cluster] = append(byCluster[k.Cluster], storage.Upsert(object("Pod", k.Namespace, k.Name, "2", withLabels(rng), withPodFields(rng))))
		}
	}
	for i, c := range clusters {
		byCluster[c] = append(byCluster[c], storage.Upsert(object("Pod", "web", fmt.Sprint("late-", i), "1", withLabels(rng))))
		if _, err := s.ForCluster(c, storage.Unfenced).Apply(ctx, podsGVR, byCluster[c]); err != nil {
			f.Fatal(err)
		}
	}
	return s, reload(f, s), pinned, pin
}

func split(s string) []string {
	if s == "" {
		return nil
	}
	return strings.Split(s, ",")
}

// assertTyped fails unless err is one the API maps to a status: bad input,
// or a revision out of reach.
func assertTyped(t *testing.T, q storage.ListQuery, err error) {
	t.Helper()
	var tooLarge *storage.TooLargeError
	if !storage.IsInvalid(err) && !storage.IsTooOld(err) && !errors.As(err, &tooLarge) {
		t.Fatalf("%s: untyped error %T: %v", describe(q), err, err)
	}
}

func checkPage(t *testing.T, q storage.ListQuery, res *storage.ListResult, want []storage.Key, pageSize int) {
	t.Helper()
	got := make([]storage.Key, len(res.Objects))
	for i, o := range res.Objects {
		got[i] = o.Key
	}
	more := len(want) > pageSize
	if !slices.Equal(got, want[:min(pageSize, len(want))]) || more != (res.Continue != "") {
		t.Fatalf("query %s:\n got %d objects %v (continue %v)\nwant %d of %d objects %v", describe(q), len(got), head(got), res.Continue != "",
			min(pageSize, len(want)), len(want), head(want))
	}
}
