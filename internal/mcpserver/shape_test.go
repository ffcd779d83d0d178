package mcpserver

import (
	"encoding/json"
	"reflect"
	"testing"

	jsonpatch "github.com/evanphx/json-patch/v5"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"

	searchv1alpha1 "github.com/panorama-io/panorama/apis/search/v1alpha1"
	"github.com/panorama-io/panorama/internal/viewclient"
)

func pod() *corev1.Pod {
	return &corev1.Pod{
		TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Pod"},
		ObjectMeta: metav1.ObjectMeta{
			Name: "web-0", Namespace: "shop", UID: "u1",
			Annotations: map[string]string{
				viewclient.ClusterAnnotation:                       "east",
				"kubectl.kubernetes.io/last-applied-configuration": `{"big":"copy"}`,
			},
			ManagedFields: []metav1.ManagedFieldsEntry{{Manager: "kubectl", Operation: metav1.ManagedFieldsOperationApply}},
		},
		Spec:   corev1.PodSpec{NodeName: "n1", Containers: []corev1.Container{{Name: "app", Image: "nginx:1.27"}, {Name: "log", Image: "fluent-bit:3"}}},
		Status: corev1.PodStatus{Phase: corev1.PodRunning},
	}
}

func toMap(t *testing.T, obj any) map[string]any {
	t.Helper()
	m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
	if err != nil {
		t.Fatal(err)
	}
	// Through JSON, as an answer decodes: numbers are float64.
	b, _ := json.Marshal(m)
	var out map[string]any
	if err := json.Unmarshal(b, &out); err != nil {
		t.Fatal(err)
	}
	return out
}

func TestCompactRowsKeepsIdentityAndDefaultColumns(t *testing.T) {
	meta, err := json.Marshal(metav1.PartialObjectMetadata{
		TypeMeta:   metav1.TypeMeta{APIVersion: "meta.k8s.io/v1", Kind: "PartialObjectMetadata"},
		ObjectMeta: metav1.ObjectMeta{Name: "web-0", Namespace: "shop", Annotations: map[string]string{viewclient.ClusterAnnotation: "east"}},
	})
	if err != nil {
		t.Fatal(err)
	}
	// The columns Panorama's Table of pods has (apiserver/table.go).
	table := &metav1.Table{
		ColumnDefinitions: []metav1.TableColumnDefinition{
			{Name: "Cluster", Type: "string"}, {Name: "Name", Type: "string", Format: "name"}, {Name: "Ready", Type: "string"},
			{Name: "Status", Type: "string"}, {Name: "Restarts", Type: "string"}, {Name: "Age", Type: "string"},
			{Name: "IP", Type: "string", Priority: 1}, {Name: "Node", Type: "string", Priority: 1},
		},
		Rows: []metav1.TableRow{{Cells: []any{"east", "web-0", "1/2", "Running", "3", "5m", "10.0.0.1", "n1"}, Object: runtime.RawExtension{Raw: meta}}},
	}
	rows, err := compactRows(table)
	if err != nil {
		t.Fatal(err)
	}
	want := []map[string]any{{"cluster": "east", "namespace": "shop", "name": "web-0", "ready": "1/2", "status": "Running", "restarts": "3", "age": "5m"}}
	if !reflect.DeepEqual(rows, want) {
		t.Errorf("rows %v, want %v (no wide columns)", rows, want)
	}
}

func TestSelectFields(t *testing.T) {
	obj := toMap(t, pod())
	for _, tc := range []struct {
		fields []string
		want   map[string]any
	}{
		{[]string{"status.phase"}, map[string]any{"status.phase": "Running"}},
		{[]string{".spec.nodeName", "{.metadata.uid}"}, map[string]any{".spec.nodeName": "n1", "{.metadata.uid}": "u1"}},
		{[]string{"spec.containers[*].image"}, map[string]any{"spec.containers[*].image": []any{"nginx:1.27", "fluent-bit:3"}}},
		{[]string{"spec.containers[0].name"}, map[string]any{"spec.containers[0].name": "app"}},
		{[]string{"status.podIP"}, map[string]any{}}, // absent: left out, not null
	} {
		got, err := selectFields(obj, tc.fields)
		if err != nil {
			t.Fatalf("%v: %v", tc.fields, err)
		}
		want := map[string]any{"cluster": "east", "namespace": "shop", "name": "web-0"}
		for k, v := range tc.want {
			want[k] = v
		}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("fields %v: %v, want %v", tc.fields, got, want)
		}
	}
	if _, err := selectFields(obj, []string{"spec.containers[*"}); !apierrors.IsBadRequest(err) {
		t.Errorf("a malformed path: %v, want a BadRequest", err)
	}
}

func TestShapeObjectTrims(t *testing.T) {
	got, err := shapeObject(toMap(t, pod()), nil)
	if err != nil {
		t.Fatal(err)
	}
	md := got["metadata"].(map[string]any)
	if _, ok := md["managedFields"]; ok {
		t.Error("managedFields kept")
	}
	if ann := md["annotations"].(map[string]any); len(ann) != 1 || ann[viewclient.ClusterAnnotation] != "east" {
		t.Errorf("annotations %v, want the cluster's only", ann)
	}
	if got["spec"].(map[string]any)["nodeName"] != "n1" {
		t.Errorf("spec lost: %v", got["spec"])
	}
}

// history builds a History as Panorama answers one: ADDED with the whole
// object, then merge patches between successive versions.
func history(t *testing.T, versions ...*appsv1.Deployment) *searchv1alpha1.History {
	t.Helper()
	h := &searchv1alpha1.History{}
	var prev []byte
	for i, d := range versions {
		cur, err := json.Marshal(d)
		if err != nil {
			t.Fatal(err)
		}
		it := searchv1alpha1.HistoryItem{Revision: int64(10 * (i + 1)), Type: watch.Added, Patch: cur}
		if prev != nil {
			it.Type = watch.Modified
			if it.Patch, err = jsonpatch.CreateMergePatch(prev, cur); err != nil {
				t.Fatal(err)
			}
		}
		h.Items, prev = append(h.Items, it), cur
	}
	return h
}

func deployment(replicas int32, image, rv string) *appsv1.Deployment {
	return &appsv1.Deployment{
		TypeMeta: metav1.TypeMeta{APIVersion: "apps/v1", Kind: "Deployment"},
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "shop", ResourceVersion: rv,
			Annotations: map[string]string{viewclient.MemberResourceVersionAnnotation: "m" + rv}},
		Spec: appsv1.DeploymentSpec{Replicas: &replicas, Template: corev1.PodTemplateSpec{
			Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: image}}}}},
	}
}

func TestTimelineAndDiff(t *testing.T) {
	h := history(t, deployment(1, "nginx:1.27", "10"), deployment(3, "nginx:1.27", "20"), deployment(3, "nginx:1.28", "30"))
	versions, err := timeline(h, false)
	if err != nil {
		t.Fatal(err)
	}
	var changed [][]string
	for _, v := range versions {
		if v.Patch != nil {
			t.Errorf("revision %d: a patch not asked for", v.Revision)
		}
		changed = append(changed, v.Changed)
	}
	// The resourceVersion and member resourceVersion change every time and
	// are left out; a list's merge patch replaces it whole.
	if want := [][]string{nil, {"spec.replicas"}, {"spec.template.spec.containers"}}; !reflect.DeepEqual(changed, want) {
		t.Errorf("changed %v, want %v", changed, want)
	}
	if versions[0].Type != "ADDED" || versions[2].Revision != 30 {
		t.Errorf("versions %+v", versions)
	}
	if withPatches, _ := timeline(h, true); withPatches[1].Patch.(map[string]any)["spec"].(map[string]any)["replicas"] != float64(3) {
		t.Errorf("patch of revision 20: %v", withPatches[1].Patch)
	}

	patch, paths, err := diff(h, 10, 30)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(paths, []string{"spec.replicas", "spec.template.spec.containers"}) {
		t.Errorf("diff paths %v", paths)
	}
	if _, ok := patch["metadata"]; ok {
		t.Errorf("the diff keeps bookkeeping: %v", patch["metadata"])
	}
	if patch["spec"].(map[string]any)["replicas"] != float64(3) {
		t.Errorf("diff %v", patch)
	}
	// Between revisions: the version in force then (25 is 20's).
	if _, paths, _ := diff(h, 25, 30); !reflect.DeepEqual(paths, []string{"spec.template.spec.containers"}) {
		t.Errorf("diff 25..30: %v", paths)
	}
	if _, _, err := diff(h, 5, 30); !apierrors.IsBadRequest(err) {
		t.Errorf("a revision before the object: %v, want a BadRequest", err)
	}
}

func TestToolErrorSaysTheStatus(t *testing.T) {
	err := toolError(apierrors.NewForbidden(schema.GroupResource{Resource: "pods"}, "", nil))
	if got := err.Error(); got[:14] != "403 Forbidden:" {
		t.Errorf("%q", got)
	}
}
