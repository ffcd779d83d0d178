package kubectlplugin

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/spf13/cobra"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"

	searchv1alpha1 "github.com/panorama-io/panorama/apis/search/v1alpha1"
)

// printed is what the flags args make of a table.
func printed(t *testing.T, table *metav1.Table, withNamespace bool, args ...string) string {
	t.Helper()
	cmd := &cobra.Command{}
	p := addPrintFlags(cmd, true)
	if err := cmd.ParseFlags(args); err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	if err := p.printTable(table, withNamespace, &out); err != nil {
		t.Fatal(err)
	}
	return out.String()
}

// serverTable is a Table as a view answers it: the member's columns with
// CLUSTER, rows carrying their objects' metadata.
func serverTable(t *testing.T) *metav1.Table {
	t.Helper()
	row := func(cluster, ns, name, app string) metav1.TableRow {
		meta, _ := json.Marshal(map[string]any{"kind": "PartialObjectMetadata", "apiVersion": "meta.k8s.io/v1",
			"metadata": map[string]any{"name": name, "namespace": ns, "labels": map[string]string{"app": app}}})
		return metav1.TableRow{Cells: []any{cluster, name, "Running", "node-" + cluster}, Object: runtime.RawExtension{Raw: meta}}
	}
	return &metav1.Table{
		ColumnDefinitions: []metav1.TableColumnDefinition{
			{Name: "Cluster", Type: "string"}, {Name: "Name", Type: "string", Format: "name"},
			{Name: "Status", Type: "string"}, {Name: "Node", Type: "string", Priority: 1},
		},
		Rows: []metav1.TableRow{row("east", "shop", "web-1", "web"), row("west", "bank", "web-2", "api")},
	}
}

func TestPrintTable(t *testing.T) {
	for _, tc := range []struct {
		name          string
		args          []string
		withNamespace bool
		want          string
	}{
		{name: "default", want: "" +
			"CLUSTER   NAME    STATUS\n" +
			"east      web-1   Running\n" +
			"west      web-2   Running\n"},
		{name: "wide, all namespaces", args: []string{"-o", "wide"}, withNamespace: true, want: "" +
			"NAMESPACE   CLUSTER   NAME    STATUS    NODE\n" +
			"shop        east      web-1   Running   node-east\n" +
			"bank        west      web-2   Running   node-west\n"},
		{name: "no headers, labels", args: []string{"--no-headers", "--show-labels"}, want: "" +
			"east   web-1   Running   app=web\n" +
			"west   web-2   Running   app=api\n"},
		{name: "label columns", args: []string{"-L", "app"}, want: "" +
			"CLUSTER   NAME    STATUS    APP\n" +
			"east      web-1   Running   web\n" +
			"west      web-2   Running   api\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := printed(t, serverTable(t), tc.withNamespace, tc.args...); got != tc.want {
				t.Errorf("got\n%s\nwant\n%s", got, tc.want)
			}
		})
	}
}

// history is an object's History: created with one replica, scaled to 3.
func history(t *testing.T) *searchv1alpha1.History {
	t.Helper()
	added := `{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"web","namespace":"shop","resourceVersion":"10",` +
		`"annotations":{"panorama.io/member-resource-version":"m1"}},"spec":{"replicas":1}}`
	scaled := `{"metadata":{"resourceVersion":"20","annotations":{"panorama.io/member-resource-version":"m2"}},"spec":{"replicas":3}}`
	at := func(s string) *metav1.MicroTime {
		tm, err := time.Parse(time.RFC3339, s)
		if err != nil {
			t.Fatal(err)
		}
		return &metav1.MicroTime{Time: tm}
	}
	return &searchv1alpha1.History{Items: []searchv1alpha1.HistoryItem{
		{Revision: 10, Time: at("2026-12-01T10:00:00Z"), Type: watch.Added, MemberResourceVersion: "m1", Patch: json.RawMessage(added)},
		{Revision: 20, Time: at("2026-12-01T11:00:00Z"), Type: watch.Modified, MemberResourceVersion: "m2", Patch: json.RawMessage(scaled)},
	}}
}

func TestHistoryTable(t *testing.T) {
	table, err := historyTable(history(t))
	if err != nil {
		t.Fatal(err)
	}
	want := "" +
		"REVISION   TIME                   TYPE       MEMBER RV   CHANGED PATHS\n" +
		"10         2026-12-01T10:00:00Z   ADDED      m1          \n" +
		"20         2026-12-01T11:00:00Z   MODIFIED   m2          spec.replicas\n"
	if got := printed(t, table, false); got != want {
		t.Errorf("got\n%s\nwant\n%s", got, want)
	}
}

func TestDiffOfTwoVersions(t *testing.T) {
	h := history(t)
	from, err := revisionOf(h, "2026-12-01T10:30:00Z")
	if err != nil || from != 10 {
		t.Fatalf("the version at 10:30 is revision %d (%v), want 10", from, err)
	}
	a, err := yamlAt(h, from)
	if err != nil {
		t.Fatal(err)
	}
	b, err := yamlAt(h, 20)
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	if err := writeDiff(&out, a, b, "east:web@10", "east:web@20"); !errors.Is(err, errDiffers) {
		t.Fatal(err)
	}
	want := "" +
		"--- east:web@10\n" +
		"+++ east:web@20\n" +
		"@@ -4,4 +4,4 @@\n" +
		"   name: web\n" +
		"   namespace: shop\n" +
		" spec:\n" +
		"-  replicas: 1\n" +
		"+  replicas: 3\n"
	if got := out.String(); got != want {
		t.Errorf("got\n%s\nwant\n%s", got, want)
	}
	// Before its first version the object did not exist: all of it is new.
	none, err := yamlAt(h, 9)
	if err != nil || none != "" {
		t.Errorf("before revision 10: %q, %v", none, err)
	}
	if _, err := revisionOf(h, "2026-11-30T00:00:00Z"); err == nil || !strings.Contains(err.Error(), "no version") {
		t.Errorf("a time before every version: %v", err)
	}
}

// TestCustomColumns: -o custom-columns and custom-columns-file print as
// kubectl get's do, a member's terminal escapes escaped, and an unknown
// -o names every format the plugin takes.
func TestCustomColumns(t *testing.T) {
	list := &unstructured.UnstructuredList{Object: map[string]any{"kind": "List", "apiVersion": "v1"}}
	for _, pod := range []struct{ cluster, name, image string }{{"east", "web-1", "nginx:1.27"}, {"west", "web-2", "evil\x1b[31m\nforged\a\u009b2J"}} {
		list.Items = append(list.Items, unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "Pod",
			"metadata": map[string]any{"name": pod.name, "annotations": map[string]any{"panorama.io/cluster": pod.cluster}},
			"spec":     map[string]any{"containers": []any{map[string]any{"name": "c", "image": pod.image}, map[string]any{"name": "d", "image": "busybox"}}}}})
	}
	file := filepath.Join(t.TempDir(), "columns")
	if err := os.WriteFile(file, []byte("NAME          IMAGES\n.metadata.name   .spec.containers[*].image\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	print := func(args ...string) (string, error) {
		cmd := &cobra.Command{}
		p := addPrintFlags(cmd, true)
		if err := cmd.ParseFlags(args); err != nil {
			t.Fatal(err)
		}
		var out bytes.Buffer
		err := p.printObject(list, &out)
		return out.String(), err
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"-o", `custom-columns=CLUSTER:.metadata.annotations.panorama\.io/cluster,NAME:.metadata.name,IMAGES:.spec.containers[*].image`}, "" +
			"CLUSTER   NAME    IMAGES\n" +
			"east      web-1   nginx:1.27,busybox\n" +
			"west      web-2   evil^[[31m?forged??2J,busybox\n"},
		{[]string{"-o", "custom-columns=NAME:.metadata.name", "--no-headers"}, "web-1\nweb-2\n"},
		{[]string{"-o", "custom-columns-file", "--template", file}, "" +
			"NAME    IMAGES\n" +
			"web-1   nginx:1.27,busybox\n" +
			"web-2   evil^[[31m?forged??2J,busybox\n"},
	} {
		if got, err := print(tc.args...); err != nil || got != tc.want {
			t.Errorf("%q: %v\n%s\nwant\n%s", tc.args, err, got, tc.want)
		}
	}
	// Counts and History are decoded whole: their items are still rows.
	counts := &unstructured.Unstructured{Object: map[string]any{"kind": "Counts", "apiVersion": "search.panorama.io/v1alpha1",
		"items": []any{map[string]any{"group": map[string]any{"cluster": "east"}, "count": int64(3)}, map[string]any{"group": map[string]any{"cluster": "west\nforged"}, "count": int64(1)}}}}
	cmd := &cobra.Command{}
	p := addPrintFlags(cmd, false)
	if err := cmd.ParseFlags([]string{"-o", "custom-columns=CLUSTER:.group.cluster,COUNT:.count"}); err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	if err := p.printObject(counts, &out); err != nil || out.String() != "CLUSTER       COUNT\neast          3\nwest?forged   1\n" {
		t.Errorf("counts as custom columns: %v\n%s", err, out.String())
	}
	_, err := print("-o", "columns")
	if err == nil || !strings.Contains(err.Error(), "custom-columns-file") || !strings.Contains(err.Error(), "jsonpath") {
		t.Errorf("-o columns: %v", err)
	}
}
