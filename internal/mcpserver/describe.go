package mcpserver

import (
	"context"
	"fmt"
	"net/url"
	"slices"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime/schema"

	searchv1alpha1 "github.com/panorama-io/panorama/apis/search/v1alpha1"
	"github.com/panorama-io/panorama/internal/viewclient"
)

const (
	// maxOwnerDepth bounds the owner chain a describe follows (a Pod's
	// ReplicaSet's Deployment is two).
	maxOwnerDepth = 5
	// maxEvents is how many of the latest Events a describe shows.
	maxEvents = 10
)

// DescribeInput names the object to describe.
type DescribeInput struct {
	ObjectRef
}

// DescribeOutput is a short describe of one object.
type DescribeOutput struct {
	Kind      string `json:"kind"`
	Cluster   string `json:"cluster"`
	Namespace string `json:"namespace,omitempty"`
	Name      string `json:"name"`
	// Summary is the object's row of kubectl get: the member's printer
	// columns.
	Summary    map[string]any    `json:"summary,omitempty"`
	Labels     map[string]string `json:"labels,omitempty"`
	Conditions []condition       `json:"conditions,omitempty"`
	// Owners is the owner chain, nearest first, as Kind/name.
	Owners []string `json:"owners,omitempty"`
	// Events are the latest Events of the object, oldest first.
	Events   []event  `json:"events,omitempty"`
	Warnings []string `json:"warnings,omitempty"`
}

// condition is one status condition, as any kind's status has them.
type condition struct {
	Type               string `json:"type"`
	Status             string `json:"status"`
	Reason             string `json:"reason,omitempty"`
	Message            string `json:"message,omitempty"`
	LastTransitionTime string `json:"lastTransitionTime,omitempty"`
}

// event is one Event as kubectl describe lists it.
type event struct {
	Type    string    `json:"type"`
	Reason  string    `json:"reason"`
	Last    time.Time `json:"last"`
	Count   int32     `json:"count,omitempty"`
	From    string    `json:"from,omitempty"`
	Message string    `json:"message"`
}

func (t *tools) describe(ctx context.Context, _ *mcp.CallToolRequest, in DescribeInput) (*mcp.CallToolResult, DescribeOutput, error) {
	out, err := t.doDescribe(ctx, in.ObjectRef)
	return nil, out, toolError(err)
}

func (t *tools) doDescribe(ctx context.Context, ref ObjectRef) (DescribeOutput, error) {
	m, err := ref.resolve(ctx, t.views)
	if err != nil {
		return DescribeOutput{}, err
	}
	var obj unstructured.Unstructured
	warnings, err := t.views.GetJSON(ctx, ref.path(m), nil, &obj.Object)
	out := DescribeOutput{Warnings: warnings}
	if err != nil {
		return out, err
	}
	out.Kind, out.Cluster, out.Namespace, out.Name = obj.GetKind(), ref.Cluster, obj.GetNamespace(), obj.GetName()
	out.Labels = obj.GetLabels()
	if table, _, err := t.views.GetTable(ctx, ref.path(m), nil); err == nil {
		if rows, err := compactRows(table); err == nil && len(rows) == 1 {
			out.Summary = rows[0]
			for _, k := range []string{"cluster", "namespace", "name"} {
				delete(out.Summary, k)
			}
		}
	}
	out.Conditions = conditions(&obj)
	out.Owners, out.Warnings = t.owners(ctx, ref.Cluster, &obj, out.Warnings)
	out.Events, err = t.events(ctx, ref.Cluster, &obj)
	if err != nil {
		out.Warnings = append(out.Warnings, "events: "+toolError(err).Error())
	}
	return out, nil
}

// conditions are obj's status.conditions, whatever its kind.
func conditions(obj *unstructured.Unstructured) []condition {
	list, _, _ := unstructured.NestedSlice(obj.Object, "status", "conditions")
	var out []condition
	for _, c := range list {
		m, ok := c.(map[string]any)
		if !ok {
			continue
		}
		s := func(k string) string { v, _ := m[k].(string); return v }
		out = append(out, condition{Type: s("type"), Status: s("status"), Reason: s("reason"), Message: s("message"), LastTransitionTime: s("lastTransitionTime")})
	}
	return out
}

// owners follows obj's controller (else first) owner up the chain, in its
// cluster and namespace; an owner that cannot be read ends the chain with
// a warning saying why.
func (t *tools) owners(ctx context.Context, cluster string, obj *unstructured.Unstructured, warnings []string) ([]string, []string) {
	var chain []string
	cur := obj
	for range maxOwnerDepth {
		refs := cur.GetOwnerReferences()
		if len(refs) == 0 {
			break
		}
		ref := refs[0]
		if c := metav1.GetControllerOfNoCopy(cur); c != nil {
			ref = *c
		}
		chain = append(chain, ref.Kind+"/"+ref.Name)
		gv, err := schema.ParseGroupVersion(ref.APIVersion)
		if err != nil {
			break
		}
		m, err := t.views.Mapper().RESTMapping(gv.WithKind(ref.Kind).GroupKind(), gv.Version)
		if err != nil {
			warnings = append(warnings, fmt.Sprintf("owner %s/%s: not synced by Panorama", ref.Kind, ref.Name))
			break
		}
		var next unstructured.Unstructured
		path := searchv1alpha1.ViewPath(cluster) + viewclient.ObjectPath(m, cur.GetNamespace(), ref.Name)
		if _, err := t.views.GetJSON(ctx, path, nil, &next.Object); err != nil {
			warnings = append(warnings, fmt.Sprintf("owner %s/%s: %v", ref.Kind, ref.Name, toolError(err)))
			break
		}
		cur = &next
	}
	return chain, warnings
}

// events are the latest Events of obj in its cluster, selected by its
// uid as kubectl describe selects them, from the Events Panorama syncs.
func (t *tools) events(ctx context.Context, cluster string, obj *unstructured.Unstructured) ([]event, error) {
	q := url.Values{"fieldSelector": {fields.OneTermEqualSelector("involvedObject.uid", string(obj.GetUID())).String()}}
	var list corev1.EventList
	path := searchv1alpha1.ViewPath(cluster) + viewclient.ResourcePath(corev1.SchemeGroupVersion.WithResource("events"), obj.GetNamespace())
	if _, err := t.views.GetJSON(ctx, path, q, &list); err != nil {
		return nil, err
	}
	out := make([]event, 0, len(list.Items))
	for _, e := range list.Items {
		last := e.LastTimestamp.Time
		if last.IsZero() {
			last = e.EventTime.Time
		}
		from := e.Source.Component
		if from == "" {
			from = e.ReportingController
		}
		out = append(out, event{Type: e.Type, Reason: e.Reason, Last: last.UTC(), Count: e.Count, From: from, Message: e.Message})
	}
	slices.SortStableFunc(out, func(a, b event) int { return a.Last.Compare(b.Last) })
	if len(out) > maxEvents {
		out = out[len(out)-maxEvents:]
	}
	return out, nil
}
