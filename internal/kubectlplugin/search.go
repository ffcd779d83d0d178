package kubectlplugin

import (
	"context"
	"fmt"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"

	searchv1alpha1 "github.com/panorama-io/panorama/apis/search/v1alpha1"
	"github.com/panorama-io/panorama/internal/viewclient"
)

// searchOptions are `kubectl panorama search`'s.
type searchOptions struct {
	*options
	print         *printFlags
	filters       *searchValues
	cluster       string
	collection    string
	allNamespaces bool
	chunkSize     int64
}

func newSearchCommand(o *options) *cobra.Command {
	s := &searchOptions{options: o}
	cmd := &cobra.Command{
		Use:   "search TYPE [flags]",
		Short: "List objects across clusters with Panorama's search parameters",
		Example: `  # Pods labelled app=web in every cluster and namespace
  kubectl panorama search pods -l app=web -A

  # Deployments running an nginx image in two clusters, as YAML
  kubectl panorama search deployments.apps -A --clusters east,west --images nginx -o yaml

  # Pods of one cluster's namespace as they were an hour ago
  kubectl panorama search pods --cluster east -n shop --as-of 1h

  # The workloads (Deployments, DaemonSets, StatefulSets) of every cluster
  kubectl panorama search --collection workloads -A`,
		Args:              cobra.MaximumNArgs(1),
		ValidArgsFunction: o.completeResources,
		RunE: func(cmd *cobra.Command, args []string) error {
			if (len(args) == 1) == (s.collection != "") {
				return viewclient.BadInput("name either a TYPE or a --collection")
			}
			if s.collection != "" {
				return s.runCollection(cmd.Context())
			}
			return s.run(cmd.Context(), args[0])
		},
	}
	s.print = addPrintFlags(cmd, true)
	s.filters = addSearchFlags(cmd.Flags(), false)
	cmd.Flags().StringVar(&s.cluster, "cluster", "", "Search one cluster's view (default: the view across clusters).")
	cmd.Flags().StringVar(&s.collection, "collection", "", "Instead of TYPE, a collection of several kinds: workloads or networking.")
	cmd.Flags().BoolVarP(&s.allNamespaces, "all-namespaces", "A", false, "If present, list the requested object(s) across all namespaces. Namespace in current context is ignored even if specified with --namespace.")
	cmd.Flags().Int64Var(&s.chunkSize, "chunk-size", 500, "Return large lists in chunks rather than all at once.")
	o.completeClusters(cmd, "cluster", "clusters")
	return cmd
}

func (s *searchOptions) run(ctx context.Context, resource string) error {
	views, err := s.views()
	if err != nil {
		return err
	}
	m, err := views.Mapping(ctx, resource)
	if err != nil {
		return err
	}
	ns, err := s.namespace(s.allNamespaces)
	if err != nil {
		return err
	}
	if !viewclient.IsNamespaced(m) {
		ns = ""
	}
	path := searchv1alpha1.ViewPath(s.cluster) + viewclient.ResourcePath(m.Resource, ns)
	q := s.filters.query()
	if s.print.humanReadable() {
		t, err := s.table(ctx, views, path, q)
		if err != nil {
			return err
		}
		if len(t.Rows) == 0 {
			s.noneFound(ns)
			return nil
		}
		return s.print.printTable(t, ns == "" && viewclient.IsNamespaced(m), s.streams.Out)
	}
	list, err := s.list(ctx, views, path, q)
	if err != nil {
		return err
	}
	return s.print.printObject(list, s.streams.Out)
}

// noneFound says so on standard error, as kubectl get does.
func (s *searchOptions) noneFound(ns string) {
	if ns == "" {
		fmt.Fprintln(s.streams.ErrOut, "No resources found")
		return
	}
	fmt.Fprintf(s.streams.ErrOut, "No resources found in %s namespace.\n", ns)
}

// pages calls read with each page's query until the view answers no
// continue token.
func (s *searchOptions) pages(q url.Values, read func(url.Values) (metav1.ListMeta, error)) error {
	page := url.Values{}
	for k, vs := range q {
		page[k] = vs
	}
	if s.chunkSize > 0 {
		page.Set("limit", strconv.FormatInt(s.chunkSize, 10))
	}
	for {
		lm, err := read(page)
		if err != nil || lm.Continue == "" {
			return err
		}
		page.Set("continue", lm.Continue)
	}
}

// table reads every page of path as one Table.
func (s *searchOptions) table(ctx context.Context, views *viewclient.Client, path string, q url.Values) (*metav1.Table, error) {
	var all *metav1.Table
	err := s.pages(q, func(page url.Values) (metav1.ListMeta, error) {
		t, warnings, err := views.GetTable(ctx, path, page)
		s.warn(warnings)
		if err != nil {
			return metav1.ListMeta{}, err
		}
		if all == nil {
			all = t
		} else {
			all.Rows = append(all.Rows, t.Rows...)
		}
		return t.ListMeta, nil
	})
	return all, err
}

// list reads every page of path as one List, as kubectl get -o json
// prints it.
func (s *searchOptions) list(ctx context.Context, views *viewclient.Client, path string, q url.Values) (*unstructured.UnstructuredList, error) {
	all := &unstructured.UnstructuredList{Object: map[string]any{}}
	all.SetAPIVersion("v1")
	all.SetKind("List")
	all.SetResourceVersion("")
	err := s.pages(q, func(page url.Values) (metav1.ListMeta, error) {
		body, warnings, err := views.Get(ctx, path, page, false)
		s.warn(warnings)
		if err != nil {
			return metav1.ListMeta{}, err
		}
		var l unstructured.UnstructuredList
		if err := l.UnmarshalJSON(body); err != nil {
			return metav1.ListMeta{}, fmt.Errorf("decoding the answer of %s: %w", path, err)
		}
		all.Items = append(all.Items, l.Items...)
		return metav1.ListMeta{Continue: l.GetContinue()}, nil
	})
	return all, err
}

// runCollection lists a collection: objects of several kinds, in one
// answer, printed with their kinds.
func (s *searchOptions) runCollection(ctx context.Context) error {
	views, err := s.views()
	if err != nil {
		return err
	}
	q := s.filters.query()
	ns, err := s.namespace(s.allNamespaces)
	if err != nil {
		return err
	}
	if ns != "" && q.Get("namespaces") == "" {
		q.Set("namespaces", ns)
	}
	if s.cluster != "" {
		q.Set("clusters", s.cluster)
	}
	var coll searchv1alpha1.CollectionResource
	warnings, err := views.GetJSON(ctx, viewclient.CollectionPath(s.collection), q, &coll)
	s.warn(warnings)
	if err != nil {
		return err
	}
	list := &unstructured.UnstructuredList{Object: map[string]any{"apiVersion": "v1", "kind": "List", "metadata": map[string]any{"resourceVersion": ""}}}
	for _, raw := range coll.Items {
		var u unstructured.Unstructured
		if err := u.UnmarshalJSON(raw.Raw); err != nil {
			return fmt.Errorf("decoding an item of %s: %w", s.collection, err)
		}
		list.Items = append(list.Items, u)
	}
	if !s.print.humanReadable() {
		return s.print.printObject(list, s.streams.Out)
	}
	if len(list.Items) == 0 {
		s.noneFound(ns)
		return nil
	}
	return s.print.printTable(collectionTable(list), ns == "", s.streams.Out)
}

// collectionTable is a Table of objects of several kinds: the columns
// every kind has, with the kind in the name as kubectl get prints mixed
// kinds.
func collectionTable(list *unstructured.UnstructuredList) *metav1.Table {
	t := &metav1.Table{ColumnDefinitions: []metav1.TableColumnDefinition{
		{Name: "CLUSTER", Type: "string"}, {Name: "NAME", Type: "string", Format: "name"}, {Name: "CREATED", Type: "string", Format: "date-time"},
	}}
	for i := range list.Items {
		u := &list.Items[i]
		name := strings.ToLower(u.GetKind()) + "." + u.GroupVersionKind().Group + "/" + u.GetName()
		if u.GroupVersionKind().Group == "" {
			name = strings.ToLower(u.GetKind()) + "/" + u.GetName()
		}
		t.Rows = append(t.Rows, metav1.TableRow{
			Cells:  []any{u.GetAnnotations()[viewclient.ClusterAnnotation], name, u.GetCreationTimestamp().UTC().Format(time.RFC3339)},
			Object: runtime.RawExtension{Object: u},
		})
	}
	return t
}
