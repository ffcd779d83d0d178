package apiserver

import (
	"bytes"
	"encoding/json"
	"fmt"
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

// streamList answers a list item by item, as kube-apiserver's streaming
// list encoder does: the envelope, whose JSON must end with its empty item
// array (a listEnvelope, a Table), then each of the n items as item(i)
// encodes it, then the end. Only one item is encoded at a time, so the
// answer is never copied whole into one buffer whatever the list's size.
//
// An item that fails to encode once the answer has begun can no longer be
// a Status: the connection is aborted, so that the client sees a failed
// request, not a short list.
func streamList(w http.ResponseWriter, r *http.Request, contentType string, envelope any, n int, item func(i int) ([]byte, error)) {
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
	for i := range n {
		data, err := item(i)
		if err != nil {
			klog.FromContext(r.Context()).Error(err, "Encoding a list item failed; aborting the answer", "item", i)
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
	}
	_, _ = w.Write(emptyItems[1:])
}
