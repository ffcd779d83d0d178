package viewclient

import (
	"encoding/json"
	"testing"

	"k8s.io/apimachinery/pkg/watch"

	searchv1alpha1 "github.com/panorama-io/panorama/apis/search/v1alpha1"
)

// TestVersionAtFromAWholeFirstVersion: a history whose first item is a
// MODIFIED one (a limit, or the retention, left its earlier versions out)
// is rebuilt from the whole object that item carries; without it, the
// patch alone is no version and VersionAt refuses rather than answer it.
func TestVersionAtFromAWholeFirstVersion(t *testing.T) {
	items := []searchv1alpha1.HistoryItem{
		{Revision: 5, Type: watch.Modified, Patch: json.RawMessage(`{"spec":{"replicas":2}}`),
			Object: json.RawMessage(`{"metadata":{"name":"web"},"spec":{"replicas":2,"paused":true}}`)},
		{Revision: 7, Type: watch.Modified, Patch: json.RawMessage(`{"spec":{"replicas":3,"paused":null}}`)},
		{Revision: 9, Type: watch.Deleted, Patch: json.RawMessage(`null`)},
	}
	h := &searchv1alpha1.History{Items: items}
	if got, err := VersionAt(h, 4); err == nil {
		t.Errorf("before the history kept: %s, want an error (the object existed then)", got)
	}
	for rev, want := range map[int64]string{
		5: `{"metadata":{"name":"web"},"spec":{"replicas":2,"paused":true}}`,
		8: `{"metadata":{"name":"web"},"spec":{"replicas":3}}`,
		9: "",
	} {
		got, err := VersionAt(h, rev)
		if err != nil {
			t.Fatalf("at %d: %v", rev, err)
		}
		if string(got) != want {
			t.Errorf("at %d: %s, want %s", rev, got, want)
		}
	}
	items[0].Object = nil
	if got, err := VersionAt(h, 8); err == nil {
		t.Errorf("a first MODIFIED without its object rebuilt %s", got)
	}
}
