package apiserver

import (
	"bytes"
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"
	"unicode"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/util/jsonpath"
	"k8s.io/klog/v2"

	"github.com/panorama-io/panorama/storage"
)

// A custom resource's Table columns are its CRD's additionalPrinterColumns,
// as kube-apiserver prints them, with one CRD per cluster: members may
// define a kind alike or not, and each member's CRD is its own claim. So
// every object's cells come from its own cluster's CRD, never from a
// JSONPath another member wrote (which could read any field of the
// others' objects). A Table shows the columns that every cluster serving
// the resource defines alike (name, type, format, description, priority;
// each cluster's own JSONPath): a member can leave a column out of the
// Table, never put one in or change what it says.

// crdColumnsTTL bounds how stale a CRD's columns may be.
const crdColumnsTTL = 30 * time.Second

// crdColumns reads the additionalPrinterColumns of custom resources in the
// CRDs stored for each cluster, which the controller stores with the
// custom resources it syncs. Requests share what it read through a
// sync.Map, read without a lock.
type crdColumns struct {
	store storage.Reader
	cache sync.Map // crdColumnsKey -> crdColumnsEntry
}

type crdColumnsKey struct {
	cluster string
	gvr     schema.GroupVersionResource
}

type crdColumnsEntry struct {
	columns []printerColumn
	found   bool // the cluster's CRD defines the version
	at      time.Time
}

// printerColumn is one additionalPrinterColumn of a cluster's CRD.
type printerColumn struct {
	def metav1.TableColumnDefinition
	// paths holds parsers of the column's JSONPath: a parsed JSONPath
	// keeps state while it evaluates, so each evaluation takes one of its
	// own rather than waiting for a shared one.
	paths *sync.Pool
}

// columns is the Table columns of gvr, a custom resource, that clusters
// (oldest first) serve: those every one of them whose CRD defines the
// version defines alike, in the oldest one's order; each row's cell is its
// own cluster's. None when there are none, or no CRD is stored.
func (c *crdColumns) columns(ctx context.Context, gvr schema.GroupVersionResource, clusters []string) []column {
	byCluster, err := c.printerColumns(ctx, gvr, clusters)
	if err != nil {
		klog.FromContext(ctx).Error(err, "Reading CRD printer columns failed; showing the default columns", "resource", gvr)
		return nil
	}
	var defined []string // the clusters whose CRD defines the version, oldest first
	for _, cl := range clusters {
		if _, ok := byCluster[cl]; ok {
			defined = append(defined, cl)
		}
	}
	if len(defined) == 0 {
		return nil
	}
	var out []column
	for _, first := range byCluster[defined[0]] {
		own := map[string]*printerColumn{} // each cluster's column of this definition
		for _, cl := range defined {
			if i := slices.IndexFunc(byCluster[cl], func(p printerColumn) bool { return p.def == first.def }); i >= 0 {
				own[cl] = &byCluster[cl][i]
			}
		}
		if len(own) < len(defined) {
			continue // a cluster does not define it so
		}
		out = append(out, column{def: first.def, cell: func(u *unstructured.Unstructured) any {
			if p := own[u.GetAnnotations()[storage.ClusterAnnotation]]; p != nil {
				return p.cell(u)
			}
			return nil // a cluster that joined since
		}})
	}
	return out
}

// printerColumns maps each of clusters whose CRD of gvr defines its
// version to the version's columns, from the cache when fresh, else read
// from the store, the stale ones in one query.
func (c *crdColumns) printerColumns(ctx context.Context, gvr schema.GroupVersionResource, clusters []string) (map[string][]printerColumn, error) {
	out := map[string][]printerColumn{}
	var stale []string
	for _, cl := range clusters {
		v, ok := c.cache.Load(crdColumnsKey{cl, gvr})
		if !ok || time.Since(v.(crdColumnsEntry).at) >= crdColumnsTTL {
			stale = append(stale, cl)
			continue
		}
		if e := v.(crdColumnsEntry); e.found {
			out[cl] = e.columns
		}
	}
	for chunk := range slices.Chunk(stale, storage.MaxListValues) {
		page, err := c.store.List(ctx, &storage.ListQuery{GVR: storage.CRDResource, Clusters: chunk, Names: []string{gvr.Resource + "." + gvr.Group}})
		if err != nil {
			return nil, err
		}
		now := time.Now()
		read := map[string]crdColumnsEntry{}
		for _, o := range page.Objects {
			cols, found := printerColumns(o.Data, gvr.Version)
			read[o.Cluster] = crdColumnsEntry{columns: cols, found: found, at: now}
		}
		for _, cl := range chunk {
			e := read[cl] // none stored: not found
			e.at = now
			c.cache.Store(crdColumnsKey{cl, gvr}, e)
			if e.found {
				out[cl] = e.columns
			}
		}
	}
	return out, nil
}

// printerColumns reads a CRD's additionalPrinterColumns of one version, as
// kube-apiserver's table convertor uses them: JSONPath cells, dates as
// ages. A column whose JSONPath does not parse is left out, as
// kube-apiserver's validation refuses it; so is one whose name or
// description holds a control character, which kube-apiserver accepts:
// printers escape cells but write headers as they are, so a member's
// escape sequences would reach its readers' terminals.
func printerColumns(crd []byte, version string) ([]printerColumn, bool) {
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
		var out []printerColumn
		for _, s := range specs {
			sm, _ := s.(map[string]any)
			name, _ := sm["name"].(string)
			typ, _ := sm["type"].(string)
			format, _ := sm["format"].(string)
			desc, _ := sm["description"].(string)
			path, _ := sm["jsonPath"].(string)
			priority, _ := sm["priority"].(int64)
			parse := func() (*jsonpath.JSONPath, error) {
				jp := jsonpath.New(name).AllowMissingKeys(true)
				return jp, jp.Parse(fmt.Sprintf("{%s}", path))
			}
			jp, err := parse()
			if err != nil || strings.ContainsFunc(name+desc, unicode.IsControl) {
				continue
			}
			paths := &sync.Pool{New: func() any { jp, _ := parse(); return jp }} // it parsed once
			paths.Put(jp)
			out = append(out, printerColumn{
				def:   metav1.TableColumnDefinition{Name: name, Type: typ, Format: format, Description: desc, Priority: int32(priority)},
				paths: paths,
			})
		}
		return out, true
	}
	return nil, false
}

// cell is the column's value for u.
func (p *printerColumn) cell(u *unstructured.Unstructured) any {
	jp := p.paths.Get().(*jsonpath.JSONPath)
	defer p.paths.Put(jp)
	results, err := jp.FindResults(u.Object)
	if err != nil || len(results) == 0 || len(results[0]) == 0 {
		return nil
	}
	v := results[0][0].Interface()
	switch p.def.Type {
	case "date":
		if s, ok := v.(string); ok {
			if t, err := time.Parse(time.RFC3339, s); err == nil {
				return age(metav1.NewTime(t))
			}
		}
	case "string":
		var b bytes.Buffer
		_ = jp.PrintResults(&b, results[0])
		return b.String()
	}
	return v
}
