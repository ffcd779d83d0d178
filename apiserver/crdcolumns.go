package apiserver

import (
	"bytes"
	"context"
	"fmt"
	"sync"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/util/jsonpath"

	"github.com/panorama-io/panorama/storage"
)

// crdColumnsTTL bounds how stale a CRD's columns may be.
const crdColumnsTTL = 30 * time.Second

// crdColumns finds the additionalPrinterColumns of custom resources in the
// CRDs stored for their clusters (synced with syncAllCustomResources).
type crdColumns struct {
	store storage.Interface
	mu    sync.Mutex
	cache map[schema.GroupVersionResource]crdColumnsEntry
}

type crdColumnsEntry struct {
	columns []column
	found   bool
	at      time.Time
}

func (c *crdColumns) columns(ctx context.Context, gvr schema.GroupVersionResource) ([]column, bool) {
	c.mu.Lock()
	e, ok := c.cache[gvr]
	c.mu.Unlock()
	if ok && time.Since(e.at) < crdColumnsTTL {
		return e.columns, e.found
	}
	e = crdColumnsEntry{at: time.Now()}
	page, err := c.store.List(ctx, &storage.ListQuery{GVR: storage.CRDResource, Names: []string{gvr.Resource + "." + gvr.Group}, Limit: 1})
	if err == nil && len(page.Objects) > 0 {
		e.columns, e.found = printerColumns(page.Objects[0].Data, gvr.Version)
	}
	c.mu.Lock()
	if c.cache == nil {
		c.cache = map[schema.GroupVersionResource]crdColumnsEntry{}
	}
	c.cache[gvr] = e
	c.mu.Unlock()
	return e.columns, e.found
}

// printerColumns reads a CRD's additionalPrinterColumns of one version, as
// kube-apiserver's table convertor uses them: JSONPath cells, dates as ages.
func printerColumns(crd []byte, version string) ([]column, bool) {
	u := &unstructured.Unstructured{}
	if err := u.UnmarshalJSON(crd); err != nil {
		return nil, false
	}
	versions, _, _ := unstructured.NestedSlice(u.Object, "spec", "versions")
	for _, v := range versions {
		vm, _ := v.(map[string]any)
		if vm["name"] != version {
			continue
		}
		specs, _, _ := unstructured.NestedSlice(vm, "additionalPrinterColumns")
		var out []column
		for _, s := range specs {
			sm, _ := s.(map[string]any)
			name, _ := sm["name"].(string)
			typ, _ := sm["type"].(string)
			format, _ := sm["format"].(string)
			desc, _ := sm["description"].(string)
			path, _ := sm["jsonPath"].(string)
			priority, _ := sm["priority"].(int64)
			jp := jsonpath.New(name).AllowMissingKeys(true)
			if err := jp.Parse(fmt.Sprintf("{%s}", path)); err != nil {
				continue
			}
			out = append(out, column{
				def:  metav1.TableColumnDefinition{Name: name, Type: typ, Format: format, Description: desc, Priority: int32(priority)},
				cell: jsonPathCell(jp, typ),
			})
		}
		return out, true
	}
	return nil, false
}

func jsonPathCell(jp *jsonpath.JSONPath, typ string) func(u *unstructured.Unstructured) any {
	var mu sync.Mutex // a parsed JSONPath is not safe for concurrent use
	return func(u *unstructured.Unstructured) any {
		mu.Lock()
		defer mu.Unlock()
		results, err := jp.FindResults(u.Object)
		if err != nil || len(results) == 0 || len(results[0]) == 0 {
			return nil
		}
		v := results[0][0].Interface()
		if typ == "date" {
			if s, ok := v.(string); ok {
				if t, err := time.Parse(time.RFC3339, s); err == nil {
					return age(metav1.NewTime(t))
				}
			}
		}
		if typ == "string" {
			var b bytes.Buffer
			_ = jp.PrintResults(&b, results[0])
			return b.String()
		}
		return v
	}
}
