package apiserver

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/duration"

	"github.com/panorama-io/panorama/storage"
)

// column is one Table column and how to fill it from an object.
type column struct {
	def  metav1.TableColumnDefinition
	cell func(u *unstructured.Unstructured) any
}

func col(name, typ string, priority int32, cell func(u *unstructured.Unstructured) any) column {
	return column{def: metav1.TableColumnDefinition{Name: name, Type: typ, Priority: priority}, cell: cell}
}

var (
	clusterColumn = col("Cluster", "string", 0, func(u *unstructured.Unstructured) any { return u.GetAnnotations()[storage.ClusterAnnotation] })
	nameColumn    = column{
		def:  metav1.TableColumnDefinition{Name: "Name", Type: "string", Format: "name", Description: "Name of the object"},
		cell: func(u *unstructured.Unstructured) any { return u.GetName() },
	}
	ageColumn = col("Age", "string", 0, func(u *unstructured.Unstructured) any { return age(u.GetCreationTimestamp()) })
)

// builtinColumns are the columns kubectl shows for the built-in kinds
// against kube-apiserver, between NAME and AGE (wide ones have priority 1).
var builtinColumns = map[schema.GroupResource][]column{
	{Resource: "pods"}: {
		col("Ready", "string", 0, func(u *unstructured.Unstructured) any {
			statuses := slice(u, "status", "containerStatuses")
			ready := 0
			for _, s := range statuses {
				if b, _ := s["ready"].(bool); b {
					ready++
				}
			}
			return fmt.Sprintf("%d/%d", ready, len(slice(u, "spec", "containers")))
		}),
		col("Status", "string", 0, podStatus),
		col("Restarts", "string", 0, func(u *unstructured.Unstructured) any {
			var n int64
			for _, s := range slice(u, "status", "containerStatuses") {
				c, _ := s["restartCount"].(int64)
				n += c
			}
			return fmt.Sprint(n)
		}),
		ageColumn,
		col("IP", "string", 1, str("<none>", "status", "podIP")),
		col("Node", "string", 1, str("<none>", "spec", "nodeName")),
	},
	{Group: "apps", Resource: "deployments"}: {
		col("Ready", "string", 0, func(u *unstructured.Unstructured) any {
			return fmt.Sprintf("%d/%d", integer(u, "status", "readyReplicas"), integer(u, "spec", "replicas"))
		}),
		col("Up-to-date", "integer", 0, func(u *unstructured.Unstructured) any { return integer(u, "status", "updatedReplicas") }),
		col("Available", "integer", 0, func(u *unstructured.Unstructured) any { return integer(u, "status", "availableReplicas") }),
		ageColumn,
		col("Containers", "string", 1, containerField("name")),
		col("Images", "string", 1, containerField("image")),
	},
	{Group: "apps", Resource: "replicasets"}: {
		col("Desired", "integer", 0, func(u *unstructured.Unstructured) any { return integer(u, "spec", "replicas") }),
		col("Current", "integer", 0, func(u *unstructured.Unstructured) any { return integer(u, "status", "replicas") }),
		col("Ready", "integer", 0, func(u *unstructured.Unstructured) any { return integer(u, "status", "readyReplicas") }),
		ageColumn,
	},
	{Group: "apps", Resource: "statefulsets"}: {
		col("Ready", "string", 0, func(u *unstructured.Unstructured) any {
			return fmt.Sprintf("%d/%d", integer(u, "status", "readyReplicas"), integer(u, "spec", "replicas"))
		}),
		ageColumn,
	},
	{Group: "apps", Resource: "daemonsets"}: {
		col("Desired", "integer", 0, func(u *unstructured.Unstructured) any { return integer(u, "status", "desiredNumberScheduled") }),
		col("Current", "integer", 0, func(u *unstructured.Unstructured) any { return integer(u, "status", "currentNumberScheduled") }),
		col("Ready", "integer", 0, func(u *unstructured.Unstructured) any { return integer(u, "status", "numberReady") }),
		col("Up-to-date", "integer", 0, func(u *unstructured.Unstructured) any { return integer(u, "status", "updatedNumberScheduled") }),
		col("Available", "integer", 0, func(u *unstructured.Unstructured) any { return integer(u, "status", "numberAvailable") }),
		ageColumn,
	},
	{Resource: "services"}: {
		col("Type", "string", 0, str("ClusterIP", "spec", "type")),
		col("Cluster-IP", "string", 0, str("<none>", "spec", "clusterIP")),
		col("Port(s)", "string", 0, func(u *unstructured.Unstructured) any {
			var ports []string
			for _, p := range slice(u, "spec", "ports") {
				port, _ := p["port"].(int64)
				proto, _ := p["protocol"].(string)
				ports = append(ports, fmt.Sprintf("%d/%s", port, proto))
			}
			if len(ports) == 0 {
				return "<none>"
			}
			return strings.Join(ports, ",")
		}),
		ageColumn,
	},
	{Resource: "namespaces"}: {col("Status", "string", 0, str("", "status", "phase")), ageColumn},
	{Resource: "nodes"}: {
		col("Status", "string", 0, func(u *unstructured.Unstructured) any {
			for _, c := range slice(u, "status", "conditions") {
				if c["type"] == "Ready" {
					if c["status"] == "True" {
						return "Ready"
					}
					return "NotReady"
				}
			}
			return "Unknown"
		}),
		ageColumn,
		col("Version", "string", 0, str("", "status", "nodeInfo", "kubeletVersion")),
	},
	{Resource: "configmaps"}: {
		col("Data", "integer", 0, func(u *unstructured.Unstructured) any {
			d, _, _ := unstructured.NestedMap(u.Object, "data")
			b, _, _ := unstructured.NestedMap(u.Object, "binaryData")
			return int64(len(d) + len(b))
		}),
		ageColumn,
	},
	{Resource: "events"}:                         eventColumns,
	{Group: "events.k8s.io", Resource: "events"}: eventColumns,
	{Resource: "secrets"}: {
		col("Type", "string", 0, str("", "type")),
		col("Data", "integer", 0, func(u *unstructured.Unstructured) any {
			d, _, _ := unstructured.NestedMap(u.Object, "data")
			return int64(len(d))
		}),
		ageColumn,
	},
}

// eventColumns are kubectl's for Events, which kube-apiserver prints
// alike for both APIs: core/v1 says involvedObject and message where
// events.k8s.io says regarding and note.
var eventColumns = []column{
	col("Last Seen", "string", 0, func(u *unstructured.Unstructured) any { return age(metav1.NewTime(storage.EventLastSeen(u))) }),
	col("Type", "string", 0, str("", "type")),
	col("Reason", "string", 0, str("", "reason")),
	col("Object", "string", 0, func(u *unstructured.Unstructured) any {
		ref, found, _ := unstructured.NestedStringMap(u.Object, "involvedObject")
		if !found {
			ref, _, _ = unstructured.NestedStringMap(u.Object, "regarding")
		}
		return strings.ToLower(ref["kind"]) + "/" + ref["name"]
	}),
	col("Message", "string", 0, func(u *unstructured.Unstructured) any {
		if m := str("", "message")(u); m != "" {
			return m
		}
		return str("", "note")(u)
	}),
}

// columnsFor returns the full column set of a resource in the view of
// cluster ("" across clusters): CLUSTER, NAME, then the kind's own:
// kubectl's for built-in kinds, for custom ones the CRD printer columns of
// the view's clusters agree on (crdcolumns.go), or else AGE.
func (h *Handler) columnsFor(ctx context.Context, gvr schema.GroupVersionResource, cluster string) []column {
	cols := []column{clusterColumn, nameColumn}
	if own, ok := builtinColumns[gvr.GroupResource()]; ok {
		return append(cols, own...)
	}
	if own := h.crds.columns(ctx, gvr, h.viewServing(gvr, cluster)); len(own) > 0 {
		return append(cols, own...) // as kube-apiserver: a CRD that lists columns gets no AGE of its own
	}
	return append(cols, ageColumn)
}

// viewServing are the clusters whose CRDs make the columns of gvr in the
// view of cluster: it alone, as its own CRD says, or across clusters
// every cluster serving gvr.
func (h *Handler) viewServing(gvr schema.GroupVersionResource, cluster string) []string {
	serving := h.registry.serving(gvr)
	if slices.Contains(serving, cluster) {
		return []string{cluster}
	}
	return serving
}

// table renders objects as a meta.k8s.io/v1 Table. includeObject is None,
// Metadata (default) or Object, as for kube-apiserver.
func table(cols []column, objs [][]byte, includeObject string, withColumns bool) (*metav1.Table, error) {
	t := tableHead(cols, withColumns)
	for _, data := range objs {
		row, err := tableRow(cols, data, includeObject)
		if err != nil {
			return nil, err
		}
		t.Rows = append(t.Rows, row)
	}
	return t, nil
}

// tableHead is a Table without rows.
func tableHead(cols []column, withColumns bool) *metav1.Table {
	t := &metav1.Table{TypeMeta: metav1.TypeMeta{Kind: "Table", APIVersion: "meta.k8s.io/v1"}, Rows: []metav1.TableRow{}}
	if withColumns {
		for _, c := range cols {
			t.ColumnDefinitions = append(t.ColumnDefinitions, c.def)
		}
	}
	return t
}

// tableRow is the row of one object.
func tableRow(cols []column, data []byte, includeObject string) (metav1.TableRow, error) {
	u := &unstructured.Unstructured{}
	if err := u.UnmarshalJSON(data); err != nil {
		return metav1.TableRow{}, err
	}
	row := metav1.TableRow{Cells: make([]any, len(cols))}
	for i, c := range cols {
		row.Cells[i] = c.cell(u)
	}
	switch includeObject {
	case "None":
	case "Object":
		row.Object = runtime.RawExtension{Raw: data}
	default:
		meta := map[string]any{
			"kind": "PartialObjectMetadata", "apiVersion": "meta.k8s.io/v1",
			"metadata": u.Object["metadata"],
		}
		raw, err := (&unstructured.Unstructured{Object: meta}).MarshalJSON()
		if err != nil {
			return metav1.TableRow{}, err
		}
		row.Object = runtime.RawExtension{Raw: raw}
	}
	return row, nil
}

func age(t metav1.Time) string {
	if t.IsZero() {
		return "<unknown>"
	}
	return duration.HumanDuration(time.Since(t.Time))
}

func podStatus(u *unstructured.Unstructured) any {
	if u.GetDeletionTimestamp() != nil {
		return "Terminating"
	}
	reason, _, _ := unstructured.NestedString(u.Object, "status", "reason")
	if reason == "" {
		reason, _, _ = unstructured.NestedString(u.Object, "status", "phase")
	}
	for _, s := range slice(u, "status", "containerStatuses") {
		if w, ok := s["state"].(map[string]any)["waiting"].(map[string]any); ok {
			if r, _ := w["reason"].(string); r != "" {
				return r
			}
		}
		if t, ok := s["state"].(map[string]any)["terminated"].(map[string]any); ok {
			if r, _ := t["reason"].(string); r != "" {
				return r
			}
		}
	}
	if reason == "" {
		return "Unknown"
	}
	return reason
}

func slice(u *unstructured.Unstructured, path ...string) []map[string]any {
	items, _, _ := unstructured.NestedSlice(u.Object, path...)
	out := make([]map[string]any, 0, len(items))
	for _, it := range items {
		if m, ok := it.(map[string]any); ok {
			out = append(out, m)
		}
	}
	return out
}

func integer(u *unstructured.Unstructured, path ...string) int64 {
	v, _, _ := unstructured.NestedInt64(u.Object, path...)
	return v
}

// str reads the string at path, or def.
func str(def string, path ...string) func(u *unstructured.Unstructured) any {
	return func(u *unstructured.Unstructured) any {
		if v, _, _ := unstructured.NestedString(u.Object, path...); v != "" {
			return v
		}
		return def
	}
}

func containerField(field string) func(u *unstructured.Unstructured) any {
	return func(u *unstructured.Unstructured) any {
		var out []string
		for _, c := range slice(u, "spec", "template", "spec", "containers") {
			if v, _ := c[field].(string); v != "" {
				out = append(out, v)
			}
		}
		return strings.Join(out, ",")
	}
}
