package mcpserver

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/rest"

	searchv1alpha1 "github.com/panorama-io/panorama/apis/search/v1alpha1"
	"github.com/panorama-io/panorama/internal/viewclient"
)

// fakeHost answers what a host answers the server for pods: discovery of
// the view across clusters, a page of pods as a Table, and a Status for
// what it does not hold. It records the queries it was asked.
func fakeHost(t *testing.T) (*httptest.Server, *[]string) {
	t.Helper()
	var asked []string
	all := searchv1alpha1.ViewPath("")
	row, _ := json.Marshal(metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{Name: "web-0", Namespace: "shop", Annotations: map[string]string{viewclient.ClusterAnnotation: "east"}}})
	remaining := int64(2)
	answers := map[string]any{
		all + "/api":  metav1.APIVersions{TypeMeta: metav1.TypeMeta{Kind: "APIVersions"}, Versions: []string{"v1"}},
		all + "/apis": metav1.APIGroupList{TypeMeta: metav1.TypeMeta{Kind: "APIGroupList", APIVersion: "v1"}},
		all + "/api/v1": metav1.APIResourceList{TypeMeta: metav1.TypeMeta{Kind: "APIResourceList", APIVersion: "v1"}, GroupVersion: "v1",
			APIResources: []metav1.APIResource{{Name: "pods", Namespaced: true, Kind: "Pod", ShortNames: []string{"po"}, Verbs: metav1.Verbs{"get", "list", "watch"}}}},
		all + "/api/v1/pods": metav1.Table{TypeMeta: metav1.TypeMeta{Kind: "Table", APIVersion: "meta.k8s.io/v1"},
			ListMeta:          metav1.ListMeta{Continue: "next", RemainingItemCount: &remaining},
			ColumnDefinitions: []metav1.TableColumnDefinition{{Name: "Cluster"}, {Name: "Name"}, {Name: "Status"}},
			Rows:              []metav1.TableRow{{Cells: []any{"east", "web-0", "Running"}, Object: runtime.RawExtension{Raw: row}}}},
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		asked = append(asked, r.URL.RequestURI())
		w.Header().Set("Content-Type", "application/json")
		body, ok := answers[r.URL.Path]
		if !ok {
			status := apierrors.NewNotFound(schema.GroupResource{Resource: "pods"}, "x").ErrStatus
			status.Kind, status.APIVersion = "Status", "v1"
			w.WriteHeader(http.StatusNotFound)
			body = status
		}
		_ = json.NewEncoder(w).Encode(body)
	}))
	t.Cleanup(srv.Close)
	return srv, &asked
}

func connect(t *testing.T, host string) *mcp.ClientSession {
	t.Helper()
	s, err := New(&rest.Config{Host: host}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	st, ct := mcp.NewInMemoryTransports()
	if _, err := s.Connect(ctx, st, nil); err != nil {
		t.Fatal(err)
	}
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "test"}, nil).Connect(ctx, ct, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cs.Close() })
	return cs
}

func TestToolsListedWithSchemas(t *testing.T) {
	srv, _ := fakeHost(t)
	res, err := connect(t, srv.URL).ListTools(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, tool := range res.Tools {
		names = append(names, tool.Name)
		if tool.InputSchema == nil || tool.OutputSchema == nil || !tool.Annotations.ReadOnlyHint {
			t.Errorf("tool %s: schemas %v %v, annotations %+v", tool.Name, tool.InputSchema, tool.OutputSchema, tool.Annotations)
		}
	}
	if got := strings.Join(names, ","); got != "clusters,count,describe,get,history,search" {
		t.Errorf("tools %s", got)
	}
}

// TestKeywordsAreExplainedToTheModel: a model writes q from its schema
// alone, so both tools that filter say how words match.
func TestKeywordsAreExplainedToTheModel(t *testing.T) {
	srv, _ := fakeHost(t)
	res, err := connect(t, srv.URL).ListTools(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	explained := map[string]bool{}
	for _, tool := range res.Tools {
		var schema struct {
			Properties map[string]struct {
				Type        json.RawMessage `json:"type"`
				Description string          `json:"description"`
			} `json:"properties"`
		}
		b, _ := json.Marshal(tool.InputSchema)
		if err := json.Unmarshal(b, &schema); err != nil {
			t.Fatal(err)
		}
		q, ok := schema.Properties["q"]
		if !ok {
			continue
		}
		explained[tool.Name] = true
		for _, want := range []string{"letters and digits", "every word of these terms must appear", "web* finds web-0 and webhook"} {
			if !strings.Contains(q.Description, want) {
				t.Errorf("%s: q says %q, without %q", tool.Name, q.Description, want)
			}
		}
		if !strings.Contains(string(q.Type), `"array"`) {
			t.Errorf("%s: q is of type %s, want a list of terms", tool.Name, q.Type)
		}
	}
	if !explained["search"] || !explained["count"] {
		t.Errorf("tools taking q: %v, want search and count", explained)
	}
}

func TestSearchAsksTheViewAndAnswersCompactly(t *testing.T) {
	srv, asked := fakeHost(t)
	cs := connect(t, srv.URL)
	res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "search", Arguments: map[string]any{
		"resource": "po", "clusters": []string{"east", "west"}, "labelSelector": "app=web", "images": []string{"nginx"}, "ownerSeniority": 1, "limit": 1,
		"refersTo": []string{"secret/db-pass", "cm/shop/cfg"}, "hops": 2, "q": []string{"db.example", "web*"},
	}})
	if err != nil || res.IsError {
		t.Fatalf("search: %v %+v", err, res)
	}
	var out SearchOutput
	b, _ := json.Marshal(res.StructuredContent)
	if err := json.Unmarshal(b, &out); err != nil {
		t.Fatal(err)
	}
	if out.Total == nil || *out.Total != 3 || out.Count != 1 || out.Continue != "next" || out.Kind != "Pod" {
		t.Errorf("page %+v: want total 3 (1 + 2 remaining), continue next", out)
	}
	if want := (map[string]any{"cluster": "east", "namespace": "shop", "name": "web-0", "status": "Running"}); len(out.Items) != 1 || !mapsEqual(out.Items[0], want) {
		t.Errorf("items %v, want %v", out.Items, want)
	}
	last := (*asked)[len(*asked)-1]
	for _, p := range []string{"clusters=east%2Cwest", "labelSelector=app%3Dweb", "images=nginx", "ownerSeniority=1", "limit=1", "withRemainingCount=true", "includeObject=Metadata",
		"refersTo=secret%2Fdb-pass%2Ccm%2Fshop%2Fcfg", "hops=2", "q=db.example%2Cweb%2A"} {
		if !strings.Contains(last, p) {
			t.Errorf("the list asked %s, without %s", last, p)
		}
	}
}

func TestStatusesAreToolErrors(t *testing.T) {
	srv, _ := fakeHost(t)
	cs := connect(t, srv.URL)
	for _, tc := range []struct {
		args map[string]any
		tool string
		want string
	}{
		{map[string]any{"cluster": "east", "resource": "pods", "namespace": "shop", "name": "x"}, "get", `404 Not Found: pods "x" not found`},
		{map[string]any{"cluster": "east", "resource": "pods", "name": "x"}, "get", "namespace is required"},
		{map[string]any{"resource": "gadgets"}, "search", `"gadgets" is not served`},
		{map[string]any{"resource": "pods", "limit": 501}, "search", "at most 500"},
		{map[string]any{"resource": "pods"}, "count", `missing properties: ["groupBy"]`},
		{map[string]any{"resource": "pods", "groupBy": []string{}}, "count", "groupBy is required"},
		{map[string]any{"cluster": "east", "resource": "pods", "namespace": "shop", "name": "x", "from": 3}, "history", "both from and to"},
	} {
		res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: tc.tool, Arguments: tc.args})
		if err != nil {
			t.Fatalf("%s %v: a protocol error %v, want a tool error", tc.tool, tc.args, err)
		}
		if !res.IsError || len(res.Content) == 0 || !strings.Contains(res.Content[0].(*mcp.TextContent).Text, tc.want) {
			t.Errorf("%s %v: %+v, want an error saying %q", tc.tool, tc.args, res.Content, tc.want)
		}
	}
}

// TestRequestsStayInTheViews: names, namespaces and clusters that would
// move a request's path out of the views ("..") are refused before any
// request, so the server's credentials read nothing else of the host.
func TestRequestsStayInTheViews(t *testing.T) {
	srv, asked := fakeHost(t)
	cs := connect(t, srv.URL)
	escape := strings.Repeat("../", 12) + "api/v1/namespaces/default/secrets"
	for _, args := range []map[string]any{
		{"cluster": "east", "resource": "pods", "namespace": "shop", "name": escape},
		{"cluster": "east", "resource": "pods", "namespace": escape, "name": "web-0"},
		{"cluster": escape, "resource": "pods", "namespace": "shop", "name": "web-0"},
		{"cluster": "..", "resource": "pods", "namespace": "shop", "name": "web-0"},
	} {
		for _, tool := range []string{"get", "history", "describe"} {
			res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: tool, Arguments: args})
			if err != nil || !res.IsError || !strings.Contains(res.Content[0].(*mcp.TextContent).Text, "not a path of Panorama's views") {
				t.Errorf("%s %v: %v %+v, want refused", tool, args, err, res)
			}
		}
	}
	// A collection is Panorama's too.
	res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "search", Arguments: map[string]any{"collection": "workloads"}})
	if err != nil || !res.IsError || !strings.Contains(res.Content[0].(*mcp.TextContent).Text, "404 Not Found") {
		t.Errorf("search of a collection: %v %+v, want the host asked (its 404)", err, res)
	}
	for _, p := range *asked {
		if !strings.HasPrefix(p, "/apis/"+searchv1alpha1.GroupName+"/") {
			t.Errorf("the host was asked %s, outside the views", p)
		}
	}
}

// TestFieldsThatPanicJSONPathAreRefused: client-go's jsonpath panics on
// some templates; such a field is bad input, not the server's end.
func TestFieldsThatPanicJSONPathAreRefused(t *testing.T) {
	obj := map[string]any{"metadata": map[string]any{"name": "web-0"}}
	if _, err := selectFields(obj, []string{"$range}{range"}); !apierrors.IsBadRequest(err) {
		t.Errorf("selectFields of a template jsonpath panics on: %v, want a bad request", err)
	}
}

// TestResourcesSyncedLaterAreFound: a resource the view serves only after
// the server's first discovery is found by name, not refused as unknown.
func TestResourcesSyncedLaterAreFound(t *testing.T) {
	all := searchv1alpha1.ViewPath("")
	var configMaps atomic.Bool
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		resources := []metav1.APIResource{{Name: "pods", Namespaced: true, Kind: "Pod", Verbs: metav1.Verbs{"list"}}}
		if configMaps.Load() {
			resources = append(resources, metav1.APIResource{Name: "configmaps", Namespaced: true, Kind: "ConfigMap", ShortNames: []string{"cm"}, Verbs: metav1.Verbs{"list"}})
		}
		var body any = metav1.Table{TypeMeta: metav1.TypeMeta{Kind: "Table", APIVersion: "meta.k8s.io/v1"}}
		switch r.URL.Path {
		case all + "/api":
			body = metav1.APIVersions{TypeMeta: metav1.TypeMeta{Kind: "APIVersions"}, Versions: []string{"v1"}}
		case all + "/apis":
			body = metav1.APIGroupList{TypeMeta: metav1.TypeMeta{Kind: "APIGroupList", APIVersion: "v1"}}
		case all + "/api/v1":
			body = metav1.APIResourceList{TypeMeta: metav1.TypeMeta{Kind: "APIResourceList", APIVersion: "v1"}, GroupVersion: "v1", APIResources: resources}
		}
		_ = json.NewEncoder(w).Encode(body)
	}))
	t.Cleanup(srv.Close)
	cs := connect(t, srv.URL)
	search := func(resource string) *mcp.CallToolResult {
		res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "search", Arguments: map[string]any{"resource": resource}})
		if err != nil {
			t.Fatal(err)
		}
		return res
	}
	if res := search("pods"); res.IsError {
		t.Fatalf("search pods: %+v", res.Content)
	}
	configMaps.Store(true)
	if res := search("cm"); res.IsError {
		t.Errorf("search of a resource served since the first: %+v", res.Content[0].(*mcp.TextContent).Text)
	}
}

func mapsEqual(a, b map[string]any) bool {
	ja, _ := json.Marshal(a)
	jb, _ := json.Marshal(b)
	return string(ja) == string(jb)
}

// TestAnswersAreBounded: an answer over maxAnswerBytes is a tool error
// that says how to ask for less; a smaller one passes as it was.
func TestAnswersAreBounded(t *testing.T) {
	answer := func(size int) mcp.MethodHandler {
		return func(context.Context, string, mcp.Request) (mcp.Result, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: strings.Repeat("x", size)}}}, nil
		}
	}
	res, err := bounded(answer(maxAnswerBytes+1))(context.Background(), "tools/call", nil)
	if err != nil {
		t.Fatal(err)
	}
	r := res.(*mcp.CallToolResult)
	if !r.IsError || len(r.Content) != 1 || !strings.Contains(r.Content[0].(*mcp.TextContent).Text, "ask for less") {
		t.Errorf("an answer over the bound: %+v", r)
	}
	res, err = bounded(answer(1000))(context.Background(), "tools/call", nil)
	if err != nil || res.(*mcp.CallToolResult).IsError || len(res.(*mcp.CallToolResult).Content[0].(*mcp.TextContent).Text) != 1000 {
		t.Errorf("an answer under the bound: %+v, %v", res, err)
	}
}

// TestHistoryReadsTheLastVersionsByDefault: without a limit, history asks
// the view for the last defaultHistoryVersions, not a week of versions.
func TestHistoryReadsTheLastVersionsByDefault(t *testing.T) {
	srv, asked := fakeHost(t)
	_, _ = connect(t, srv.URL).CallTool(context.Background(), &mcp.CallToolParams{Name: "history",
		Arguments: map[string]any{"cluster": "east", "resource": "pods", "namespace": "shop", "name": "web-0"}})
	for _, q := range *asked {
		if strings.Contains(q, "/history") {
			if !strings.HasSuffix(q, "/history?limit=50") {
				t.Errorf("history asked as %s", q)
			}
			return
		}
	}
	t.Errorf("no history asked; asked %v", *asked)
}
