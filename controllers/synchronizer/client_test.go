package synchronizer

import (
	"context"
	"reflect"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/panorama-io/panorama/test/testenv"
)

// TestClientListsAsClientGo: NewClient's lists, paged and whole, of a real
// member equal client-go's dynamic client's, item for item (integers,
// quantities, nested lists, text beyond ASCII), with the same continue
// token and resourceVersion; its other calls and its errors are
// client-go's.
func TestClientListsAsClientGo(t *testing.T) {
	env := testenv.Start(t, testenv.WithoutCRDs())
	ctx := context.Background()
	kube := kubernetes.NewForConfigOrDie(env.Config)
	for _, name := range []string{"a", "b", "c"} {
		svc := &corev1.Service{
			ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default", Labels: map[string]string{"app": "web"}, Annotations: map[string]string{"note": "wéb ü ✓"}},
			Spec: corev1.ServiceSpec{Ports: []corev1.ServicePort{
				{Name: "http", Port: 80, TargetPort: intstr.FromString("http")},
				{Name: "big", Port: 65535, TargetPort: intstr.FromInt32(8443)},
			}},
		}
		if _, err := kube.CoreV1().Services("default").Create(ctx, svc, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	quota := &corev1.ResourceQuota{
		ObjectMeta: metav1.ObjectMeta{Name: "q", Namespace: "default"},
		Spec:       corev1.ResourceQuotaSpec{Hard: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1.5"), corev1.ResourcePods: resource.MustParse("10")}},
	}
	if _, err := kube.CoreV1().ResourceQuotas("default").Create(ctx, quota, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	ours, err := NewClient(env.Config)
	if err != nil {
		t.Fatal(err)
	}
	theirs := dynamic.NewForConfigOrDie(env.Config)
	services := schema.GroupVersionResource{Version: "v1", Resource: "services"}
	quotas := schema.GroupVersionResource{Version: "v1", Resource: "resourcequotas"}

	for _, c := range []struct {
		name string
		gvr  schema.GroupVersionResource
		opts metav1.ListOptions
	}{
		{"services", services, metav1.ListOptions{}},
		{"a page of services", services, metav1.ListOptions{Limit: 2}},
		{"services by label", services, metav1.ListOptions{LabelSelector: "app=web"}},
		{"no match", services, metav1.ListOptions{LabelSelector: "app=none"}},
		{"quotas", quotas, metav1.ListOptions{}},
	} {
		t.Run(c.name, func(t *testing.T) {
			got, err := ours.Resource(c.gvr).Namespace("default").List(ctx, c.opts)
			if err != nil {
				t.Fatal(err)
			}
			// Lists of one resourceVersion: the member's state, unchanged.
			opts := c.opts
			opts.ResourceVersion, opts.ResourceVersionMatch = got.GetResourceVersion(), metav1.ResourceVersionMatchExact
			want, err := theirs.Resource(c.gvr).Namespace("default").List(ctx, opts)
			if err != nil {
				t.Fatal(err)
			}
			if len(got.Items) == 0 && c.opts.LabelSelector != "app=none" {
				t.Fatal("listed nothing")
			}
			if !reflect.DeepEqual(got.Object, want.Object) {
				t.Errorf("list fields %v, client-go's %v", got.Object, want.Object)
			}
			if len(got.Items) != len(want.Items) {
				t.Fatalf("%d items, client-go %d", len(got.Items), len(want.Items))
			}
			for i := range got.Items {
				if !reflect.DeepEqual(got.Items[i].Object, want.Items[i].Object) {
					t.Errorf("item %d:\n%v\nclient-go's:\n%v", i, got.Items[i].Object, want.Items[i].Object)
				}
			}
		})
	}

	t.Run("get", func(t *testing.T) {
		got, err := ours.Resource(services).Namespace("default").Get(ctx, "b", metav1.GetOptions{})
		if err != nil || got.GetName() != "b" || got.GetKind() != "Service" {
			t.Fatalf("get: %v, %v", got, err)
		}
	})
	t.Run("errors", func(t *testing.T) {
		_, err := ours.Resource(schema.GroupVersionResource{Version: "v1", Resource: "nothings"}).List(ctx, metav1.ListOptions{})
		if !apierrors.IsNotFound(err) {
			t.Errorf("list of an unknown resource: %v, want NotFound", err)
		}
		_, err = ours.Resource(services).Namespace("default").List(ctx, metav1.ListOptions{LabelSelector: "a=("})
		if !apierrors.IsBadRequest(err) {
			t.Errorf("list with a bad selector: %v, want BadRequest", err)
		}
	})
}

// TestListDecoderNeedsKind: a list without a kind is refused as client-go
// refuses it; items without a kind and an apiVersion get the list's.
func TestListDecoderNeedsKind(t *testing.T) {
	d := newListsDecodedOnce(dynamic.ConfigFor(&rest.Config{}).NegotiatedSerializer).infos[0].Serializer
	for _, doc := range []string{`{"apiVersion":"v1","items":[]}`, `{"items":[{"kind":"Pod"}]}`, `[1]`, `{"kind":"PodList","items":[1]}`} {
		if _, _, err := d.Decode([]byte(doc), nil, &unstructured.UnstructuredList{}); err == nil {
			t.Errorf("%s: decoded", doc)
		}
	}
	var list unstructured.UnstructuredList
	if _, _, err := d.Decode([]byte(`{"apiVersion":"v1","kind":"PodList","metadata":{"continue":"x"},"items":[{"metadata":{"name":"a"}},{"kind":"Other"},null]}`), nil, &list); err != nil {
		t.Fatal(err)
	}
	kinds := []string{list.Items[0].GetKind(), list.Items[1].GetKind(), list.Items[2].GetKind()}
	if list.GetContinue() != "x" || !reflect.DeepEqual(kinds, []string{"Pod", "Other", "Pod"}) || list.Items[0].GetAPIVersion() != "v1" || list.Items[1].GetAPIVersion() != "" {
		t.Errorf("decoded %v %v", list.Object, list.Items)
	}
}
