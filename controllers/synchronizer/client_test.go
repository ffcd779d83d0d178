package synchronizer

import (
	"context"
	"math/rand/v2"
	"net/http"
	"reflect"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/panorama-io/panorama/storage/storagetest"
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
	d := jsonDecoder(t)
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

// jsonDecoder is NewClient's decoder of JSON.
func jsonDecoder(t testing.TB) runtime.Decoder {
	for _, info := range newDecodedOnce(dynamic.ConfigFor(&rest.Config{}).NegotiatedSerializer).infos {
		if info.MediaType == runtime.ContentTypeJSON {
			return info.Serializer
		}
	}
	t.Fatal("no JSON serializer")
	return nil
}

// TestObjectDecoderAsClientGo: an object decoded with no kind to decode
// into, as a watch event's is, comes out as client-go's serializer makes
// it, or is refused as it refuses it: numbers, text beyond ASCII, a
// Status (its own type), a list-shaped object, no kind, no apiVersion.
func TestObjectDecoderAsClientGo(t *testing.T) {
	ours := jsonDecoder(t)
	theirs := ours.(onePassDecoder).Serializer
	for _, doc := range []string{
		`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"a","namespace":"default","resourceVersion":"7"},"data":{"k":"wéb ✓"}}`,
		`{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"d"},"spec":{"replicas":3,"ratio":0.5,"big":9007199254740993,"list":[1,"x",null,{"a":[]}]}}`,
		`{"apiVersion":"v1","kind":"ConfigMapList","items":[{"metadata":{"name":"a"}}]}`,
		`{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"too old resource version: 1 (20)","reason":"Expired","code":410}`,
		`{"apiVersion":"v1","metadata":{"name":"a"}}`,
		`{"kind":"ConfigMap","metadata":{"name":"a"}}`,
		`{"apiVersion":"v1","kind":7}`,
		`[1]`,
		`null`,
		`{"apiVersion":"v1","kind":"ConfigMap"`,
	} {
		got, gotGVK, gotErr := ours.Decode([]byte(doc), nil, nil)
		want, wantGVK, wantErr := theirs.Decode([]byte(doc), nil, nil)
		if (gotErr != nil) != (wantErr != nil) {
			t.Errorf("%s: error %v, client-go's %v", doc, gotErr, wantErr)
			continue
		}
		if gotErr == nil && (!reflect.DeepEqual(got, want) || !reflect.DeepEqual(gotGVK, wantGVK)) {
			t.Errorf("%s:\ndecoded %T %v %v\nclient-go %T %v %v", doc, got, got, gotGVK, want, want, wantGVK)
		}
	}

	expired := `{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","reason":"Expired","code":410}`
	if got, _, err := ours.Decode([]byte(expired), nil, nil); err != nil || got.(*metav1.Status).Code != http.StatusGone {
		t.Errorf("%s: decoded %#v, %v", expired, got, err)
	}

	// A custom resource of a kind named as one of metav1's stays itself, as
	// its list's items do; client-go's serializer makes it a metav1.Status,
	// without its fields.
	doc := `{"apiVersion":"example.com/v1","kind":"Status","metadata":{"name":"s"},"spec":{"a":1}}`
	got, _, err := ours.Decode([]byte(doc), nil, nil)
	if u, ok := got.(*unstructured.Unstructured); err != nil || !ok || u.GetName() != "s" || u.Object["spec"] == nil {
		t.Errorf("%s: decoded %#v, %v", doc, got, err)
	}
}

// TestClientWatchesAsClientGo: NewClient's watch of a real member sends
// the events client-go's dynamic client sends, object for object (an
// ERROR event's Status: TestObjectDecoderAsClientGo).
func TestClientWatchesAsClientGo(t *testing.T) {
	env := testenv.Start(t, testenv.WithoutCRDs())
	ctx := context.Background()
	kube := kubernetes.NewForConfigOrDie(env.Config)
	ours, err := NewClient(env.Config)
	if err != nil {
		t.Fatal(err)
	}
	theirs := dynamic.NewForConfigOrDie(env.Config)
	services := schema.GroupVersionResource{Version: "v1", Resource: "services"}
	start, err := theirs.Resource(services).Namespace("default").List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	// The Service of the test only: kube-apiserver makes its own Service
	// in default once it is up, which may be after the watch starts.
	opts := metav1.ListOptions{ResourceVersion: start.GetResourceVersion(), FieldSelector: "metadata.name=w"}
	watches := map[string]watch.Interface{}
	for name, c := range map[string]dynamic.Interface{"ours": ours, "client-go": theirs} {
		w, err := c.Resource(services).Namespace("default").Watch(ctx, opts)
		if err != nil {
			t.Fatal(err)
		}
		defer w.Stop()
		watches[name] = w
	}
	svc := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: "w", Namespace: "default", Annotations: map[string]string{"note": "wéb ✓"}},
		Spec:       corev1.ServiceSpec{Ports: []corev1.ServicePort{{Name: "http", Port: 80, TargetPort: intstr.FromInt32(8080)}}},
	}
	created, err := kube.CoreV1().Services("default").Create(ctx, svc, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	created.Labels = map[string]string{"app": "web"}
	if _, err := kube.CoreV1().Services("default").Update(ctx, created, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := kube.CoreV1().Services("default").Delete(ctx, "w", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	events := func(w watch.Interface, n int) []watch.Event {
		var got []watch.Event
		timeout := time.After(30 * time.Second)
		for len(got) < n {
			select {
			case e, ok := <-w.ResultChan():
				if !ok {
					t.Fatalf("the watch ended after %d of %d events", len(got), n)
				}
				got = append(got, e)
			case <-timeout:
				t.Fatalf("%d of %d events", len(got), n)
			}
		}
		return got
	}
	got, want := events(watches["ours"], 3), events(watches["client-go"], 3)
	for i := range want {
		u, ok := got[i].Object.(*unstructured.Unstructured)
		if !ok || got[i].Type != want[i].Type || !reflect.DeepEqual(got[i].Object, want[i].Object) {
			t.Errorf("event %d: %s %#v\nclient-go's: %s %#v", i, got[i].Type, got[i].Object, want[i].Type, want[i].Object)
		} else if u.GetName() != "w" {
			t.Errorf("event %d: %s of %q", i, got[i].Type, u.GetName())
		}
	}
	if got[0].Type != watch.Added || got[2].Type != watch.Deleted {
		t.Errorf("events %s, %s, %s", got[0].Type, got[1].Type, got[2].Type)
	}
}

// BenchmarkWatchObjectDecode decodes the object of a watch event, a pod of
// about 6 KB as a member serves it, as NewClient's decoder does, as a ratio
// to client-go's serializer decoding the same, measured in the same run.
func BenchmarkWatchObjectDecode(b *testing.B) {
	data, err := storagetest.RealisticPod(rand.New(rand.NewPCG(1, 2)), 7, 0).MarshalJSON()
	if err != nil {
		b.Fatal(err)
	}
	ours := jsonDecoder(b)
	theirs := ours.(onePassDecoder).Serializer
	timeOf := func(d runtime.Decoder) time.Duration {
		const n = 2000
		start := time.Now()
		for range n {
			if _, _, err := d.Decode(data, nil, nil); err != nil {
				b.Fatal(err)
			}
		}
		return time.Since(start) / n
	}
	for b.Loop() {
		t, base := timeOf(ours), timeOf(theirs)
		b.ReportMetric(float64(t)/float64(base), "x-client-go")
		b.Logf("a watch event's object of %d bytes decoded in %v, %.2fx client-go's serializer (%v)", len(data), t, float64(t)/float64(base), base)
	}
}
