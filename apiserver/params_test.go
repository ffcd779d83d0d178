package apiserver

import (
	"net/url"
	"testing"

	"k8s.io/apimachinery/pkg/runtime/schema"
)

// TestSearchParamRefusals checks that a verb refuses the parameters the
// table says it does not accept, the first in the table's order, and
// accepts the rest.
func TestSearchParamRefusals(t *testing.T) {
	pods := schema.GroupVersionResource{Version: "v1", Resource: "pods"}
	for _, tc := range []struct {
		query string
		watch bool
		want  string // "" when accepted
	}{
		{query: "ownerUID=x&groupBy=cluster&asOf=1", watch: true, want: notForWatchOwners},
		{query: "ownerName=x", watch: true, want: notForWatchOwners},
		{query: "groupBy=cluster&asOf=1", watch: true, want: "groupBy is not supported for watch"},
		{query: "asOf=1", watch: true, want: "asOf is not supported for watch"},
		{query: "groupBy=cluster&asOf=1", want: "groupBy counts at the current revision: asOf does not apply"},
		{query: "ownerUID=x&ownerSeniority=1", watch: false},
		{query: "ownerUID=,", watch: true}, // blank values are no parameter
		{query: "groupBy=cluster&ownerUID=x"},
		{query: "asOf=1"},
	} {
		values, err := url.ParseQuery(tc.query)
		if err != nil {
			t.Fatal(err)
		}
		_, err = parseListOptions(values, pods, "", "", tc.watch)
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("%s (watch %v): %v, want accepted", tc.query, tc.watch, err)
		case tc.want != "" && (err == nil || err.Error() != tc.want):
			t.Errorf("%s (watch %v): %v, want %q", tc.query, tc.watch, err, tc.want)
		}
	}
}
