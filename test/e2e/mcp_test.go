package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestMCP runs `panorama mcp` as agents would, with the SDK's own client:
// on standard input and output for two users of a real host, and over
// streamable HTTP, against a running Panorama and two real members. Every
// answer is checked against the members' own objects; eve, whose grants
// name east only, learns nothing of west.
func TestMCP(t *testing.T) {
	// ada may list the host's Clusters, and so may eve, so the clusters
	// tool must tell apart those they may read.
	f := startClientFleet(t, "mcp", fleetOptions{eveListsClusters: true})
	host, dir, eastKube, westKube, web := f.host, f.dir, f.eastKube, f.westKube, f.web
	ctx := context.Background()
	ada, eve := mcpSession(t, f.ada), mcpSession(t, f.eve)
	memberPods := f.memberPods(t, "mcp", "east", "west")
	eventuallyT(t, func() error {
		var out struct{ Items []map[string]any }
		if err := ada.call("search", map[string]any{"resource": "pods", "labelSelector": "app=mcp"}, &out); err != nil {
			return err
		}
		if got := rowKeys(out.Items); !slices.Equal(got, memberPods) {
			return fmt.Errorf("search has %v, the members %v", got, memberPods)
		}
		return nil
	})

	t.Run("clusters", func(t *testing.T) {
		var out struct {
			Count    int
			Clusters []struct {
				Name, Version   string
				Ready           *bool
				SyncedResources int
			}
		}
		ada.mustCall(t, "clusters", nil, &out)
		if out.Count != 2 || len(out.Clusters) != 2 || out.Clusters[0].Name != "east" || out.Clusters[1].Name != "west" {
			t.Fatalf("clusters %+v", out)
		}
		for _, c := range out.Clusters {
			if c.Ready == nil || !*c.Ready || !strings.HasPrefix(c.Version, "v1.") || c.SyncedResources < 5 {
				t.Errorf("cluster %+v: want Ready, a version and the 5 resources synced", c)
			}
		}
		res, err := ada.session.ReadResource(ctx, &mcp.ReadResourceParams{URI: "panorama://clusters"})
		if err != nil || len(res.Contents) != 1 || !strings.Contains(res.Contents[0].Text, `"name":"west"`) {
			t.Fatalf("the clusters resource: %v %+v", err, res)
		}
	})

	t.Run("search", func(t *testing.T) {
		var page struct {
			Total     *int64
			Count     int
			Kind      string
			Continue  string
			Items     []map[string]any
			Remaining *int64
		}
		ada.mustCall(t, "search", map[string]any{"resource": "po", "labelSelector": "app=mcp", "limit": 2}, &page)
		if page.Total == nil || *page.Total != int64(len(memberPods)) || page.Count != 2 || page.Continue == "" || page.Kind != "Pod" {
			t.Fatalf("first page %+v, want the total %d first, 2 items and a continue token", page, len(memberPods))
		}
		// The row is kubectl get's: the member's columns, not the object.
		if row := page.Items[0]; row["status"] != "Pending" || row["ready"] != "0/1" || row["age"] == nil || row["spec"] != nil {
			t.Errorf("row %v", row)
		}
		seen := rowKeys(page.Items)
		ada.mustCall(t, "search", map[string]any{"resource": "po", "labelSelector": "app=mcp", "limit": 2, "continue": page.Continue}, &page)
		seen = append(seen, rowKeys(page.Items)...)
		if slices.Sort(seen); !slices.Equal(seen, memberPods) {
			t.Errorf("two pages hold %v, the members %v", seen, memberPods)
		}

		// Fields, and more search parameters: fuzzy name, images, clusters.
		var fields struct{ Items []map[string]any }
		ada.mustCall(t, "search", map[string]any{"resource": "pods", "fuzzyName": "art-", "images": []string{"nginx"}, "clusters": []string{"west"},
			"fields": []string{"spec.containers[*].image", "metadata.labels.app"}}, &fields)
		if len(fields.Items) != 1 || fields.Items[0]["cluster"] != "west" || fields.Items[0]["spec.containers[*].image"] != "nginx" ||
			fields.Items[0]["metadata.labels.app"] != "mcp" {
			t.Errorf("west's pods with fields: %v", fields.Items)
		}
		var coll struct{ Items []map[string]any }
		ada.mustCall(t, "search", map[string]any{"collection": "workloads", "namespaces": []string{"shop"}}, &coll)
		if len(coll.Items) != 1 || coll.Items[0]["kind"] != "Deployment" || rowKeys(coll.Items)[0] != "east/shop/"+web.Name {
			t.Errorf("the workloads of shop: %v, want east's Deployment %s", coll.Items, web.Name)
		}
		var owned struct{ Items []map[string]any }
		ada.mustCall(t, "search", map[string]any{"resource": "pods", "ownerName": web.Name, "ownerGR": "deployments.apps", "ownerSeniority": 1}, &owned)
		if got := rowKeys(owned.Items); !slices.Equal(got, []string{"east/shop/" + web.pod.Name}) {
			t.Errorf("the Deployment's grandchildren: %v", got)
		}
	})

	t.Run("count", func(t *testing.T) {
		var out struct {
			Sum    int64
			Groups []struct {
				Group map[string]string
				Count int64
			}
		}
		ada.mustCall(t, "count", map[string]any{"resource": "pods", "labelSelector": "app=mcp", "groupBy": []string{"cluster"}}, &out)
		got := map[string]int64{}
		for _, g := range out.Groups {
			got[g.Group["cluster"]] = g.Count
		}
		want := map[string]int64{}
		for _, k := range memberPods {
			want[strings.Split(k, "/")[0]]++
		}
		if fmt.Sprint(got) != fmt.Sprint(want) || out.Sum != int64(len(memberPods)) {
			t.Errorf("counts %v (sum %d), the members hold %v", got, out.Sum, want)
		}

		// Since when each cluster has pods: every group has a period, and
		// a selector, which the summary cannot answer, is a tool error.
		var periods struct {
			Groups []struct {
				Group     map[string]string
				HeldSince *struct{ Revision int64 }
			}
		}
		ada.mustCall(t, "count", map[string]any{"resource": "pods", "groupBy": []string{"cluster"}, "withHeldSince": true}, &periods)
		for _, g := range periods.Groups {
			if g.HeldSince == nil {
				t.Errorf("cluster %s: no heldSince", g.Group["cluster"])
			}
		}
		if len(periods.Groups) == 0 {
			t.Error("no periods")
		}
		if msg := ada.callError(t, "count", map[string]any{"resource": "pods", "labelSelector": "app=mcp", "groupBy": []string{"cluster"},
			"withHeldSince": true}); !strings.Contains(msg, "withHeldSince") {
			t.Errorf("periods of a selection: %q, want an error naming withHeldSince", msg)
		}
	})

	t.Run("get", func(t *testing.T) {
		member, err := westKube.CoreV1().Pods("shop").Get(ctx, "cart-0", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		var out struct{ Object map[string]any }
		ada.mustCall(t, "get", map[string]any{"cluster": "west", "resource": "pods", "namespace": "shop", "name": "cart-0", "fields": []string{"metadata.uid", "spec.containers[0].image"}}, &out)
		if out.Object["metadata.uid"] != string(member.UID) || out.Object["spec.containers[0].image"] != "nginx" || out.Object["cluster"] != "west" {
			t.Errorf("west's cart-0: %v, the member's uid %s", out.Object, member.UID)
		}
		ada.mustCall(t, "get", map[string]any{"cluster": "west", "resource": "pods", "namespace": "shop", "name": "cart-0"}, &out)
		md, _ := out.Object["metadata"].(map[string]any)
		if md["uid"] != string(member.UID) || md["managedFields"] != nil {
			t.Errorf("the whole object, without managedFields: %v", md)
		}
		if msg := ada.callError(t, "get", map[string]any{"cluster": "west", "resource": "pods", "namespace": "shop", "name": "nothing"}); !strings.HasPrefix(msg, "404 Not Found") || !strings.Contains(msg, `"nothing" not found`) {
			t.Errorf("a pod that does not exist: %q", msg)
		}
	})

	t.Run("history", func(t *testing.T) {
		deployments := eastKube.AppsV1().Deployments("shop")
		three := int32(3)
		cur, err := deployments.Get(ctx, web.Name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		cur.Spec.Replicas = &three
		if _, err := deployments.Update(ctx, cur, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
		ref := map[string]any{"cluster": "east", "resource": "deployments.apps", "namespace": "shop", "name": web.Name}
		var h struct {
			Versions []struct {
				Revision int64
				Type     string
				Changed  []string
			}
			Diff    map[string]any
			Changed []string
		}
		eventuallyT(t, func() error {
			if err := ada.call("history", ref, &h); err != nil {
				return err
			}
			if len(h.Versions) != 2 {
				return fmt.Errorf("versions %+v", h.Versions)
			}
			return nil
		})
		if h.Versions[0].Type != "ADDED" || h.Versions[1].Type != "MODIFIED" || !slices.Contains(h.Versions[1].Changed, "spec.replicas") {
			t.Fatalf("versions %+v: want ADDED, then MODIFIED changing spec.replicas", h.Versions)
		}
		diff := map[string]any{"from": h.Versions[0].Revision, "to": h.Versions[1].Revision}
		for k, v := range ref {
			diff[k] = v
		}
		ada.mustCall(t, "history", diff, &h)
		if spec, _ := h.Diff["spec"].(map[string]any); spec["replicas"] != float64(3) || !slices.Contains(h.Changed, "spec.replicas") {
			t.Errorf("diff %v (changed %v), want spec.replicas 3", h.Diff, h.Changed)
		}
		// asOf: the Deployment as it was at its first revision.
		var then struct{ Object map[string]any }
		ada.mustCall(t, "get", map[string]any{"cluster": "east", "resource": "deploy", "namespace": "shop", "name": web.Name,
			"asOf": fmt.Sprint(h.Versions[0].Revision), "fields": []string{"spec.replicas"}}, &then)
		if then.Object["spec.replicas"] != float64(1) {
			t.Errorf("as of revision %d: %v, want 1 replica", h.Versions[0].Revision, then.Object)
		}
	})

	t.Run("describe", func(t *testing.T) {
		var d struct {
			Kind       string
			Summary    map[string]any
			Conditions []struct{ Type, Status string }
			Owners     []string
			Events     []struct{ Type, Reason, Message string }
			Warnings   []string
		}
		eventuallyT(t, func() error {
			if err := ada.call("describe", map[string]any{"cluster": "east", "resource": "pods", "namespace": "shop", "name": web.pod.Name}, &d); err != nil {
				return err
			}
			if len(d.Events) == 0 {
				return fmt.Errorf("no events yet: %+v", d)
			}
			return nil
		})
		if want := []string{"ReplicaSet/" + web.rs.Name, "Deployment/" + web.Name}; !slices.Equal(d.Owners, want) {
			t.Errorf("owners %v, want %v", d.Owners, want)
		}
		if d.Kind != "Pod" || d.Summary["status"] != "Pending" || len(d.Conditions) != 1 || d.Conditions[0].Type != "PodScheduled" {
			t.Errorf("describe %+v", d)
		}
		if e := d.Events[len(d.Events)-1]; e.Type != "Warning" || e.Reason != "BackOff" || e.Message != web.event.Message {
			t.Errorf("events %+v, want the member's %+v", d.Events, web.event)
		}
	})

	t.Run("a user who may read east only", func(t *testing.T) {
		var cl struct {
			Clusters []struct{ Name string }
		}
		eve.mustCall(t, "clusters", nil, &cl)
		if len(cl.Clusters) != 1 || cl.Clusters[0].Name != "east" {
			t.Errorf("eve's clusters %+v, want east alone", cl.Clusters)
		}
		var page struct {
			Items    []map[string]any
			Warnings []string
		}
		eve.mustCall(t, "search", map[string]any{"resource": "pods", "labelSelector": "app=mcp"}, &page)
		for _, k := range rowKeys(page.Items) {
			if !strings.HasPrefix(k, "east/") {
				t.Errorf("eve reads %s", k)
			}
		}
		if len(page.Items) != 3 {
			t.Errorf("eve's pods %v, want east's 3", page.Items)
		}
		if strings.Contains(fmt.Sprint(page), "west") {
			t.Errorf("the answer names west: %+v", page)
		}
		var counts struct {
			Groups []struct{ Group map[string]string }
		}
		eve.mustCall(t, "count", map[string]any{"resource": "pods", "groupBy": []string{"cluster"}}, &counts)
		if len(counts.Groups) != 1 || counts.Groups[0].Group["cluster"] != "east" {
			t.Errorf("eve's counts %+v", counts.Groups)
		}
		if msg := eve.callError(t, "search", map[string]any{"resource": "pods", "clusters": []string{"west"}}); !strings.HasPrefix(msg, "403 Forbidden") {
			t.Errorf("eve searching west: %q", msg)
		}
		for _, tool := range []string{"get", "describe", "history"} {
			msg := eve.callError(t, tool, map[string]any{"cluster": "west", "resource": "pods", "namespace": "shop", "name": "cart-0"})
			if !strings.HasPrefix(msg, "403 Forbidden") && !strings.HasPrefix(msg, "404 Not Found") {
				t.Errorf("eve's %s of west's cart-0: %q", tool, msg)
			}
		}
	})

	t.Run("streamable HTTP", func(t *testing.T) {
		tokenFile := filepath.Join(dir, "mcp-token")
		if err := os.WriteFile(tokenFile, []byte("s3cret\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		addr := fmt.Sprintf("127.0.0.1:%d", freePort(t))
		p := startProcess(t, "panorama", "mcp", "--kubeconfig", userKubeconfig(t, host, dir, "hal"), "--context", "host", "--http", addr, "--http-token-file", tokenFile)
		url := "http://" + addr + "/mcp"
		eventuallyT(t, func() error {
			if !strings.Contains(p.output(), "serving MCP at "+url) {
				return fmt.Errorf("not serving yet: %s", p.output())
			}
			return nil
		})
		resp, err := http.Post(url, "application/json", strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{}}`))
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusUnauthorized {
			t.Errorf("a caller without the token: %s, want 401", resp.Status)
		}
		client := &http.Client{Transport: bearer{token: "s3cret", base: http.DefaultTransport}}
		cs, err := mcp.NewClient(&mcp.Implementation{Name: "e2e"}, nil).Connect(ctx, &mcp.StreamableClientTransport{Endpoint: url, HTTPClient: client}, nil)
		if err != nil {
			t.Fatal(err)
		}
		defer cs.Close()
		// hal has no grant: the server acts as hal, not as whoever runs it.
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "search", Arguments: map[string]any{"resource": "pods"}})
		if err != nil || !res.IsError || !strings.HasPrefix(toolText(res), "403 Forbidden") || !strings.Contains(toolText(res), `"hal"`) {
			t.Errorf("hal's search over HTTP: %v %s", err, toolText(res))
		}
	})
}

func ptrTo[T any](v T) *T { return &v }

// mcpClient is an MCP client session of `panorama mcp` run on standard
// input and output with a user's kubeconfig.
type mcpClient struct {
	session *mcp.ClientSession
}

// mcpSession starts `panorama mcp` with the host context of kubeconfig
// and connects the SDK's client to it.
func mcpSession(t *testing.T, kubeconfig string) *mcpClient {
	t.Helper()
	cmd := exec.Command(filepath.Join(binDir, "panorama"), "mcp", "--kubeconfig", kubeconfig, "--context", "host")
	stderr := &bytes.Buffer{}
	cmd.Stderr = stderr
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "e2e"}, nil).Connect(context.Background(), &mcp.CommandTransport{Command: cmd}, nil)
	if err != nil {
		t.Fatalf("connecting to panorama mcp: %v\n%s", err, stderr)
	}
	t.Cleanup(func() {
		_ = cs.Close()
		if t.Failed() {
			t.Logf("panorama mcp (%s) stderr:\n%s", filepath.Base(kubeconfig), stderr)
		}
	})
	return &mcpClient{session: cs}
}

// call calls a tool and decodes its structured answer into out; a tool
// error is an error with its text.
func (c *mcpClient) call(tool string, args map[string]any, out any) error {
	res, err := c.session.CallTool(context.Background(), &mcp.CallToolParams{Name: tool, Arguments: args})
	if err != nil {
		return fmt.Errorf("%s: %w", tool, err)
	}
	if res.IsError {
		return fmt.Errorf("%s: tool error: %s", tool, toolText(res))
	}
	b, err := json.Marshal(res.StructuredContent)
	if err != nil {
		return err
	}
	return json.Unmarshal(b, out)
}

func (c *mcpClient) mustCall(t *testing.T, tool string, args map[string]any, out any) {
	t.Helper()
	if err := c.call(tool, args, out); err != nil {
		t.Fatal(err)
	}
}

// callError calls a tool that must answer a tool error, and returns its
// text.
func (c *mcpClient) callError(t *testing.T, tool string, args map[string]any) string {
	t.Helper()
	res, err := c.session.CallTool(context.Background(), &mcp.CallToolParams{Name: tool, Arguments: args})
	if err != nil {
		t.Fatalf("%s %v: a protocol error %v, want a tool error", tool, args, err)
	}
	if !res.IsError {
		t.Fatalf("%s %v answered %v, want an error", tool, args, res.StructuredContent)
	}
	return toolText(res)
}

func toolText(res *mcp.CallToolResult) string {
	if res == nil {
		return ""
	}
	var b strings.Builder
	for _, c := range res.Content {
		if tc, ok := c.(*mcp.TextContent); ok {
			b.WriteString(tc.Text)
		}
	}
	return b.String()
}

// rowKeys are the cluster/namespace/name of search rows, sorted.
func rowKeys(items []map[string]any) []string {
	keys := make([]string, 0, len(items))
	for _, it := range items {
		keys = append(keys, fmt.Sprintf("%v/%v/%v", it["cluster"], it["namespace"], it["name"]))
	}
	slices.Sort(keys)
	return keys
}

// bearer adds a bearer token to every request.
type bearer struct {
	token string
	base  http.RoundTripper
}

func (b bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.token)
	return b.base.RoundTrip(r)
}
