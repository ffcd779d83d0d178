package responsewriters

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestWriteStatus(t *testing.T) {
	for _, tc := range []struct {
		name       string
		status     metav1.Status
		code       int
		retryAfter string
	}{
		{"as given", apierrors.NewNotFound(metav1.SchemeGroupVersion.WithResource("pods").GroupResource(), "web").ErrStatus, http.StatusNotFound, ""},
		{"retry delay as a header", apierrors.NewTooManyRequests("slow down", 7).ErrStatus, http.StatusTooManyRequests, "7"},
		{"no code is the server's fault", metav1.Status{Message: "?"}, http.StatusInternalServerError, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := httptest.NewRecorder()
			st := tc.status
			WriteStatus(w, &st)
			if w.Code != tc.code {
				t.Errorf("code %d, want %d", w.Code, tc.code)
			}
			if got := w.Header().Get("Retry-After"); got != tc.retryAfter {
				t.Errorf("Retry-After %q, want %q", got, tc.retryAfter)
			}
			if got := w.Header().Get("Content-Type"); got != "application/json" {
				t.Errorf("Content-Type %q", got)
			}
			if got := w.Header().Get("X-Content-Type-Options"); got != "nosniff" {
				t.Errorf("X-Content-Type-Options %q", got)
			}
			var got metav1.Status
			if err := json.Unmarshal(w.Body.Bytes(), &got); err != nil {
				t.Fatal(err)
			}
			if got.Kind != "Status" || got.APIVersion != "v1" || got.Status != metav1.StatusFailure || got.Message != tc.status.Message {
				t.Errorf("body %+v", got)
			}
			// client-go turns the body into an error with the same code.
			if err := apierrors.FromObject(&got); apierrors.ReasonForError(err) != tc.status.Reason || int(err.(apierrors.APIStatus).Status().Code) != int(got.Code) {
				t.Errorf("client-go reads %v from %+v", err, got)
			}
		})
	}
}
