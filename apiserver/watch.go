package apiserver

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strconv"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/watch"
	utilflowcontrol "k8s.io/apiserver/pkg/util/flowcontrol"

	"github.com/panorama-io/panorama/apiserver/watchcache"
)

// watch answers a watch from the watch cache, as a stream of events.
func (h *Handler) watch(w http.ResponseWriter, req *request) {
	gr := req.res.GVR.GroupResource()
	defer watchOpened(gr)() // metrics.go
	opts, err := h.prepareList(w, req, true)
	if err != nil {
		writeError(w, req.r, err, gr)
		return
	}
	timeout := opts.timeout
	if timeout <= 0 || timeout > defaultWatchTimeout {
		timeout = defaultWatchTimeout
	}
	ctx, cancel := context.WithTimeout(req.r.Context(), timeout)
	defer cancel()
	watcher, err := h.reads().Watch(ctx, &opts.query, watchcache.WatchOptions{
		ResourceVersion: opts.version.rev, SendInitialEvents: opts.version.sendInitialEvents,
		Bookmarks: opts.allowBookmarks, BookmarkInterval: bookmarkInterval, User: req.user(),
	})
	// The watch is set up: API Priority and Fairness takes back its seat,
	// which it would otherwise hold for as long as the watch runs.
	utilflowcontrol.WatchInitialized(ctx)
	var tooMany *watchcache.TooManyWatchesError
	if errors.As(err, &tooMany) {
		// Refused before the stream starts, as kube-apiserver's in-flight
		// limits refuse a request: 429 with Retry-After.
		writeError(w, req.r, err, gr)
		return
	}
	s := newEventStream(w, req, opts)
	if err != nil {
		// As kube-apiserver's watch cache: the error is an event of the
		// stream, a 504 "Too large resource version" for a resourceVersion
		// the cache did not reach in time.
		s.start()
		st := toStatus(req.r.Context(), err, gr).Status()
		st.Kind, st.APIVersion = "Status", "v1"
		s.send(watch.Error, st)
		return
	}
	defer watcher.Stop()
	s.start()
	s.flush()
	if s.asTable {
		s.cols = h.columnsFor(ctx, req.res.GVR, req.cluster)
	}
	for e := range watcher.ResultChan() {
		if !s.event(req.view, e) {
			return
		}
	}
}

// eventStream writes the events of one watch in the format it asks for.
type eventStream struct {
	w             http.ResponseWriter
	enc           *json.Encoder
	flusher       http.Flusher
	f             format
	asTable       bool
	cols          []column // the Table's, read once the stream started
	includeObject string
	first         bool // no Table sent yet, which carries the columns
}

// newEventStream is the stream of a watch req asks for, its content type
// set.
func newEventStream(w http.ResponseWriter, req *request, opts *listOptions) *eventStream {
	s := &eventStream{w: w, enc: json.NewEncoder(w), f: formatOf(req.r, req.res, opts.onlyMetadata), asTable: wantsTable(req.r),
		includeObject: req.r.URL.Query().Get("includeObject"), first: true}
	s.flusher, _ = w.(http.Flusher)
	contentType := s.f.objectType
	if s.asTable {
		contentType = tableContentType
	}
	w.Header().Set("Content-Type", contentType)
	return s
}

// start writes the stream's header.
func (s *eventStream) start() { s.w.WriteHeader(http.StatusOK) }

func (s *eventStream) flush() {
	if s.flusher != nil {
		s.flusher.Flush()
	}
}

// send writes one event; false when the client is gone.
func (s *eventStream) send(typ watch.EventType, object any) bool {
	if err := s.enc.Encode(struct {
		Type   watch.EventType `json:"type"`
		Object any             `json:"object"`
	}{typ, object}); err != nil {
		return false
	}
	s.flush()
	return true
}

// event sends e as the view shows it; false to end the stream.
func (s *eventStream) event(v view, e watchcache.Event) bool {
	keep, err := v.event(&e)
	if err != nil {
		return false
	}
	if !keep {
		return true
	}
	object, err := s.object(e)
	return err == nil && s.send(e.Type, object)
}

// object is what an event carries: a bookmark, a Table or the object.
func (s *eventStream) object(e watchcache.Event) (any, error) {
	switch {
	case e.Object == nil:
		return bookmark(s.f, e), nil
	case s.asTable:
		t, err := table(s.cols, [][]byte{e.Object.Data}, s.includeObject, s.first)
		s.first = false
		return t, err
	}
	data, err := s.f.item(e.Object.Data)
	return json.RawMessage(data), err
}

func bookmark(f format, e watchcache.Event) *unstructured.Unstructured {
	u := &unstructured.Unstructured{}
	u.SetAPIVersion(f.apiVersion)
	u.SetKind(f.kind)
	u.SetResourceVersion(strconv.FormatInt(e.Revision, 10))
	if e.InitialEventsEnd {
		u.SetAnnotations(map[string]string{metav1.InitialEventsAnnotationKey: "true"})
	}
	return u
}
