package apiserver

import (
	"encoding/json"
	"net/http"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/panorama-io/panorama/storage"
)

// format is how objects are written: as they are, as metadata only
// (onlyMetadata), or as meta.k8s.io PartialObjectMetadata, which metadata
// informers ask for with "Accept: ...;as=PartialObjectMetadataList".
type format struct {
	kind, listKind, apiVersion string
	objectType, listType       string
	keep                       func(obj map[string]json.RawMessage) map[string]json.RawMessage
}

const partialMetadataType = "application/json;as=PartialObjectMetadata;v=v1;g=meta.k8s.io"

func formatOf(r *http.Request, res storage.Resource, onlyMetadata bool) format {
	if strings.Contains(r.Header.Get("Accept"), "as=PartialObjectMetadata") {
		return format{
			kind: "PartialObjectMetadata", listKind: "PartialObjectMetadataList", apiVersion: "meta.k8s.io/v1",
			objectType: partialMetadataType, listType: partialMetadataType + "List",
			keep: func(obj map[string]json.RawMessage) map[string]json.RawMessage {
				return map[string]json.RawMessage{"apiVersion": json.RawMessage(`"meta.k8s.io/v1"`),
					"kind": json.RawMessage(`"PartialObjectMetadata"`), "metadata": obj["metadata"]}
			},
		}
	}
	f := format{kind: res.Kind, listKind: res.Kind + "List", apiVersion: res.GVR.GroupVersion().String(),
		objectType: "application/json", listType: "application/json"}
	if onlyMetadata {
		f.keep = func(obj map[string]json.RawMessage) map[string]json.RawMessage {
			return map[string]json.RawMessage{"apiVersion": obj["apiVersion"], "kind": obj["kind"], "metadata": obj["metadata"]}
		}
	}
	return f
}

// item is an object's JSON in this format.
func (f format) item(data []byte) ([]byte, error) {
	if f.keep == nil {
		return data, nil
	}
	var obj map[string]json.RawMessage
	if err := json.Unmarshal(data, &obj); err != nil {
		return nil, err
	}
	return json.Marshal(f.keep(obj))
}

func wantsTable(r *http.Request) bool {
	return strings.Contains(r.Header.Get("Accept"), "as=Table")
}

// writeTable writes objs, read for req, as a Table.
func (h *Handler) writeTable(w http.ResponseWriter, req *request, objs []storage.Object, listMeta metav1.ListMeta) {
	cols := h.columnsFor(req.r.Context(), req.res.GVR, req.cluster)
	includeObject := req.r.URL.Query().Get("includeObject")
	t := tableHead(cols, true)
	t.ListMeta = listMeta
	streamList(w, req.r, tableContentType, t, len(objs), func(i int) ([]byte, error) {
		row, err := tableRow(cols, objs[i].Data, includeObject)
		if err != nil {
			return nil, err
		}
		return json.Marshal(row)
	})
}
