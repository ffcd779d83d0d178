package storage_test

import (
	"strings"
	"testing"

	"github.com/panorama-io/panorama/storage"
)

// FuzzDecodeContinue: any token either decodes, to a position that encodes
// back to the same position, or is an InvalidError; never a panic.
func FuzzDecodeContinue(f *testing.F) {
	keyOrder := (&storage.ListQuery{}).Order()
	byCreated := (&storage.ListQuery{OrderBy: []storage.OrderBy{{Field: storage.OrderCreated, Desc: true}}}).Order()
	f.Add(storage.EncodeContinue(7, keyOrder, &storage.Object{Key: storage.Key{Cluster: "east", Namespace: "web", Name: "app-1"}}), false)
	f.Add(storage.EncodeContinue(1<<62, byCreated, &storage.Object{Key: storage.Key{Name: "名前"}, CreatedAt: -1}), true)
	f.Add("eyJ2IjoibWV0YS5rOHMuaW8vdjEiLCJydiI6LTEsInN0YXJ0IjoiIn0", false)
	f.Add("garbage", false)
	f.Add("%%%", true)
	f.Add(strings.Repeat("A", 500), false)
	f.Fuzz(func(t *testing.T, token string, created bool) {
		order := keyOrder
		if created {
			order = byCreated
		}
		rev, last, err := storage.DecodeContinue(token, order)
		if err != nil {
			if !storage.IsInvalid(err) {
				t.Fatalf("%q: %T %v, want an InvalidError", token, err, err)
			}
			return
		}
		if rev <= 0 || last.Name == "" || !storage.StorableText(last.Cluster+last.Namespace+last.Name) {
			t.Fatalf("%q decoded to revision %d, %+v", token, rev, last.Key)
		}
		rev2, last2, err := storage.DecodeContinue(storage.EncodeContinue(rev, order, last), order)
		if err != nil || rev2 != rev || last2.Key != last.Key || last2.CreatedAt != last.CreatedAt {
			t.Fatalf("%q: decoded %d %+v, re-encoded and decoded %d %+v, %v", token, rev, last, rev2, last2, err)
		}
	})
}
