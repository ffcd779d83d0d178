package apiserver

import (
	"context"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"
	apirequest "k8s.io/apiserver/pkg/endpoints/request"

	searchv1alpha1 "github.com/panorama-io/panorama/apis/search/v1alpha1"
	"github.com/panorama-io/panorama/internal/responsewriters"
	"github.com/panorama-io/panorama/storage"
)

// History: the versions of one object, as the `history` subresource of any
// served object (.../clusters/east/proxy/apis/apps/v1/namespaces/default/
// deployments/web/history), and lists as they were at a past revision or
// time (the asOf search parameter). Both read what storage keeps past the
// compaction of its log, under the authorization of listing the resource.

// historySubresource is the path element that asks for an object's history.
const historySubresource = "history"

// serveHistory answers the history of one object, info in member terms
// of cluster, its last limit versions when asked, to who may list its
// resource where it is.
func (h *Handler) serveHistory(w http.ResponseWriter, req *request, cluster string, info *apirequest.RequestInfo) {
	r := req.r
	gvr := schema.GroupVersionResource{Group: info.APIGroup, Version: info.APIVersion, Resource: info.Resource}
	gr := gvr.GroupResource()
	res, ok := h.registry.Lookup(cluster, gvr)
	namespace := info.Namespace
	if (!ok || !res.Namespaced) && isNamespaceObject(info) {
		namespace = ""
	}
	if cluster == "" {
		if !ok {
			serveNotFound(w, req)
			return
		}
		writeError(w, req.r, badf("the history is of one cluster's object: ask %s/%s", searchv1alpha1.ViewPath("<cluster>"), strings.TrimPrefix(info.Path, "/")), gr)
		return
	}
	// Authorized before the cluster and the type are looked up, so that a
	// cluster that does not exist is refused as one the user may not read.
	if err := h.authorizeIn(r.Context(), "list", gr, cluster, namespace); err != nil {
		writeError(w, req.r, err, gr)
		return
	}
	if !ok {
		serveNotFound(w, req) // as any path the view does not serve
		return
	}
	limit := 0
	var err error
	if s := r.URL.Query().Get("limit"); s != "" {
		if limit, err = strconv.Atoi(s); err != nil || limit < 0 {
			writeError(w, req.r, badf("limit %q: want a non-negative integer (the last versions; 0 for all)", s), gr)
			return
		}
	}
	key := storage.Key{Cluster: cluster, GVR: res.GVR, Namespace: namespace, Name: info.Name}
	var versions []storage.Version
	timed(w, "get", gr, func(w http.ResponseWriter) {
		if versions, err = h.store.ObjectHistory(r.Context(), key, limit); err != nil {
			if err == storage.ErrNotFound {
				err = apierrors.NewNotFound(gr, info.Name)
			}
			writeError(w, req.r, err, gr)
			return
		}
		if wantsTable(r) {
			responsewriters.WriteJSONAs(w, http.StatusOK, tableContentType, historyTable(versions))
			return
		}
		out := searchv1alpha1.History{TypeMeta: metav1.TypeMeta{Kind: "History", APIVersion: searchv1alpha1.SchemeGroupVersion.String()},
			Items: make([]searchv1alpha1.HistoryItem, len(versions))}
		for i, v := range versions {
			out.Items[i] = searchv1alpha1.HistoryItem{Revision: v.Revision, MemberResourceVersion: v.MemberResourceVersion, Type: v.Type, Patch: v.Patch}
			if i == 0 && v.Type == watch.Modified {
				out.Items[i].Object = v.Object
			}
			if !v.Time.IsZero() {
				out.Items[i].Time = &metav1.MicroTime{Time: v.Time}
			}
		}
		responsewriters.WriteJSON(w, http.StatusOK, out)
	})
}

// historyTable is the Table of a history: one row a version.
func historyTable(versions []storage.Version) *metav1.Table {
	t := &metav1.Table{TypeMeta: metav1.TypeMeta{Kind: "Table", APIVersion: "meta.k8s.io/v1"}, Rows: []metav1.TableRow{}}
	t.ColumnDefinitions = []metav1.TableColumnDefinition{
		{Name: "Revision", Type: "integer", Description: "the Panorama revision of the change"},
		{Name: "Time", Type: "string", Format: "date-time", Description: "when Panorama wrote the change"},
		{Name: "Type", Type: "string", Description: "ADDED, MODIFIED or DELETED"},
		{Name: "Member RV", Type: "string", Description: "the member's resourceVersion of the object"},
		{Name: "Patch", Type: "string", Description: "the JSON merge patch from the previous version"},
	}
	for _, v := range versions {
		at := "<unknown>"
		if !v.Time.IsZero() {
			at = v.Time.Format(time.RFC3339)
		}
		t.Rows = append(t.Rows, metav1.TableRow{Cells: []any{v.Revision, at, string(v.Type), v.MemberResourceVersion, string(v.Patch)}})
	}
	return t
}

// asOf is the asOf search parameter: a revision, or a time.
type asOf struct {
	rev int64
	at  time.Time
}

// parseAsOf reads asOf: a revision (an integer), an RFC3339 time (in a
// label, which cannot hold ':', with '.' between hours, minutes and
// seconds: 2026-12-03T14.05.00Z), a date, or a duration ago (90m, 2h).
func parseAsOf(s string, now time.Time) (*asOf, error) {
	if rev, err := strconv.ParseInt(s, 10, 64); err == nil {
		if rev <= 0 {
			return nil, badf("asOf %q: a revision is positive", s)
		}
		return &asOf{rev: rev}, nil
	}
	if d, err := time.ParseDuration(s); err == nil {
		if d <= 0 {
			return nil, badf("asOf %q: a duration ago is positive", s)
		}
		return &asOf{at: now.Add(-d)}, nil
	}
	if date, clock, ok := strings.Cut(s, "T"); ok && !strings.Contains(clock, ":") {
		// The label form: the first two dots are the colons.
		s = date + "T" + strings.Replace(clock, ".", ":", 2)
	}
	for _, layout := range []string{time.RFC3339Nano, time.DateOnly} {
		if t, err := time.Parse(layout, s); err == nil {
			return &asOf{at: t}, nil
		}
	}
	return nil, badf("asOf %q: want a revision, an RFC3339 time (2026-12-03T14:05:00Z, or 2026-12-03T14.05.00Z in a label), a date or a duration ago (90m)", s)
}

// resolveAsOf sets the revision of a list asOf a time: the last one
// committed then. A continued list has its token's.
func (h *Handler) resolveAsOf(ctx context.Context, req *listOptions) error {
	if req.asOf == nil || req.asOf.rev > 0 || req.query.Continue != "" {
		return nil
	}
	rev, err := h.store.RevisionAt(ctx, req.asOf.at)
	if storage.IsTooOld(err) {
		return apierrors.NewResourceExpired(fmt.Sprintf("asOf %s: the history kept does not reach back that far", req.asOf.at.Format(time.RFC3339)))
	}
	req.asOf.rev, req.query.Revision = rev, rev
	return err
}
