package apiserver

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	searchv1alpha1 "github.com/panorama-io/panorama/apis/search/v1alpha1"
	"github.com/panorama-io/panorama/storage"
)

// historyBody is the JSON of a history, of a list, of a Table or of a Status.
type historyBody struct {
	Kind    string `json:"kind"`
	Code    int    `json:"code"`
	Reason  string `json:"reason"`
	Message string `json:"message"`
	Items   []struct {
		searchv1alpha1.HistoryItem
		Metadata struct {
			Name            string            `json:"name"`
			ResourceVersion string            `json:"resourceVersion"`
			Labels          map[string]string `json:"labels"`
		} `json:"metadata"`
	} `json:"items"`
	Rows []struct {
		Cells []any `json:"cells"`
	} `json:"rows"`
}

func getHistory(t *testing.T, path, user, accept string) (int, historyBody) {
	t.Helper()
	var body historyBody
	code, _ := getAs(t, path, user, accept, &body)
	return code, body
}

// TestHistory: the history subresource answers an object's versions and
// their merge patches, from history and log alike, and lists answer the
// state asOf a revision or a time; both to who may list the resource there,
// and bad input is a 400, too old a time a 410.
func TestHistory(t *testing.T) {
	store, cfg, _ := testServer(t)
	ctx := context.Background()
	pod := func(cluster, name, rv, version string) int64 {
		t.Helper()
		putObject(t, store, cluster, podsGVR, map[string]any{"apiVersion": "v1", "kind": "Pod", "metadata": map[string]any{
			"name": name, "namespace": "ns", "resourceVersion": rv, "uid": cluster + name, "labels": map[string]any{"version": version}}})
		rev, _, err := store.Revision(ctx)
		if err != nil {
			t.Fatal(err)
		}
		return rev
	}
	first := pod("east", "a", "1", "v1")
	firstAt := time.Now()
	pod("east", "b", "1", "v1")
	second := pod("east", "a", "2", "v2")
	if _, err := store.ForCluster("east", storage.Unfenced).Apply(ctx, podsGVR, []storage.Change{storage.Delete("ns", "b")}); err != nil {
		t.Fatal(err)
	}
	current, _, _ := store.Revision(ctx)
	if err := store.Compact(ctx, current, true); err != nil {
		t.Fatal(err)
	}
	third := pod("east", "a", "3", "v3") // in the log
	pod("west", "a", "1", "west")

	historyURL := viewURL(cfg, "/clusters/east/api/v1/namespaces/ns/pods/a/history")
	for _, user := range []string{"admin", "nsuser", "east"} {
		code, body := getHistory(t, historyURL, user, "")
		if code != http.StatusOK || body.Kind != "History" || len(body.Items) != 3 {
			t.Fatalf("history as %s: %d %+v", user, code, body)
		}
		for i, want := range []struct {
			rev   int64
			typ   string
			patch string
		}{
			{first, "ADDED", `"labels":{"version":"v1"}`},
			{second, "MODIFIED", fmt.Sprintf(`{"metadata":{"annotations":{"panorama.io/member-resource-version":"2"},"labels":{"version":"v2"},"resourceVersion":"%d"}}`, second)},
			{third, "MODIFIED", fmt.Sprintf(`{"metadata":{"annotations":{"panorama.io/member-resource-version":"3"},"labels":{"version":"v3"},"resourceVersion":"%d"}}`, third)},
		} {
			it := body.Items[i].HistoryItem
			if it.Revision != want.rev || string(it.Type) != want.typ || !strings.Contains(string(it.Patch), want.patch) || it.Time == nil ||
				it.MemberResourceVersion != fmt.Sprint(i+1) || it.Object != nil {
				t.Errorf("history as %s, version %d: %+v %s, want %d %s %s", user, i, it, it.Patch, want.rev, want.typ, want.patch)
			}
		}
	}
	if code, body := getHistory(t, viewURL(cfg, "/clusters/_flat/api/v1/namespaces/east.ns/pods/a/history"), "nsuser", ""); code != http.StatusOK ||
		len(body.Items) != 3 || body.Items[2].Revision != third {
		t.Errorf("history on the flat view: %d %+v", code, body)
	}
	// The first of the last versions is whole, from history rows and the
	// log alike: its patch is from a version the answer leaves out.
	for limit, want := range map[int]struct {
		rev     int64
		version string
	}{2: {second, "v2"}, 1: {third, "v3"}} {
		code, body := getHistory(t, fmt.Sprintf("%s?limit=%d", historyURL, limit), "", "")
		if code != http.StatusOK || len(body.Items) != limit || body.Items[0].Revision != want.rev {
			t.Fatalf("the last %d versions: %d %+v", limit, code, body)
		}
		var obj struct {
			Metadata struct {
				Name   string            `json:"name"`
				Labels map[string]string `json:"labels"`
			} `json:"metadata"`
		}
		if err := json.Unmarshal(body.Items[0].Object, &obj); err != nil || obj.Metadata.Name != "a" || obj.Metadata.Labels["version"] != want.version {
			t.Errorf("the last %d versions begin with object %s (%v), want a at %s", limit, body.Items[0].Object, err, want.version)
		}
		if limit == 2 && body.Items[1].Object != nil {
			t.Errorf("the last 2 versions: the second carries its object %s", body.Items[1].Object)
		}
	}
	for _, bad := range []string{"-1", "x"} {
		if code, body := getHistory(t, historyURL+"?limit="+bad, "", ""); code != http.StatusBadRequest || body.Kind != "Status" {
			t.Errorf("history with limit %s: %d %+v", bad, code, body)
		}
	}
	code, table := getHistory(t, historyURL, "", tableContentType)
	if code != http.StatusOK || table.Kind != "Table" || len(table.Rows) != 3 || table.Rows[1].Cells[2] != "MODIFIED" {
		t.Errorf("history table: %d %+v", code, table)
	}
	deleted := viewURL(cfg, "/clusters/east/api/v1/namespaces/ns/pods/b/history")
	if code, body := getHistory(t, deleted, "", ""); code != http.StatusOK || len(body.Items) != 2 || body.Items[1].Type != "DELETED" ||
		string(body.Items[1].Patch) != "null" {
		t.Errorf("history of a deleted pod: %d %+v", code, body)
	}
	for _, c := range []struct {
		path, user string
		code       int
	}{
		{"/clusters/east/api/v1/namespaces/ns/pods/a/history", "services", http.StatusForbidden},
		{"/clusters/west/api/v1/namespaces/ns/pods/a/history", "east", http.StatusForbidden},
		{"/clusters/east/api/v1/namespaces/other/pods/a/history", "nsuser", http.StatusForbidden},
		{"/clusters/east/api/v1/namespaces/ns/pods/none/history", "", http.StatusNotFound},
		{"/api/v1/namespaces/ns/pods/a/history", "", http.StatusBadRequest}, // which cluster's?
	} {
		if code, body := getHistory(t, viewURL(cfg, c.path), c.user, ""); code != c.code || body.Kind != "Status" {
			t.Errorf("%s as %q: %d %+v, want %d", c.path, c.user, code, body, c.code)
		}
	}

	list := func(query, user string) (int, historyBody) {
		t.Helper()
		return getHistory(t, viewURL(cfg, "/clusters/east/api/v1/namespaces/ns/pods?"+query), user, "")
	}
	labelTime := strings.Replace(strings.Replace(firstAt.UTC().Format(time.RFC3339Nano), ":", ".", 1), ":", ".", 1)
	for _, c := range []struct {
		query, user, want string
	}{
		{fmt.Sprintf("asOf=%d", first), "", "a:v1"},
		{fmt.Sprintf("asOf=%d", second), "", "a:v2 b:v1"},
		{fmt.Sprintf("labelSelector=search.panorama.io/asOf=%d", second), "", "a:v2 b:v1"},
		{fmt.Sprintf("labelSelector=search.panorama.io/asOf=%d,version=v1", second), "nsuser", "b:v1"},
		{fmt.Sprintf("asOf=%d&limit=1", second), "", "a:v2"},
		{"asOf=" + url.QueryEscape(firstAt.Format(time.RFC3339Nano)), "", "a:v1"},
		{"labelSelector=search.panorama.io/asOf=" + labelTime, "", "a:v1"},
		{fmt.Sprintf("asOf=%d", third), "east", "a:v3"},
	} {
		code, body := list(c.query, c.user)
		var got []string
		for _, it := range body.Items {
			got = append(got, it.Metadata.Name+":"+it.Metadata.Labels["version"])
		}
		if code != http.StatusOK || strings.Join(got, " ") != c.want {
			t.Errorf("list %s as %q: %d %v %+v, want %s", c.query, c.user, code, got, body, c.want)
		}
	}
	for _, c := range []struct {
		query, user string
		code        int
	}{
		{"asOf=abc", "", http.StatusBadRequest},
		{"asOf=0", "", http.StatusBadRequest},
		{"asOf=-5m", "", http.StatusBadRequest},
		{"asOf=1&asOf=2", "", http.StatusBadRequest},
		{"asOf=1&resourceVersion=1", "", http.StatusBadRequest},
		{"asOf=1&groupBy=cluster", "", http.StatusBadRequest},
		{"asOf=1&watch=true", "", http.StatusBadRequest},
		{"asOf=1", "services", http.StatusForbidden},
		{"asOf=24h", "", http.StatusGone}, // before any write
		{"asOf=2000-01-01", "", http.StatusGone},
	} {
		if code, body := list(c.query, c.user); code != c.code || body.Kind != "Status" {
			t.Errorf("list %s as %q: %d %+v, want %d", c.query, c.user, code, body, c.code)
		}
	}
	if _, body := list("asOf=24h", ""); body.Reason != "Expired" {
		t.Errorf("asOf before the history: %+v, want reason Expired", body)
	}
}
