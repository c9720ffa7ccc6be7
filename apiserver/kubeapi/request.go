package kubeapi

import (
	"net/http"
	"strings"

	"github.com/tugboat/tugboat/api/apierrors"
	"github.com/tugboat/tugboat/api/kinds"
)

// request is a resource request parsed from its path.
type request struct {
	res       *resource
	namespace string
	name      string
	sub       string
	// watchPath: the legacy /api/v1/watch/... form.
	watchPath bool
}

func (q *request) target() target {
	return target{group: q.res.group, resource: q.res.kind.Plural, name: q.name}
}

// parsePath reads /api/v1/[watch/][namespaces/NS/]RESOURCE[/NAME[/SUB]]
// and the same under /apis/GROUP/VERSION.
func (h *Handler) parsePath(path string) (*request, *Status) {
	var gv, rest string
	if p, ok := strings.CutPrefix(path, "/api/v1/"); ok {
		gv, rest = "v1", p
	} else {
		p := strings.TrimPrefix(path, "/apis/")
		parts := strings.SplitN(p, "/", 3)
		if len(parts) < 3 {
			return nil, notFound("the server could not find the requested resource")
		}
		gv, rest = parts[0]+"/"+parts[1], parts[2]
	}
	seg := strings.Split(rest, "/")
	q := &request{}
	if seg[0] == "watch" {
		q.watchPath = true
		seg = seg[1:]
	}
	if len(seg) >= 3 && seg[0] == "namespaces" && h.reg.lookup(gv, seg[2]) != nil {
		q.namespace = seg[1]
		seg = seg[2:]
	}
	if len(seg) == 0 || len(seg) > 3 || seg[0] == "" {
		return nil, notFound("the server could not find the requested resource")
	}
	q.res = h.reg.lookup(gv, seg[0])
	if q.res == nil {
		return nil, notFound("the server could not find the requested resource")
	}
	if len(seg) > 1 {
		q.name = seg[1]
	}
	if len(seg) > 2 {
		q.sub = seg[2]
		if _, ok := q.res.subresources()[q.sub]; !ok {
			return nil, notFound("the server could not find the requested resource")
		}
	}
	if q.namespace != "" && !q.res.kind.Namespaced {
		return nil, notFound("the server could not find the requested resource")
	}
	if q.name != "" && q.res.kind.Namespaced && q.namespace == "" {
		return nil, notFound("the server could not find the requested resource")
	}
	return q, nil
}

// resource serves every object path.
func (h *Handler) resource(w http.ResponseWriter, r *http.Request, path string) {
	q, st := h.parsePath(path)
	if st != nil {
		writeStatus(w, st)
		return
	}
	if err := h.dispatch(w, r, q); err != nil {
		if err == errTooLarge {
			writeStatus(w, tooLarge())
			return
		}
		writeStatus(w, statusOf(err, q.target()))
	}
}

func isWatch(r *http.Request) bool {
	v := r.URL.Query().Get("watch")
	return v == "1" || v == "true"
}

// dispatch picks the verb: an error it returns is the whole answer.
func (h *Handler) dispatch(w http.ResponseWriter, r *http.Request, q *request) error {
	switch q.sub {
	case "":
	case "status", "resize", "ephemeralcontainers":
		switch r.Method {
		case http.MethodGet:
			return h.get(w, r, q)
		case http.MethodPut:
			return h.update(w, r, q)
		case http.MethodPatch:
			return h.patch(w, r, q)
		}
		return methodNotAllowed(r)
	case "scale":
		return h.scale(w, r, q)
	case "binding":
		return h.bind(w, r, q)
	case "eviction":
		return h.evict(w, r, q)
	case "log":
		return h.logs(w, r, q)
	case "exec", "attach", "portforward":
		return h.stream(w, r, q)
	default:
		if sub, ok := kinds.CreateSubresource(q.res.kind, q.sub); ok {
			return h.createSubresource(w, r, q, sub)
		}
	}
	switch r.Method {
	case http.MethodGet:
		if q.watchPath || isWatch(r) {
			return h.watch(w, r, q)
		}
		if q.name == "" {
			return h.list(w, r, q)
		}
		return h.get(w, r, q)
	case http.MethodPost:
		if q.name != "" {
			return methodNotAllowed(r)
		}
		return h.create(w, r, q)
	case http.MethodPut:
		if q.name == "" {
			return methodNotAllowed(r)
		}
		return h.update(w, r, q)
	case http.MethodPatch:
		if q.name == "" {
			return methodNotAllowed(r)
		}
		return h.patch(w, r, q)
	case http.MethodDelete:
		if q.name == "" {
			return h.deleteCollection(w, r, q)
		}
		return h.delete(w, r, q)
	}
	return methodNotAllowed(r)
}

func methodNotAllowed(r *http.Request) error {
	return apierrors.New(errMethodNotAllowed, "the server does not allow this method on the requested resource (%s)", r.Method)
}
