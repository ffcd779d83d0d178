package synchronizer

import (
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"
	sigsjson "sigs.k8s.io/json"
)

// NewClient returns a dynamic client of the member cfg reaches that decodes
// a list's JSON, and a watch event's object, once. client-go's dynamic
// client reads each page of a list four times over: a scan for its kind, a
// scan for its items, a decode of the whole list, items included, only to
// drop them, and a decode of each item: a large share of the
// controller's CPU in an initial sync (BenchmarkInitialSync, pprof). A
// watch event's object it scans for its kind, scans to find its end, and
// scans again to decode it: parsing every event a second time to read its
// kind alone showed in a syncing controller's CPU profile too
// (BenchmarkWatchObjectDecode).
func NewClient(cfg *rest.Config) (dynamic.Interface, error) {
	c := dynamic.ConfigFor(cfg)
	c.NegotiatedSerializer = newDecodedOnce(c.NegotiatedSerializer)
	rc, err := rest.UnversionedRESTClientFor(c)
	if err != nil {
		return nil, err
	}
	return dynamic.New(rc), nil
}

// decodedOnce is a NegotiatedSerializer whose JSON decoder is
// onePassDecoder.
type decodedOnce struct {
	runtime.NegotiatedSerializer
	infos []runtime.SerializerInfo
}

func newDecodedOnce(s runtime.NegotiatedSerializer) decodedOnce {
	infos := append([]runtime.SerializerInfo(nil), s.SupportedMediaTypes()...)
	for i := range infos {
		if infos[i].MediaType == runtime.ContentTypeJSON {
			infos[i].Serializer = onePassDecoder{infos[i].Serializer}
		}
	}
	return decodedOnce{NegotiatedSerializer: s, infos: infos}
}

func (s decodedOnce) SupportedMediaTypes() []runtime.SerializerInfo { return s.infos }

// metaKinds are the kinds client-go's dynamic client decodes into their
// own types rather than into an Unstructured: metav1's, such as the Status
// of a watch's ERROR event. Its serializer takes a kind of any group named
// as one of them for it (a custom resource of kind Status would come out
// as an empty metav1.Status); here only metav1's own group and version do.
var metaKinds = func() *runtime.Scheme {
	s := runtime.NewScheme()
	metav1.AddToGroupVersion(s, schema.GroupVersion{Version: "v1"})
	return s
}()

// onePassDecoder decodes a list into an UnstructuredList, and an object of
// any other kind than metaKinds' (what a watch event carries) into an
// Unstructured, in one pass, and leaves everything else to the serializer
// it wraps. The list keeps its apiVersion, kind and metadata, the only
// fields a list has beside its items; items without a kind and apiVersion
// get the list's, as client-go gives them.
type onePassDecoder struct {
	runtime.Serializer
}

func (d onePassDecoder) Decode(data []byte, defaults *schema.GroupVersionKind, into runtime.Object) (runtime.Object, *schema.GroupVersionKind, error) {
	switch into := into.(type) {
	case *unstructured.UnstructuredList:
		return decodeList(data, into)
	case nil:
		if defaults == nil { // a watch event's object
			return d.decodeObject(data)
		}
	}
	return d.Serializer.Decode(data, defaults, into)
}

func decodeList(data []byte, list *unstructured.UnstructuredList) (runtime.Object, *schema.GroupVersionKind, error) {
	var doc struct {
		APIVersion string           `json:"apiVersion"`
		Kind       string           `json:"kind"`
		Metadata   map[string]any   `json:"metadata"`
		Items      []map[string]any `json:"items"`
	}
	if err := sigsjson.UnmarshalCaseSensitivePreserveInts(data, &doc); err != nil {
		return nil, nil, err
	}
	if doc.Kind == "" { // client-go requires no apiVersion either
		return nil, nil, runtime.NewMissingKindErr(string(data))
	}
	list.Object = map[string]any{"apiVersion": doc.APIVersion, "kind": doc.Kind}
	if doc.Metadata != nil {
		list.Object["metadata"] = doc.Metadata
	}
	itemKind := strings.TrimSuffix(doc.Kind, "List")
	list.Items = make([]unstructured.Unstructured, len(doc.Items))
	for i, item := range doc.Items {
		u := &list.Items[i]
		u.Object = item
		if u.GetKind() == "" && u.GetAPIVersion() == "" {
			u.SetKind(itemKind)
			u.SetAPIVersion(doc.APIVersion)
		}
	}
	gvk := list.GroupVersionKind()
	return list, &gvk, nil
}

// decodeObject decodes an object as client-go's serializer does, with no
// default kind: one without a kind or an apiVersion is refused, metaKinds'
// go to that serializer.
func (d onePassDecoder) decodeObject(data []byte) (runtime.Object, *schema.GroupVersionKind, error) {
	u := &unstructured.Unstructured{}
	if err := sigsjson.UnmarshalCaseSensitivePreserveInts(data, &u.Object); err != nil {
		return nil, nil, err
	}
	gvk := u.GroupVersionKind()
	switch {
	case u.Object == nil: // null
		return d.Serializer.Decode(data, nil, nil)
	case gvk.Kind == "":
		return nil, &gvk, runtime.NewMissingKindErr(string(data))
	case gvk.Version == "":
		return nil, &gvk, runtime.NewMissingVersionErr(string(data))
	case metaKinds.Recognizes(gvk):
		return d.Serializer.Decode(data, nil, nil)
	}
	return u, &gvk, nil
}
