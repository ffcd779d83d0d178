package kubectlplugin

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	searchv1alpha1 "github.com/panorama-io/panorama/apis/search/v1alpha1"
)

// countsHost answers the view's counts of pods, as the API server does:
// its Table when asked for one, else the Counts; the rest as podsHost.
type countsHost struct{ podsHost }

func (h *countsHost) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path != searchv1alpha1.ViewPath("")+"/api/v1/pods" {
		h.podsHost.ServeHTTP(w, r)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	if strings.Contains(r.Header.Get("Accept"), "as=Table") {
		_, _ = w.Write([]byte(`{"kind":"Table","apiVersion":"meta.k8s.io/v1","metadata":{},
			"columnDefinitions":[{"name":"cluster","type":"string"},{"name":"Count","type":"integer"},
				{"name":"Held Since","type":"string","format":"date-time"},{"name":"Since Revision","type":"integer","priority":1}],
			"rows":[{"cells":["east",1234567,"2026-12-01T08:14:02Z",23456789]},{"cells":["west",3,"<none>","<none>"]},
				{"cells":["north",1,"<unknown>","<unknown>"]}]}`))
		return
	}
	_ = json.NewEncoder(w).Encode(map[string]any{"kind": "Counts", "apiVersion": "search.panorama.io/v1alpha1",
		"groupBy": []string{"cluster"}, "items": []any{map[string]any{"group": map[string]any{"cluster": "east"}, "count": 1234567}}})
}

// TestCountPrintsTheServersTable: count prints the server's Table as
// kubectl get does, the revision with -o wide only, and whole numbers,
// however large, as integers.
func TestCountPrintsTheServersTable(t *testing.T) {
	srv := httptest.NewServer(&countsHost{})
	defer srv.Close()
	for _, tc := range []struct {
		args []string
		want []string
	}{
		{nil, []string{
			"CLUSTER COUNT HELD SINCE",
			"east 1234567 2026-12-01T08:14:02Z",
			"west 3 <none>",
			"north 1 <unknown>",
		}},
		{[]string{"-o", "wide"}, []string{
			"CLUSTER COUNT HELD SINCE SINCE REVISION",
			"east 1234567 2026-12-01T08:14:02Z 23456789",
			"west 3 <none> <none>",
			"north 1 <unknown> <unknown>",
		}},
		{[]string{"-o", "jsonpath={.items[0].count}"}, []string{"1234567"}},
	} {
		out, err := runPlugin(t, srv.URL, append([]string{"count", "pods", "-A", "--with-held-since"}, tc.args...)...)
		if err != nil {
			t.Fatalf("count %v: %v\n%s", tc.args, err, out)
		}
		var got []string
		for line := range strings.Lines(strings.TrimSpace(out)) {
			got = append(got, strings.Join(strings.Fields(line), " "))
		}
		if strings.Join(got, "\n") != strings.Join(tc.want, "\n") {
			t.Errorf("count %v printed\n%s\nwant\n%s", tc.args, out, strings.Join(tc.want, "\n"))
		}
	}
}
