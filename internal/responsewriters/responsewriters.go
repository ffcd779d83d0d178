// Package responsewriters answers HTTP requests in JSON and with a
// Kubernetes Status, as kube-apiserver's package of that name does, for
// Panorama's handlers that serve without a serializer: the API server's
// own paths, the tunnel hub and the agent. client-go decodes such a Status
// into an APIStatus error whatever the request was.
package responsewriters

import (
	"encoding/json"
	"net/http"
	"strconv"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// WriteStatus answers with st, its code the HTTP status (500 when it has
// none). A retry delay in its details is also the Retry-After header,
// which clients honor without reading the body.
func WriteStatus(w http.ResponseWriter, st *metav1.Status) {
	st.Kind, st.APIVersion = "Status", "v1"
	if st.Status == "" {
		st.Status = metav1.StatusFailure
	}
	code := int(st.Code)
	if code == 0 {
		code = http.StatusInternalServerError
	}
	if d := st.Details; d != nil && d.RetryAfterSeconds > 0 {
		w.Header().Set("Retry-After", strconv.Itoa(int(d.RetryAfterSeconds)))
	}
	WriteJSON(w, code, st)
}

// WriteJSON answers with v as application/json.
func WriteJSON(w http.ResponseWriter, code int, v any) {
	WriteJSONAs(w, code, "application/json", v)
}

// WriteJSONAs answers with v in JSON labelled contentType, which browsers
// must not sniff as anything else.
func WriteJSONAs(w http.ResponseWriter, code int, contentType string, v any) {
	data, err := json.Marshal(v)
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", contentType)
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(code)
	_, _ = w.Write(data)
}
