package kubeapi

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"time"

	"github.com/tugboat/tugboat/api/apierrors"
	v1 "github.com/tugboat/tugboat/api/v1"
)

// initialEventsEnd is the annotation on the BOOKMARK that ends a
// watch-list's initial events (sendInitialEvents=true).
const initialEventsEnd = "k8s.io/initial-events-end"

// watchEvent is metav1.WatchEvent.
type watchEvent struct {
	Type   string `json:"type"`
	Object any    `json:"object"`
}

// watch serves ?watch=1 through Objects.Watch. resourceVersion "" or "0"
// (or sendInitialEvents=true) first lists — ADDED events for every object
// — as kube-apiserver does, then follows from the list's version;
// sendInitialEvents ends the initial events with an annotated BOOKMARK
// (client-go's watch-list informers). A version older than the watch cache
// holds ends the stream with an ERROR event carrying a 410 Expired Status;
// the client re-lists.
func (h *Handler) watch(w http.ResponseWriter, r *http.Request, q *request) error {
	p := r.URL.Query()
	rev, err := resourceVersion(p.Get("resourceVersion"))
	if err != nil {
		return err
	}
	initial := p.Get("sendInitialEvents") == "true"
	bookmarks := p.Get("allowWatchBookmarks") == "true" || initial
	ctx := r.Context()
	if t := p.Get("timeoutSeconds"); t != "" {
		n, err := strconv.ParseInt(t, 10, 64)
		if err != nil || n < 0 {
			return apierrors.New(apierrors.ErrBadRequest, "timeoutSeconds %q: want a non-negative integer", t)
		}
		if n > 0 {
			var cancel context.CancelFunc
			ctx, cancel = context.WithTimeout(ctx, time.Duration(n)*time.Second)
			defer cancel()
		}
	}
	if q.name != "" {
		// A watch of one object: kubectl get NAME -w.
		sel := "metadata.name=" + q.name
		if f := p.Get("fieldSelector"); f != "" {
			sel += "," + f
		}
		p.Set("fieldSelector", sel)
		r.URL.RawQuery = p.Encode()
	}
	lreq, err := listRequest(r, q)
	if err != nil {
		return err
	}
	lreq.Limit, lreq.Continue = 0, ""
	ew := &eventWriter{h: h, w: w, r: r, res: q.res, acc: parseAccept(r)}
	// The initial list and its events run on a goroutine of their own that
	// ends with them: a watch then idles on a small stack, as a gRPC
	// watch does, however deep listing and encoding went.
	type started struct {
		rev  int64
		err  error
		gone bool // the client went away while the initial events were written
	}
	done := make(chan started, 1)
	go func() {
		st := started{rev: rev}
		var first []v1.Object
		if rev == 0 || initial {
			objs, resp, err := h.listObjects(ctx, lreq)
			if err != nil {
				done <- started{err: err}
				return
			}
			first, st.rev = objs, resp.ResourceVersion
		}
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Transfer-Encoding", "chunked")
		w.WriteHeader(http.StatusOK)
		ew.flush()
		for _, o := range first {
			if err := ew.object("ADDED", o); err != nil {
				st.gone = true
				break
			}
		}
		if initial && !st.gone {
			st.gone = ew.bookmark(st.rev, true) != nil
		}
		done <- st
	}()
	st := <-done
	switch {
	case st.err != nil:
		return st.err
	case st.gone:
		return nil
	}
	rev = st.rev
	req := &v1.WatchRequest{Kind: q.res.kind.Name, Namespace: q.namespace, LabelSelector: lreq.LabelSelector,
		FieldSelector: lreq.FieldSelector, ResourceVersion: rev, AllowBookmarks: bookmarks}
	stream := &localStream[struct{}, v1.WatchEvent]{ctx: ctx, send: func(e *v1.WatchEvent) error {
		if e.Type == "BOOKMARK" {
			return ew.bookmark(e.ResourceVersion, false)
		}
		o, err := unpack(e.Object)
		if err != nil {
			return err
		}
		return ew.object(e.Type, o)
	}}
	s := h.metrics.watchStarted(q.res.kind.Plural)
	defer s()
	_, err = h.b.Call(ctx, objectsService+"Watch", req, func(ctx context.Context) (any, error) {
		stream.ctx = ctx
		return nil, h.b.Objects().Watch(req, stream)
	})
	if err != nil && ctx.Err() == nil {
		st := statusOf(err, q.target())
		_ = ew.write(watchEvent{Type: "ERROR", Object: st})
	}
	return nil
}

// eventWriter writes watch events, one JSON object per line, flushing
// each.
type eventWriter struct {
	h   *Handler
	w   http.ResponseWriter
	r   *http.Request
	res *resource
	acc accept
}

func (e *eventWriter) flush() {
	if f, ok := e.w.(http.Flusher); ok {
		f.Flush()
	}
}

func (e *eventWriter) write(ev watchEvent) error {
	b, err := json.Marshal(ev)
	if err != nil {
		return err
	}
	if _, err := e.w.Write(append(b, '\n')); err != nil {
		return err
	}
	e.flush()
	return nil
}

func (e *eventWriter) object(typ string, o v1.Object) error {
	var body any
	var err error
	switch {
	case e.acc.table:
		body, err = e.h.table(e.r, e.res, []v1.Object{o}, fmt.Sprint(o.GetMetadata().GetResourceVersion()))
	case e.acc.partial:
		body, err = partialMetadata(o)
	default:
		body, err = encode(o)
	}
	if err != nil {
		return err
	}
	return e.write(watchEvent{Type: typ, Object: body})
}

func (e *eventWriter) bookmark(rev int64, initialEnd bool) error {
	md := map[string]any{"resourceVersion": fmt.Sprint(rev)}
	if initialEnd {
		md["annotations"] = map[string]string{initialEventsEnd: "true"}
	}
	kind, apiVersion := e.res.kind.Name, e.res.groupVersion()
	if e.acc.partial {
		kind, apiVersion = "PartialObjectMetadata", "meta.k8s.io/v1"
	}
	return e.write(watchEvent{Type: "BOOKMARK", Object: map[string]any{"kind": kind, "apiVersion": apiVersion, "metadata": md}})
}
