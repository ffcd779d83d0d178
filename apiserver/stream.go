package apiserver

import (
	"bytes"
	"encoding/json"
	"fmt"
	"iter"
	"net/http"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/klog/v2"
)

// listEnvelope is a list of JSON items (a PodList, a
// PartialObjectMetadataList), items last, as streamList wants.
type listEnvelope struct {
	Kind       string            `json:"kind"`
	APIVersion string            `json:"apiVersion"`
	Metadata   metav1.ListMeta   `json:"metadata"`
	Items      []json.RawMessage `json:"items"`
}

// emptyItems ends the JSON of a list envelope whose last field is its
// empty item array.
var emptyItems, comma = []byte("[]}"), []byte(",")

// streamList answers a list of n items, each as item(i) encodes it
// (streamItems).
func streamList(w http.ResponseWriter, r *http.Request, contentType string, envelope any, n int, item func(i int) ([]byte, error)) {
	streamItems(w, r, contentType, envelope, func(yield func([]byte, error) bool) {
		for i := range n {
			if !yield(item(i)) {
				return
			}
		}
	})
}

// streamItems answers a list item by item, as kube-apiserver's streaming
// list encoder does: the envelope, whose JSON must end with its empty item
// array (a listEnvelope, a Table, a CollectionResource), then each item as
// items yields it, then the end. Only one item is encoded at a time, and
// items may read them a page at a time, so the answer is never held whole
// whatever the list's size.
//
// An item that fails (to be read, to encode) once the answer has begun
// can no longer be a Status: the connection is aborted, so that the
// client sees a failed request, not a short list.
func streamItems(w http.ResponseWriter, r *http.Request, contentType string, envelope any, items iter.Seq2[[]byte, error]) {
	head, err := json.Marshal(envelope)
	if err == nil && !bytes.HasSuffix(head, emptyItems) {
		err = fmt.Errorf("the list envelope %T does not end with its empty item array", envelope)
	}
	if err != nil {
		writeError(w, r, err, schema.GroupResource{})
		return
	}
	w.Header().Set("Content-Type", contentType)
	w.WriteHeader(http.StatusOK)
	if _, err := w.Write(head[:len(head)-len(emptyItems)+1]); err != nil {
		return // the client went away
	}
	i := 0
	for data, err := range items {
		if err != nil {
			klog.FromContext(r.Context()).Error(err, "Reading or encoding a list item failed; aborting the answer", "item", i)
			panic(http.ErrAbortHandler)
		}
		if i > 0 {
			if _, err := w.Write(comma); err != nil {
				return
			}
		}
		if _, err := w.Write(data); err != nil {
			return
		}
		i++
	}
	_, _ = w.Write(emptyItems[1:])
}
