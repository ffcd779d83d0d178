package storage_test

import (
	"testing"

	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/panorama-io/panorama/storage"
)

// TestSummarizable: counts selecting by clusters and namespaces alone,
// grouped by at most one label or field that is not one of PerObjectKeys,
// are the summary's, also when the request parsed to empty filters; any
// other filter is the objects'.
func TestSummarizable(t *testing.T) {
	tierFront, _ := labels.NewRequirement("tier", "=", []string{"front"})
	for _, c := range []struct {
		name  string
		q     storage.ListQuery
		terms []storage.GroupBy
		want  bool
	}{
		{"clusters and namespaces", storage.ListQuery{Clusters: []string{"east"}, Namespaces: []string{"ns"}, Limit: 500},
			[]storage.GroupBy{{Kind: storage.GroupCluster}, {Kind: storage.GroupLabel, Key: "app"}}, true},
		{"empty selectors", storage.ListQuery{Fields: fields.Requirements{}, Labels: labels.Requirements{}, Images: []string{}},
			[]storage.GroupBy{{Kind: storage.GroupField, Key: "status.phase"}}, true},
		{"two attributes", storage.ListQuery{},
			[]storage.GroupBy{{Kind: storage.GroupLabel, Key: "app"}, {Kind: storage.GroupField, Key: "status.phase"}}, false},
		{"label selector", storage.ListQuery{Labels: labels.Requirements{*tierFront}},
			[]storage.GroupBy{{Kind: storage.GroupCluster}}, false},
		{"fuzzy name", storage.ListQuery{FuzzyName: "web"}, []storage.GroupBy{{Kind: storage.GroupCluster}}, false},
		{"a label of one object", storage.ListQuery{},
			[]storage.GroupBy{{Kind: storage.GroupNamespace}, {Kind: storage.GroupLabel, Key: "statefulset.kubernetes.io/pod-name"}}, false},
		{"a label of one revision", storage.ListQuery{}, []storage.GroupBy{{Kind: storage.GroupLabel, Key: "pod-template-hash"}}, true},
		{"a field of one object", storage.ListQuery{}, []storage.GroupBy{{Kind: storage.GroupField, Key: "status.podIP"}}, false},
	} {
		q := storage.CountQuery{Query: c.q, GroupBy: c.terms}
		if got := q.Summarizable(); got != c.want {
			t.Errorf("%s: Summarizable %v, want %v", c.name, got, c.want)
		}
	}
}
