package apiserver

import (
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	searchv1alpha1 "github.com/panorama-io/panorama/apis/search/v1alpha1"
	"github.com/panorama-io/panorama/apiserver/watchcache"
	"github.com/panorama-io/panorama/internal/responsewriters"
	"github.com/panorama-io/panorama/storage"
)

// A list with the groupBy search parameter answers counts instead of
// objects: how many of the objects the list would return each group
// holds, at one revision. Being a list, it takes every filter, the
// narrowing to what the user may list and the not-ready warnings of one,
// unchanged, and the flat view's namespaces; and kubectl reads it as the
// list of the type it asked for
// (`kubectl get pods -A -l search.panorama.io/groupBy=cluster`), since
// it asks for a Table, which the count answers with a column per group
// term and a COUNT.

// parseGroupBy reads the groupBy search parameter.
func parseGroupBy(terms []string) ([]storage.GroupBy, error) {
	out := make([]storage.GroupBy, 0, len(terms))
	for _, t := range terms {
		g, err := storage.ParseGroupBy(t)
		if err != nil {
			return nil, err
		}
		out = append(out, g)
	}
	return out, nil
}

// countQuery is the count a list with groupBy asks for. It refuses what
// a count cannot do: it is of the current revision (resourceVersion "" or
// "0", which allows any), in one answer, ordered by count. The list's
// limit bounds the groups (kubectl sends 500), capped at storage.MaxLimit.
func (r *listOptions) countQuery() (*storage.CountQuery, error) {
	switch {
	case r.opts.ResourceVersion != "" && r.opts.ResourceVersion != "0":
		return nil, badRequest("groupBy counts at the current revision: resourceVersion must be unset or 0")
	case r.query.Continue != "":
		return nil, badRequest("groupBy answers in one response: continue does not apply")
	case len(r.query.OrderBy) > 0:
		return nil, badRequest("groupBy orders groups by their count: orderby does not apply")
	}
	q := &storage.CountQuery{Query: r.query, GroupBy: r.groupBy, Limit: int(min(r.query.Limit, storage.MaxLimit)), HeldSince: r.withHeldSince}
	q.Query.Limit, q.Query.Revision = 0, 0
	return q, nil
}

// count answers a list with groupBy, its query prepared.
func (h *Handler) count(w http.ResponseWriter, req *request, opts *listOptions) {
	gr := req.res.GVR.GroupResource()
	result, err := h.countGroups(req, opts)
	if err != nil {
		writeError(w, req.r, err, gr)
		return
	}
	meta := metav1.ListMeta{ResourceVersion: strconv.FormatInt(result.Revision, 10)}
	if n := result.RemainingGroups; n > 0 {
		meta.RemainingItemCount = &n
		warn(w, fmt.Sprintf("%d more groups left out: raise limit (at most %d) or narrow the selection", n, storage.MaxLimit))
	}
	terms := make([]string, len(opts.groupBy))
	for i, g := range opts.groupBy {
		terms[i] = g.String()
	}
	if wantsTable(req.r) {
		responsewriters.WriteJSONAs(w, http.StatusOK, tableContentType, countsTable(terms, result.Groups, meta, opts.withHeldSince))
		return
	}
	out := searchv1alpha1.Counts{TypeMeta: metav1.TypeMeta{Kind: "Counts", APIVersion: searchv1alpha1.SchemeGroupVersion.String()},
		ListMeta: meta, GroupBy: terms, Items: make([]searchv1alpha1.CountsGroup, len(result.Groups))}
	for i, g := range result.Groups {
		out.Items[i] = searchv1alpha1.CountsGroup{Group: map[string]string{}, Count: g.Count, HeldSince: heldSince(g.HeldSince)}
		for j, v := range g.Values {
			if v != nil {
				out.Items[i].Group[terms[j]] = *v
			}
		}
	}
	responsewriters.WriteJSON(w, http.StatusOK, out)
}

// countGroups counts the groups of a list with groupBy, in the view's
// terms.
func (h *Handler) countGroups(req *request, opts *listOptions) (*storage.CountResult, error) {
	q, err := opts.countQuery()
	if err != nil {
		return nil, err
	}
	translate, err := req.view.count(req.r.Context(), q, req.res.Namespaced)
	if err != nil {
		return nil, err
	}
	result, err := h.reads().Count(req.r.Context(), q, watchcache.Freshness{Any: opts.version.match == anyVersion})
	if err != nil {
		return nil, err
	}
	translate(result)
	return result, nil
}

// heldSince is the API's form of a group's period start, nil for none.
func heldSince(h *storage.HeldSince) *searchv1alpha1.HeldSince {
	if h == nil {
		return nil
	}
	out := &searchv1alpha1.HeldSince{Revision: h.Revision}
	if !h.Time.IsZero() {
		out.Time = &metav1.MicroTime{Time: h.Time}
	}
	return out
}

// countsTable is the Table of a count: a column per term, headed by the
// term ("cluster", "label:app", "field:status.phase"), then COUNT, and
// with periods HELD SINCE (the time; its revision with -o wide); a
// missing value reads <none>, as kubectl prints missing columns, and a
// period begun before they were kept <unknown>.
func countsTable(terms []string, groups []storage.CountGroup, meta metav1.ListMeta, periods bool) *metav1.Table {
	t := &metav1.Table{TypeMeta: metav1.TypeMeta{Kind: "Table", APIVersion: "meta.k8s.io/v1"}, ListMeta: meta, Rows: []metav1.TableRow{}}
	for _, term := range terms {
		t.ColumnDefinitions = append(t.ColumnDefinitions, metav1.TableColumnDefinition{Name: term, Type: "string",
			Description: "the objects' " + strings.Replace(term, ":", " ", 1)})
	}
	t.ColumnDefinitions = append(t.ColumnDefinitions, metav1.TableColumnDefinition{Name: "Count", Type: "integer", Description: "how many objects"})
	if periods {
		t.ColumnDefinitions = append(t.ColumnDefinitions,
			metav1.TableColumnDefinition{Name: "Held Since", Type: "string", Format: "date-time",
				Description: "when the group last went from no objects to some"},
			metav1.TableColumnDefinition{Name: "Since Revision", Type: "integer", Priority: 1,
				Description: "the revision of that write"})
	}
	for _, g := range groups {
		cells := make([]any, 0, len(g.Values)+3)
		for _, v := range g.Values {
			if v == nil {
				cells = append(cells, "<none>")
			} else {
				cells = append(cells, *v)
			}
		}
		cells = append(cells, g.Count)
		if periods {
			cells = append(cells, periodCells(g.HeldSince)...)
		}
		t.Rows = append(t.Rows, metav1.TableRow{Cells: cells})
	}
	return t
}

// periodCells are a group's HELD SINCE and SINCE REVISION.
func periodCells(h *storage.HeldSince) []any {
	switch {
	case h == nil:
		return []any{"<none>", "<none>"}
	case h.Revision == 0:
		return []any{"<unknown>", "<unknown>"}
	}
	return []any{h.Time.UTC().Format(time.RFC3339), h.Revision}
}
