package apiserver

import (
	"context"
	"fmt"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	searchv1alpha1 "github.com/panorama-io/panorama/apis/search/v1alpha1"
	"github.com/panorama-io/panorama/storage"
)

// printerColumnSpec is one additionalPrinterColumn of a test CRD.
type printerColumnSpec struct{ name, typ, jsonPath string }

// putWidgetsCRD stores cluster's CRD of widgets (example.com/v1) with
// columns.
func putWidgetsCRD(t *testing.T, s storage.Interface, cluster string, columns ...printerColumnSpec) {
	t.Helper()
	var specs []any
	for _, c := range columns {
		specs = append(specs, map[string]any{"name": c.name, "type": c.typ, "jsonPath": c.jsonPath})
	}
	u := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
		"metadata": map[string]any{"name": "widgets.example.com", "resourceVersion": "1", "uid": cluster + "-widgets"},
		"spec": map[string]any{"group": "example.com", "scope": "Namespaced",
			"names": map[string]any{"plural": "widgets", "kind": "Widget", "listKind": "WidgetList", "singular": "widget"},
			"versions": []any{map[string]any{"name": "v1", "served": true, "storage": true,
				"additionalPrinterColumns": specs}}},
	}}
	if _, err := s.ForCluster(cluster, storage.Unfenced).Apply(context.Background(), storage.CRDResource, []storage.Change{storage.Upsert(u)}); err != nil {
		t.Fatal(err)
	}
}

func putWidget(t *testing.T, s storage.Interface, cluster, name, phase, password string) {
	t.Helper()
	putObject(t, s, cluster, widgetsGVR, map[string]any{"apiVersion": "example.com/v1", "kind": "Widget",
		"metadata": map[string]any{"name": name, "namespace": "ns", "resourceVersion": "1", "uid": cluster + name},
		"spec":     map[string]any{"password": password}, "status": map[string]any{"phase": phase}})
}

// widgetsTable reads the Table of widgets from server srv in view: its
// column names and each row's cells by column, keyed by cluster/name.
func widgetsTable(t *testing.T, srv, view string) ([]string, map[string]map[string]any) {
	t.Helper()
	var body metav1.Table
	code, _ := getAs(t, srv+searchv1alpha1.ViewPath(view)+"/apis/example.com/v1/widgets", "", tableContentType, &body)
	if code != 200 {
		t.Fatalf("Table of widgets in view %q: %d", view, code)
	}
	var cols []string
	for _, c := range body.ColumnDefinitions {
		cols = append(cols, c.Name)
	}
	rows := map[string]map[string]any{}
	for _, r := range body.Rows {
		cells := map[string]any{}
		for i, c := range cols {
			cells[c] = r.Cells[i]
		}
		rows[fmt.Sprint(cells["Cluster"], "/", cells["Name"])] = cells
	}
	return cols, rows
}

// TestCRDColumnsPerCluster: each row of a custom resource's Table is
// filled by its own cluster's CRD, and the Table shows only the columns
// every cluster serving the resource defines alike. Cluster aaa (first by
// name and by age) defines Phase to read spec.password, and a column
// Leaked; east's rows never show either reading of east's password.
func TestCRDColumnsPerCluster(t *testing.T) {
	h, store := testHandler(t)
	srv := httptest.NewServer(asUser(h))
	t.Cleanup(srv.Close)
	for _, c := range []string{"aaa", "east", "west"} {
		h.registry.Set(clusterServing(c, widgetsGVR, "Widget"))
	}
	own := []printerColumnSpec{{"Phase", "string", ".status.phase"}, {"Age", "date", ".metadata.creationTimestamp"}}
	putWidgetsCRD(t, store, "east", own...)
	putWidgetsCRD(t, store, "west", own...)
	putWidget(t, store, "east", "w1", "Running", "hunter2")
	putWidget(t, store, "west", "w2", "Pending", "swordfish")

	// No CRD stored for aaa yet: it has no say.
	if cols, rows := widgetsTable(t, srv.URL, ""); strings.Join(cols, ",") != "Cluster,Name,Phase,Age" ||
		rows["east/w1"]["Phase"] != "Running" || rows["west/w2"]["Phase"] != "Pending" {
		t.Fatalf("clusters that agree: columns %v, rows %v", cols, rows)
	}

	putWidgetsCRD(t, store, "aaa", printerColumnSpec{"Phase", "string", ".spec.password"}, printerColumnSpec{"Leaked", "string", ".spec.password"})
	putWidget(t, store, "aaa", "w0", "Evil", "aaa's own")
	// A server that has read no CRD yet, as this one 30 s later.
	later := httptest.NewServer(asUser(&Handler{registry: h.registry, store: h.store, cache: h.cache, crds: crdColumns{store: h.store}, authz: h.authz}))
	t.Cleanup(later.Close)
	cols, rows := widgetsTable(t, later.URL, "")
	if strings.Join(cols, ",") != "Cluster,Name,Phase" {
		t.Errorf("columns %v, want only those every cluster defines alike", cols)
	}
	if rows["east/w1"]["Phase"] != "Running" || rows["west/w2"]["Phase"] != "Pending" || rows["aaa/w0"]["Phase"] != "aaa's own" {
		t.Errorf("rows %v, want each cluster's Phase by its own JSONPath", rows)
	}
	for key, cells := range rows {
		for col, v := range cells {
			if v == "hunter2" || v == "swordfish" {
				t.Errorf("row %s shows a password in column %s", key, col)
			}
		}
	}
	// A cluster's own view shows its own CRD's columns, whatever others say.
	if cols, rows := widgetsTable(t, later.URL, "east"); strings.Join(cols, ",") != "Cluster,Name,Phase,Age" || rows["east/w1"]["Phase"] != "Running" {
		t.Errorf("east's view: columns %v, rows %v, want east's own columns", cols, rows)
	}
}

// TestCRDColumnsWithControlCharacters: a member's column named with an
// escape sequence, which kube-apiserver accepts and printers write to
// terminals as is, is left out of the Table.
func TestCRDColumnsWithControlCharacters(t *testing.T) {
	h, store := testHandler(t)
	srv := httptest.NewServer(asUser(h))
	t.Cleanup(srv.Close)
	h.registry.Set(clusterServing("east", widgetsGVR, "Widget"))
	putWidgetsCRD(t, store, "east", printerColumnSpec{"Phase", "string", ".status.phase"},
		printerColumnSpec{"x\x1b]0;pwned\x07\x1b[2J", "string", ".status.phase"}, printerColumnSpec{"Tab\tbed", "string", ".status.phase"})
	putWidget(t, store, "east", "w1", "Running", "hunter2")
	if cols, rows := widgetsTable(t, srv.URL, "east"); strings.Join(cols, ",") != "Cluster,Name,Phase" || rows["east/w1"]["Phase"] != "Running" {
		t.Errorf("columns %q, rows %v, want Phase alone", cols, rows)
	}
}

// TestCRDColumnsConcurrent: Table rows of one column are filled
// concurrently, each evaluation with a JSONPath parser of its own. Each
// cell here prints a value whose String waits until the other cell is
// being printed too: under a lock shared by the two (a parser not safe
// for concurrent use, guarded), the second never starts, and the test
// deadlocks (go test's -timeout fails it); under -race, a shared parser
// without a lock is reported.
func TestCRDColumnsConcurrent(t *testing.T) {
	h, store := testHandler(t)
	h.registry.Set(clusterServing("east", widgetsGVR, "Widget"))
	putWidgetsCRD(t, store, "east", printerColumnSpec{"Phase", "string", ".status.phase"})
	cols := h.columnsFor(context.Background(), widgetsGVR, "")
	phase := cols[len(cols)-1]
	if phase.def.Name != "Phase" {
		t.Fatalf("columns %v", cols)
	}

	a, b := newRendezvous(), newRendezvous()
	var wg sync.WaitGroup
	got := make([]any, 2)
	for i, r := range []*waitingValue{{a, b}, {b, a}} {
		wg.Go(func() {
			u := &unstructured.Unstructured{Object: map[string]any{
				"metadata": map[string]any{"annotations": map[string]any{storage.ClusterAnnotation: "east"}},
				"status":   map[string]any{"phase": r},
			}}
			got[i] = phase.cell(u)
		})
	}
	wg.Wait()
	if got[0] != "printed" || got[1] != "printed" {
		t.Fatalf("cells %v", got)
	}
}

// rendezvous is closed when a value starts printing.
type rendezvous chan struct{}

func newRendezvous() rendezvous { return make(rendezvous) }

// waitingValue prints once the other value is being printed. (A pointer,
// which JSONPath prints as text: a struct it would print as JSON.)
type waitingValue struct{ own, other rendezvous }

func (v *waitingValue) String() string {
	close(v.own)
	<-v.other
	return "printed"
}
