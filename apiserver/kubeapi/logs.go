package kubeapi

import (
	"context"
	"net/http"
	"strconv"
	"time"

	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/tugboat/tugboat/api/apierrors"
	v1 "github.com/tugboat/tugboat/api/v1"
)

const nodeService = "/tugboat.api.v1.NodeAPI/"

// logs serves GET pods/NAME/log through the NodeAPI relay (NodeAPI.Logs),
// which reaches the pod's kubelet over its tunnel: container, follow,
// previous, tailLines, timestamps, sinceSeconds, sinceTime and limitBytes
// as kubectl logs sends them.
func (h *Handler) logs(w http.ResponseWriter, r *http.Request, q *request) error {
	if r.Method != http.MethodGet {
		return methodNotAllowed(r)
	}
	p := r.URL.Query()
	req := &v1.LogsRequest{Namespace: q.namespace, Pod: q.name, Container: p.Get("container"),
		Follow: p.Get("follow") == "true", Previous: p.Get("previous") == "true", Timestamps: p.Get("timestamps") == "true"}
	if t := p.Get("tailLines"); t != "" {
		n, err := strconv.ParseInt(t, 10, 64)
		if err != nil || n < 0 {
			return apierrors.New(apierrors.ErrBadRequest, "tailLines %q: want a non-negative integer", t)
		}
		req.TailLines = n
		if n == 0 {
			return h.writeLogHeader(w)
		}
	}
	for _, f := range []struct {
		name string
		dst  *int64
	}{{"sinceSeconds", &req.SinceSeconds}, {"limitBytes", &req.LimitBytes}} {
		if v := p.Get(f.name); v != "" {
			n, err := strconv.ParseInt(v, 10, 64)
			if err != nil || n < 1 {
				return apierrors.New(apierrors.ErrBadRequest, "%s %q: want a positive integer", f.name, v)
			}
			*f.dst = n
		}
	}
	if v := p.Get("sinceTime"); v != "" {
		ts, err := time.Parse(time.RFC3339, v)
		if err != nil {
			return apierrors.New(apierrors.ErrBadRequest, "sinceTime %q: want an RFC 3339 time", v)
		}
		req.SinceTime = timestamppb.New(ts)
	}
	started := false
	stream := &localStream[struct{}, v1.LogsChunk]{ctx: r.Context(), send: func(c *v1.LogsChunk) error {
		if !started {
			started = true
			if err := h.writeLogHeader(w); err != nil {
				return err
			}
		}
		if _, err := w.Write(c.Data); err != nil {
			return err
		}
		if f, ok := w.(http.Flusher); ok {
			f.Flush()
		}
		return nil
	}}
	_, err := h.b.Call(r.Context(), nodeService+"Logs", req, func(ctx context.Context) (any, error) {
		stream.ctx = ctx
		return nil, h.b.Nodes().Logs(req, stream)
	})
	if err != nil && !started {
		return apierrors.FromGRPC(err)
	}
	if !started {
		return h.writeLogHeader(w)
	}
	return nil
}

func (h *Handler) writeLogHeader(w http.ResponseWriter) error {
	w.Header().Set("Content-Type", "text/plain")
	w.WriteHeader(http.StatusOK)
	return nil
}
