package synchronizer

import (
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"
	sigsjson "sigs.k8s.io/json"
)

// NewClient returns a dynamic client of the member cfg reaches that decodes
// a list's JSON once. client-go's dynamic client reads each page of a list
// four times over: a scan for its kind, a scan for its items, a decode of
// the whole list, items included, only to drop them, and a decode of each
// item. That was 35 % of the controller's CPU in an initial sync
// (BenchmarkInitialSync, pprof), on a machine the member, the database and
// the controller share.
func NewClient(cfg *rest.Config) (dynamic.Interface, error) {
	c := dynamic.ConfigFor(cfg)
	c.NegotiatedSerializer = newListsDecodedOnce(c.NegotiatedSerializer)
	rc, err := rest.UnversionedRESTClientFor(c)
	if err != nil {
		return nil, err
	}
	return dynamic.New(rc), nil
}

// listsDecodedOnce is a NegotiatedSerializer whose JSON decoder is
// listDecoder.
type listsDecodedOnce struct {
	runtime.NegotiatedSerializer
	infos []runtime.SerializerInfo
}

func newListsDecodedOnce(s runtime.NegotiatedSerializer) listsDecodedOnce {
	infos := append([]runtime.SerializerInfo(nil), s.SupportedMediaTypes()...)
	for i := range infos {
		if infos[i].MediaType == runtime.ContentTypeJSON {
			infos[i].Serializer = listDecoder{infos[i].Serializer}
		}
	}
	return listsDecodedOnce{NegotiatedSerializer: s, infos: infos}
}

func (s listsDecodedOnce) SupportedMediaTypes() []runtime.SerializerInfo { return s.infos }

// listDecoder decodes into an UnstructuredList in one pass, and leaves
// everything else to the serializer it wraps. The list keeps its
// apiVersion, kind and metadata, the only fields a list has beside its
// items; items without a kind and apiVersion get the list's, as client-go
// gives them.
type listDecoder struct {
	runtime.Serializer
}

func (d listDecoder) Decode(data []byte, defaults *schema.GroupVersionKind, into runtime.Object) (runtime.Object, *schema.GroupVersionKind, error) {
	list, ok := into.(*unstructured.UnstructuredList)
	if !ok {
		return d.Serializer.Decode(data, defaults, into)
	}
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
