package apiserver

import (
	"context"
	"errors"
	"fmt"
	"net/http"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	apiserverstorage "k8s.io/apiserver/pkg/storage"
	"k8s.io/klog/v2"

	"github.com/panorama-io/panorama/apiserver/watchcache"
	"github.com/panorama-io/panorama/internal/responsewriters"
	"github.com/panorama-io/panorama/storage"
)

// watchRetryAfterSeconds is when a client refused a watch for the limits
// may try again: watches are long-lived, so sooner would mostly be refused
// again.
const watchRetryAfterSeconds = 10

// toStatus maps errors to the Status kube-apiserver would answer with;
// anything unexpected is an internal error, logged with ctx's logger, with
// no details leaked.
func toStatus(ctx context.Context, err error, gr schema.GroupResource) apierrors.APIStatus {
	var (
		status   apierrors.APIStatus
		invalid  *storage.InvalidError
		tooOld   *storage.TooOldError
		tooLarge *storage.TooLargeError
		tooMany  *watchcache.TooManyWatchesError
		bad      badRequest
	)
	switch {
	case errors.As(err, &status):
		return status
	case errors.As(err, &bad):
		return apierrors.NewBadRequest(string(bad))
	case errors.As(err, &invalid):
		return apierrors.NewBadRequest(invalid.Error())
	case errors.As(err, &tooOld):
		// The wording clients (and client-go's reflector) recognize.
		return apierrors.NewResourceExpired(fmt.Sprintf("too old resource version: %d (%d)", tooOld.Requested, tooOld.Compacted))
	case errors.As(err, &tooLarge):
		var st apierrors.APIStatus
		errors.As(apiserverstorage.NewTooLargeResourceVersionError(uint64(tooLarge.Requested), uint64(tooLarge.Current), 1), &st)
		return st
	case errors.As(err, &tooMany):
		return apierrors.NewTooManyRequests(tooMany.Error(), watchRetryAfterSeconds)
	case errors.Is(err, storage.ErrNotFound):
		return apierrors.NewNotFound(gr, "")
	case errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded):
		// The request's context ended: its client went away or its time
		// is up. Neither is the server's fault, so it is neither logged nor
		// a 500; kube-apiserver answers both with this 504.
		return apierrors.NewTimeoutError(fmt.Sprintf("request did not complete within requested timeout - %v", err), 0)
	}
	klog.FromContext(ctx).Error(err, "Serving a request failed")
	return apierrors.NewInternalError(errors.New("the server could not serve the request; see its log"))
}

// writeError answers r with the Status of err, a failure reading gr.
func writeError(w http.ResponseWriter, r *http.Request, err error, gr schema.GroupResource) {
	st := toStatus(r.Context(), err, gr).Status()
	responsewriters.WriteStatus(w, &st)
}
