package apiserver

import (
	"fmt"
	"net/url"
	"testing"
)

// TestParseReadVersion checks every row of kube's resourceVersion tables
// (https://kubernetes.io/docs/reference/using-api/api-concepts/#resource-versions)
// as parseListOptions reads them: the semantics, the revision, which source
// serves a list (cache, or store at a revision, 0 the latest) and the
// requests kube answers 400.
func TestParseReadVersion(t *testing.T) {
	for _, tc := range []struct {
		query string
		watch bool
		want  string // match rev source, or the status code
	}{
		// Get and list, resourceVersionMatch unset, no limit.
		{"", false, "MostRecent 0 store@0"},
		{"resourceVersion=0", false, "Any 0 cache"},
		{"resourceVersion=7", false, "NotOlderThan 7 store@0"},
		// Unset match, limit, no continue: the legacy paged list is Exact.
		{"limit=5", false, "MostRecent 0 store@0"},
		{"limit=5&resourceVersion=0", false, "Any 0 cache"},
		{"limit=5&resourceVersion=7", false, "Exact 7 store@7"},
		// Unset match with continue: the token's revision; "0" is ignored,
		// another revision is refused.
		{"continue=abc", false, "MostRecent 0 store@0"},
		{"continue=abc&resourceVersion=0", false, "Any 0 store@0"},
		{"continue=abc&resourceVersion=7", false, "400"},
		{"continue=abc&resourceVersion=7&resourceVersionMatch=Exact", false, "400"},
		// NotOlderThan.
		{"resourceVersionMatch=NotOlderThan", false, "400"},
		{"resourceVersionMatch=NotOlderThan&resourceVersion=0", false, "Any 0 cache"},
		{"resourceVersionMatch=NotOlderThan&resourceVersion=7", false, "NotOlderThan 7 store@0"},
		{"resourceVersionMatch=NotOlderThan&resourceVersion=7&limit=5", false, "NotOlderThan 7 store@0"},
		// Exact.
		{"resourceVersionMatch=Exact", false, "400"},
		{"resourceVersionMatch=Exact&resourceVersion=0", false, "400"},
		{"resourceVersionMatch=Exact&resourceVersion=7", false, "Exact 7 store@7"},
		{"resourceVersionMatch=Exact&resourceVersion=7&limit=5", false, "Exact 7 store@7"},
		{"resourceVersionMatch=Newest&resourceVersion=7", false, "400"},
		// The cache evaluates no owner filter: Any is then the store's latest.
		{"resourceVersion=0&ownerName=web", false, "Any 0 store@0"},
		// Not a revision.
		{"resourceVersion=abc", false, "400"},
		{"resourceVersion=-1", false, "400"},
		{"resourceVersion=99999999999999999999", false, "400"},
		{"sendInitialEvents=true", false, "400"}, // a list has no initial events

		// Watch without sendInitialEvents: the state then its changes, or
		// the changes after N (Start at Exact).
		{"", true, "MostRecent 0 state"},
		{"resourceVersion=0", true, "Any 0 state"},
		{"resourceVersion=7", true, "Exact 7 changes"},
		{"resourceVersion=7&limit=5", true, "Exact 7 changes"},
		{"resourceVersion=7&resourceVersionMatch=NotOlderThan", true, "400"}, // match needs sendInitialEvents
		// Watch-list: sendInitialEvents needs NotOlderThan.
		{"sendInitialEvents=true&resourceVersionMatch=NotOlderThan", true, "MostRecent 0 state+bookmark"},
		{"sendInitialEvents=true&resourceVersionMatch=NotOlderThan&resourceVersion=0", true, "Any 0 state+bookmark"},
		{"sendInitialEvents=true&resourceVersionMatch=NotOlderThan&resourceVersion=7", true, "NotOlderThan 7 state+bookmark"},
		{"sendInitialEvents=true&resourceVersion=7", true, "400"},
		{"sendInitialEvents=true&resourceVersionMatch=Exact&resourceVersion=7", true, "400"},
		{"sendInitialEvents=false&resourceVersionMatch=NotOlderThan&resourceVersion=7", true, "Exact 7 changes"},
	} {
		values, err := url.ParseQuery(tc.query)
		if err != nil {
			t.Fatal(err)
		}
		var got string
		r, err := parseListOptions(values, podsGVR, "", "", tc.watch)
		switch {
		case err != nil:
			got = fmt.Sprint(toStatus(t.Context(), err, podsGVR.GroupResource()).Status().Code)
		case tc.watch:
			start := "changes"
			if r.version.match == mostRecent || r.version.match == anyVersion || r.version.sendInitialEvents {
				start = "state" // what the watch cache is asked: ResourceVersion 0 or SendInitialEvents
			}
			if r.version.sendInitialEvents {
				start += "+bookmark"
			}
			got = fmt.Sprintf("%s %d %s", r.version.match, r.version.rev, start)
		default:
			source := fmt.Sprintf("store@%d", r.query.Revision)
			if r.version.fromCache(&r.query) {
				source = "cache"
			}
			got = fmt.Sprintf("%s %d %s", r.version.match, r.version.rev, source)
		}
		if got != tc.want {
			t.Errorf("%q (watch %v): %s, want %s", tc.query, tc.watch, got, tc.want)
		}
	}
}
