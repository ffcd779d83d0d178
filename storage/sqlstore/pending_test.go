package sqlstore_test

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/fields"

	"github.com/panorama-io/panorama/storage"
	"github.com/panorama-io/panorama/storage/sqlstore"
	"github.com/panorama-io/panorama/storage/storagetest"
)

// podState is what an updated pod of TestUpdatesKeepAttributes holds.
type podState struct {
	labels map[string]string
	images []string
	note   string
}

func (p podState) object(ns, name, memberRV string) *unstructured.Unstructured {
	return object("Pod", ns, name, memberRV, func(u *unstructured.Unstructured) {
		u.SetLabels(maps.Clone(p.labels))
		containers := make([]any, len(p.images))
		for i, image := range p.images {
			containers[i] = map[string]any{"name": fmt.Sprint("c", i), "image": image}
		}
		_ = unstructured.SetNestedSlice(u.Object, containers, "spec", "containers")
		if p.note != "" {
			u.SetAnnotations(map[string]string{"note": p.note})
		}
	})
}

// updateKinds are the ways an update touches a pod's indexed attributes
// (its labels and its images, a multi-valued field), or does not.
var updateKinds = []struct {
	name   string
	update func(p *podState, round int)
}{
	{"one label's value changed", func(p *podState, round int) { p.labels["tier"] = fmt.Sprint("t", round) }},
	{"nothing indexed changed", func(p *podState, round int) { p.note = fmt.Sprint(round) }},
	{"a label added", func(p *podState, round int) { p.labels[fmt.Sprint("added-", round)] = "yes" }},
	{"a label removed", func(p *podState, round int) {
		if _, ok := p.labels["app"]; ok {
			delete(p.labels, "app")
		} else {
			p.labels["app"] = "web"
		}
	}},
	{"one of several images changed", func(p *podState, round int) {
		if len(p.images) == 0 {
			p.images = []string{"busybox"}
		}
		p.images = append(p.images[:1:1], fmt.Sprint("img-", round))
	}},
	{"an image dropped, or two added", func(p *podState, round int) {
		if len(p.images) > 1 {
			p.images = p.images[:1]
		} else {
			p.images = append(p.images, "nginx", fmt.Sprint("img-", round))
		}
	}},
	{"images swapped", func(p *podState, round int) { slices.Reverse(p.images) }},
	{"nothing changed but the resourceVersion", func(*podState, int) {}},
	{"every label and image gone", func(p *podState, round int) { p.labels, p.images = map[string]string{}, nil }},
}

// TestUpdatesKeepAttributes updates stored pods in every way of
// updateKinds, each pod a different one each round, some pods twice in a
// write and one deleted and created again beside the updates: after each
// round the attribute and keyword rows are exactly those of the rows as
// stored (an update keeps the unchanged ones and rewrites the others: none
// is left of a deleted object, none is missing), and selectors, keywords
// and counts by labels and images answer as brute force does. Halfway,
// the rows are taken back to keys of their revision, as before schema
// version 19, and migrated again, from version 15.
func TestUpdatesKeepAttributes(t *testing.T) {
	storagetest.ForEach(t, func(t *testing.T, b storagetest.Backend) {
		opts := b.Options(t)
		s := storagetest.OpenStore(t, opts)
		ctx := context.Background()
		w := &world{objects: map[storage.Key]*storage.Object{}}
		pods := 2 * len(updateKinds)
		states := map[string][]podState{}
		for _, c := range clusters[:2] {
			for i := range pods {
				states[c] = append(states[c], podState{
					labels: map[string]string{"app": appValues[i%len(appValues)], "tier": "t0"},
					images: []string{"busybox", fmt.Sprint("img-", i%3)},
				})
			}
		}
		for round := range 2 * len(updateKinds) {
			if round == len(updateKinds) {
				toRevisionKeyed(t, b.Name, sqlstore.GormDB(s))
				// And the dictionary's conversion (15), which a binary of
				// before cut short after its last page, runs again.
				execAll(t, sqlstore.GormDB(s), "DELETE FROM panorama_schema_migrations WHERE version = 15")
				_ = s.Close()
				s = storagetest.OpenStore(t, opts)
				checkAttributeRows(t, s, "migrated")
			}
			for _, c := range clusters[:2] {
				var changes []storage.Change
				var written []*unstructured.Unstructured
				for i := range pods {
					name, rv := fmt.Sprint("pod-", i), fmt.Sprint(2*round+1)
					if round > 0 {
						updateKinds[(i+round)%len(updateKinds)].update(&states[c][i], round)
					}
					switch {
					case round > 0 && i == round%pods:
						changes = append(changes, storage.Delete("default", name))
						delete(w.objects, storage.Key{Cluster: c, GVR: podsGVR, Namespace: "default", Name: name})
						continue
					case round > 0 && i%5 == 0: // written twice: the last wins
						changes = append(changes, storage.Upsert(states[c][(i+1)%pods].object("default", name, rv)))
						rv = fmt.Sprint(2*round + 2)
					}
					u := states[c][i].object("default", name, rv)
					changes = append(changes, storage.Upsert(u))
					written = append(written, u)
				}
				if _, err := s.ForCluster(c, storage.Unfenced).Apply(ctx, podsGVR, changes); err != nil {
					t.Fatal(err)
				}
				for _, u := range written {
					w.put(c, podsGVR, u)
				}
			}
			step := fmt.Sprint("round ", round)
			checkAttributeRows(t, s, step)
			for _, q := range []storage.ListQuery{
				{GVR: podsGVR, Labels: mustReqs("app=web")},
				{GVR: podsGVR, Labels: mustReqs("!app")},
				{GVR: podsGVR, Labels: mustReqs(fmt.Sprintf("tier in (t0,t%d)", round))},
				{GVR: podsGVR, Labels: mustReqs(fmt.Sprintf("added-%d", round))},
				{GVR: podsGVR, Fields: fields.ParseSelectorOrDie("images=busybox").Requirements()},
				{GVR: podsGVR, Images: []string{fmt.Sprint("img-", round)}},
				{GVR: podsGVR, Images: []string{"nginx"}, Clusters: clusters[1:2]},
				{GVR: podsGVR, Keywords: keywords(fmt.Sprint("t", round))},
				{GVR: podsGVR, Keywords: keywords("web", "busybox")},
			} {
				got, _, _ := listAll(t, s, q, nil)
				if want := w.expect(&q); fmt.Sprint(got) != fmt.Sprint(want) {
					t.Fatalf("%s: %s:\n got %v\nwant %v", step, describe(q), got, want)
				}
			}
			for _, groupBy := range [][]string{{"label:app"}, {"label:tier", "cluster"}, {"field:images"}, {"cluster", "field:images"}} {
				checkCount(t, s, w, storage.ListQuery{GVR: podsGVR}, groupBy, 0)
			}
		}
	})
}

// checkAttributeRows fails unless the attribute rows are exactly those of
// the pods as stored, described with the indexed fields, and every
// keyword row is of a stored object.
func checkAttributeRows(t *testing.T, s *sqlstore.Store, step string) {
	t.Helper()
	fs, err := s.Fields(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	_, objs, _ := listAll(t, s, storage.ListQuery{GVR: podsGVR}, nil)
	var want []string
	for _, r := range objs {
		var u unstructured.Unstructured
		if err := u.UnmarshalJSON(r.Data); err != nil {
			t.Fatalf("%s: row %d: %v", step, r.Revision, err)
		}
		o := fs.Describe(podsGVR.GroupResource(), &u)
		for k, v := range o.Labels {
			want = append(want, fmt.Sprintf("%d l %s 0 %s", r.Revision, k, v))
		}
		for k, vs := range o.Fields {
			for i, v := range vs {
				want = append(want, fmt.Sprintf("%d f %s %d %s", r.Revision, k, i, v))
			}
		}
	}
	var attrs []struct {
		ResourceRevision int64
		Kind, AttrKey    string
		Seq              int
		AttrValue        string
	}
	db := sqlstore.GormDB(s)
	if err := db.Table("object_attributes a").Select("r.revision AS resource_revision, k.kind, k.name AS attr_key, a.seq, v.value AS attr_value").
		Joins("JOIN attribute_keys k ON k.id = a.key_id").Joins("JOIN attribute_values v ON v.id = a.value_id").
		Joins("LEFT JOIN resources r ON r.object_id = a.object_id").Find(&attrs).Error; err != nil {
		t.Fatal(err)
	}
	got := make([]string, len(attrs))
	for i, a := range attrs {
		got[i] = fmt.Sprintf("%d %s %s %d %s", a.ResourceRevision, a.Kind, a.AttrKey, a.Seq, a.AttrValue)
	}
	slices.Sort(got)
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Fatalf("%s: the attribute rows are not those of the resource rows:\n got %q\nwant %q", step, got, want)
	}
	var orphans int64
	if err := db.Table("object_keywords k").Joins("LEFT JOIN resources r ON r.object_id = k.object_id").Where("r.object_id IS NULL").
		Count(&orphans).Error; err != nil || orphans != 0 {
		t.Fatalf("%s: %d keyword rows of no object (%v)", step, orphans, err)
	}
	var negative int64
	if err := db.Table("count_summary").Where("n < 0").Count(&negative).Error; err != nil || negative != 0 {
		t.Fatalf("%s: %d negative cells in the summary (%v)", step, negative, err)
	}
}
