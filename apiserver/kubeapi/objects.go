package kubeapi

import (
	"context"
	"net/http"
	"strconv"

	"google.golang.org/protobuf/types/known/anypb"

	"github.com/tugboat/tugboat/api/apierrors"
	v1 "github.com/tugboat/tugboat/api/v1"
)

// The object verbs: each becomes the gRPC door's call, run through
// Backend.Call so that it is authorized and audited as that call is.

const objectsService = "/tugboat.api.v1.Objects/"

func (h *Handler) call(ctx context.Context, method string, req any, f func(ctx context.Context) (any, error)) (v1.Object, error) {
	out, err := h.b.Call(ctx, objectsService+method, req, f)
	if err != nil {
		return nil, apierrors.FromGRPC(err)
	}
	return unpack(out)
}

func (h *Handler) getObject(ctx context.Context, q *request) (v1.Object, error) {
	req := &v1.GetRequest{Kind: q.res.kind.Name, Namespace: q.namespace, Name: q.name}
	if q.sub == "resize" || q.sub == "ephemeralcontainers" {
		req.Subresource = q.sub // authorized as get on pods/resize, pods/ephemeralcontainers
	}
	return h.call(ctx, "Get", req, func(ctx context.Context) (any, error) { return h.b.Objects().Get(ctx, req) })
}

func (h *Handler) get(w http.ResponseWriter, r *http.Request, q *request) error {
	obj, err := h.getObject(r.Context(), q)
	if err != nil {
		return err
	}
	h.writeObject(w, r, http.StatusOK, q.res, obj)
	return nil
}

// listRequest reads the list parameters.
func listRequest(r *http.Request, q *request) (*v1.ListRequest, error) {
	p := r.URL.Query()
	req := &v1.ListRequest{Kind: q.res.kind.Name, Namespace: q.namespace, LabelSelector: p.Get("labelSelector"),
		FieldSelector: p.Get("fieldSelector"), Continue: p.Get("continue")}
	if l := p.Get("limit"); l != "" {
		n, err := strconv.ParseInt(l, 10, 64)
		if err != nil || n < 0 {
			return nil, apierrors.New(apierrors.ErrBadRequest, "limit %q: want a non-negative integer", l)
		}
		req.Limit = n
	}
	return req, nil
}

func (h *Handler) listObjects(ctx context.Context, req *v1.ListRequest) ([]v1.Object, *v1.ListResponse, error) {
	out, err := h.b.Call(ctx, objectsService+"List", req, func(ctx context.Context) (any, error) { return h.b.Objects().List(ctx, req) })
	if err != nil {
		return nil, nil, apierrors.FromGRPC(err)
	}
	resp := out.(*v1.ListResponse)
	objs := make([]v1.Object, 0, len(resp.Items))
	for _, a := range resp.Items {
		o, err := unpack(a)
		if err != nil {
			return nil, nil, err
		}
		objs = append(objs, o)
	}
	return objs, resp, nil
}

func (h *Handler) list(w http.ResponseWriter, r *http.Request, q *request) error {
	req, err := listRequest(r, q)
	if err != nil {
		return err
	}
	objs, resp, err := h.listObjects(r.Context(), req)
	if err != nil {
		return err
	}
	h.writeList(w, r, q.res, objs, resp.ResourceVersion, resp.Continue)
	return nil
}

// bodyObject reads a create's or update's object and its dryRun, with the
// namespace checked against the URL (and the name, for an update).
func (h *Handler) bodyObject(w http.ResponseWriter, r *http.Request, q *request) (*anypb.Any, bool, error) {
	dry, err := dryRun(r)
	if err != nil {
		return nil, false, err
	}
	obj, err := decodeBody(w, r, q.res)
	if err != nil {
		return nil, false, err
	}
	m := v1.Meta(obj)
	if err := sameNamespace(q, m); err != nil {
		return nil, false, err
	}
	if q.name != "" && m.Name != q.name {
		return nil, false, apierrors.New(apierrors.ErrBadRequest, "the name of the object (%s) does not match the name on the URL (%s)", m.Name, q.name)
	}
	a, err := anypb.New(obj)
	return a, dry, err
}

func (h *Handler) create(w http.ResponseWriter, r *http.Request, q *request) error {
	a, dry, err := h.bodyObject(w, r, q)
	if err != nil {
		return err
	}
	req := &v1.CreateRequest{Object: a, DryRun: dry, FieldManager: r.URL.Query().Get("fieldManager")}
	out, err := h.call(r.Context(), "Create", req, func(ctx context.Context) (any, error) { return h.b.Objects().Create(ctx, req) })
	if err != nil {
		return err
	}
	h.writeObject(w, r, http.StatusCreated, q.res, out)
	return nil
}

// sameNamespace fills an object's namespace from the URL, or refuses one
// that differs, as kube-apiserver does.
func sameNamespace(q *request, m *v1.ObjectMeta) error {
	if !q.res.kind.Namespaced {
		return nil
	}
	if m.Namespace == "" {
		m.Namespace = q.namespace
	}
	if q.namespace != "" && m.Namespace != q.namespace {
		return apierrors.New(apierrors.ErrBadRequest, "the namespace of the provided object (%s) does not match the namespace sent on the request (%s)", m.Namespace, q.namespace)
	}
	return nil
}

func (h *Handler) update(w http.ResponseWriter, r *http.Request, q *request) error {
	a, dry, err := h.bodyObject(w, r, q)
	if err != nil {
		return err
	}
	req := &v1.UpdateRequest{Object: a, DryRun: dry, FieldManager: r.URL.Query().Get("fieldManager")}
	method, f := "Update", h.b.Objects().Update
	switch q.sub {
	case "status":
		method, f = "UpdateStatus", h.b.Objects().UpdateStatus
	case "resize", "ephemeralcontainers":
		req.Subresource = q.sub
	}
	out, err := h.call(r.Context(), method, req, func(ctx context.Context) (any, error) { return f(ctx, req) })
	if err != nil {
		return err
	}
	h.writeObject(w, r, http.StatusOK, q.res, out)
	return nil
}

// deleteOptions is metav1.DeleteOptions as a body or query parameters.
type deleteOptions struct {
	GracePeriodSeconds *int64 `json:"gracePeriodSeconds,omitempty"`
	Preconditions      *struct {
		UID             *string `json:"uid,omitempty"`
		ResourceVersion *string `json:"resourceVersion,omitempty"`
	} `json:"preconditions,omitempty"`
	OrphanDependents  *bool    `json:"orphanDependents,omitempty"`
	PropagationPolicy *string  `json:"propagationPolicy,omitempty"`
	DryRun            []string `json:"dryRun,omitempty"`
}

// deleteRequest reads DeleteOptions from the body and the query.
func deleteRequest(r *http.Request, q *request) (*v1.DeleteRequest, error) {
	var o deleteOptions
	if r.Method == http.MethodDelete || r.Body != nil {
		if err := jsonBody(r, &o); err != nil {
			return nil, err
		}
	}
	return o.request(r, q)
}

func (o *deleteOptions) request(r *http.Request, q *request) (*v1.DeleteRequest, error) {
	p := r.URL.Query()
	req := &v1.DeleteRequest{Kind: q.res.kind.Name, Namespace: q.namespace, Name: q.name}
	if g := p.Get("gracePeriodSeconds"); g != "" {
		n, err := strconv.ParseInt(g, 10, 64)
		if err != nil {
			return nil, apierrors.New(apierrors.ErrBadRequest, "gracePeriodSeconds %q: want an integer", g)
		}
		o.GracePeriodSeconds = &n
	}
	req.GracePeriodSeconds = o.GracePeriodSeconds
	if pp := p.Get("propagationPolicy"); pp != "" {
		o.PropagationPolicy = &pp
	}
	if o.PropagationPolicy != nil {
		req.PropagationPolicy = *o.PropagationPolicy
	} else if o.OrphanDependents != nil && *o.OrphanDependents || p.Get("orphanDependents") == "true" {
		req.PropagationPolicy = "Orphan"
	}
	if pc := o.Preconditions; pc != nil {
		if pc.UID != nil {
			req.Uid = *pc.UID
		}
		if pc.ResourceVersion != nil && *pc.ResourceVersion != "" {
			n, err := strconv.ParseInt(*pc.ResourceVersion, 10, 64)
			if err != nil {
				return nil, apierrors.Invalid("preconditions.resourceVersion", "%q is not a resource version", *pc.ResourceVersion)
			}
			req.ResourceVersion = n
		}
	}
	dry, err := dryRun(r)
	if err != nil {
		return nil, err
	}
	for _, d := range o.DryRun {
		if d != "All" {
			return nil, apierrors.New(apierrors.ErrBadRequest, "dryRun %q: the only supported value is All", d)
		}
		dry = true
	}
	req.DryRun = dry
	return req, nil
}

func (h *Handler) deleteOne(ctx context.Context, req *v1.DeleteRequest) (v1.Object, error) {
	return h.call(ctx, "Delete", req, func(ctx context.Context) (any, error) { return h.b.Objects().Delete(ctx, req) })
}

func (h *Handler) delete(w http.ResponseWriter, r *http.Request, q *request) error {
	req, err := deleteRequest(r, q)
	if err != nil {
		return err
	}
	out, err := h.deleteOne(r.Context(), req)
	if err != nil {
		return err
	}
	m := out.GetMetadata()
	if m.GetDeletionTimestamp() != nil || len(m.GetFinalizers()) > 0 {
		// Still there, waiting for its grace period or finalizers.
		h.writeObject(w, r, http.StatusOK, q.res, out)
		return nil
	}
	st := success(q.target())
	st.Details.UID = m.GetUid()
	writeJSON(w, http.StatusOK, st)
	return nil
}

// deleteCollection deletes every object a list with the request's
// selectors returns, one Delete call each (each authorized as a delete).
func (h *Handler) deleteCollection(w http.ResponseWriter, r *http.Request, q *request) error {
	dreq, err := deleteRequest(r, q)
	if err != nil {
		return err
	}
	lreq, err := listRequest(r, q)
	if err != nil {
		return err
	}
	objs, resp, err := h.listObjects(r.Context(), lreq)
	if err != nil {
		return err
	}
	for _, o := range objs {
		d := clone(dreq)
		d.Namespace, d.Name = o.GetMetadata().GetNamespace(), o.GetMetadata().GetName()
		if _, err := h.deleteOne(r.Context(), d); err != nil && !apierrors.IsNotFound(err) {
			return err
		}
	}
	h.writeList(w, r, q.res, objs, resp.ResourceVersion, "")
	return nil
}

// resourceVersion parses a resourceVersion parameter ("" and "0": any).
func resourceVersion(s string) (int64, error) {
	if s == "" {
		return 0, nil
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil || n < 0 {
		return 0, apierrors.New(apierrors.ErrBadRequest, "resourceVersion %q: want a resource version from this server", s)
	}
	return n, nil
}
