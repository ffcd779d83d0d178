package mcpserver

import (
	"encoding/json"
	"fmt"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/jsonpath"

	"github.com/panorama-io/panorama/internal/viewclient"
)

// Answers are compact by default: an agent pays for every token it reads,
// so a list item is the row kubectl get prints (the member's printer
// columns, as the view's Table has them) keyed by lowercased column name,
// and an object only the fields asked for.

// compactRows turns a Table into one map per row: cluster, namespace and
// name from the row's object, then every column of priority 0 (what
// kubectl get shows without -o wide), keyed by its name in lower case.
func compactRows(t *metav1.Table) ([]map[string]any, error) {
	rows := make([]map[string]any, 0, len(t.Rows))
	for _, r := range t.Rows {
		row := map[string]any{}
		if len(r.Object.Raw) > 0 {
			var m metav1.PartialObjectMetadata
			if err := json.Unmarshal(r.Object.Raw, &m); err != nil {
				return nil, fmt.Errorf("decoding a row's object: %w", err)
			}
			if c := m.Annotations[viewclient.ClusterAnnotation]; c != "" {
				row["cluster"] = c
			}
			if m.Namespace != "" {
				row["namespace"] = m.Namespace
			}
			row["name"] = m.Name
		}
		for i, c := range t.ColumnDefinitions {
			if c.Priority != 0 || i >= len(r.Cells) {
				continue
			}
			row[strings.ToLower(c.Name)] = r.Cells[i]
		}
		rows = append(rows, row)
	}
	return rows, nil
}

// fieldPath turns what an agent writes for a field into a kubectl
// JSONPath template: "status.phase", ".status.phase" and
// "{.status.phase}" are one field.
func fieldPath(field string) string {
	f := strings.TrimSpace(field)
	if strings.HasPrefix(f, "{") {
		return f
	}
	return "{." + strings.TrimPrefix(f, ".") + "}"
}

// selectFields picks fields of obj (decoded JSON), by kubectl's JSONPath
// (k8s.io/client-go/util/jsonpath): each field its value, a list when the
// path matches several (spec.containers[*].image), absent when none. The
// identity of the object (cluster, namespace, name) always comes along.
func selectFields(obj map[string]any, fields []string) (map[string]any, error) {
	out := identity(obj)
	for _, f := range fields {
		jp := jsonpath.New(f).AllowMissingKeys(true)
		if err := jp.Parse(fieldPath(f)); err != nil {
			return nil, viewclient.BadInput(fmt.Sprintf("field %q: %v", f, err))
		}
		values, err := find(jp, obj)
		if err != nil {
			return nil, viewclient.BadInput(fmt.Sprintf("field %q: %v", f, err))
		}
		switch len(values) {
		case 0:
		case 1:
			out[f] = values[0]
		default:
			out[f] = values
		}
	}
	return out, nil
}

// find is the values jp finds in obj. client-go's jsonpath panics on
// some templates it parses ({.$range}{range}): an agent's field is
// refused rather than the server ended.
func find(jp *jsonpath.JSONPath, obj map[string]any) (values []any, err error) {
	defer func() {
		if r := recover(); r != nil {
			values, err = nil, fmt.Errorf("cannot be evaluated: %v", r)
		}
	}()
	results, err := jp.FindResults(obj)
	if err != nil {
		return nil, err
	}
	for _, rs := range results {
		for _, r := range rs {
			values = append(values, r.Interface())
		}
	}
	return values, nil
}

// identity is who obj is: its cluster, namespace and name.
func identity(obj map[string]any) map[string]any {
	out := map[string]any{}
	md, _ := obj["metadata"].(map[string]any)
	if ann, ok := md["annotations"].(map[string]any); ok && ann[viewclient.ClusterAnnotation] != nil {
		out["cluster"] = ann[viewclient.ClusterAnnotation]
	}
	if ns, ok := md["namespace"].(string); ok && ns != "" {
		out["namespace"] = ns
	}
	out["name"] = md["name"]
	return out
}

// noisyAnnotations are annotations that repeat what the object says
// elsewhere or say nothing to a reader.
var noisyAnnotations = []string{"kubectl.kubernetes.io/last-applied-configuration"}

// trimObject drops from obj what no reader asks for: managedFields and
// the last applied configuration (a second copy of the object).
func trimObject(obj map[string]any) map[string]any {
	md, ok := obj["metadata"].(map[string]any)
	if !ok {
		return obj
	}
	delete(md, "managedFields")
	if ann, ok := md["annotations"].(map[string]any); ok {
		for _, a := range noisyAnnotations {
			delete(ann, a)
		}
		if len(ann) == 0 {
			delete(md, "annotations")
		}
	}
	return obj
}

// shapeObject is an object as an answer gives it: the fields asked for,
// else all of it trimmed.
func shapeObject(obj map[string]any, fields []string) (map[string]any, error) {
	if len(fields) > 0 {
		return selectFields(obj, fields)
	}
	return trimObject(obj), nil
}
