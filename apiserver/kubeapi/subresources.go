package kubeapi

import (
	"context"
	"net/http"

	"google.golang.org/protobuf/types/known/anypb"

	"github.com/tugboat/tugboat/api/apierrors"
	v1 "github.com/tugboat/tugboat/api/v1"
)

func anyOf(obj v1.Object) (*anypb.Any, error) { return anypb.New(obj) }

// bind serves POST pods/NAME/binding (a v1 Binding) with Objects.Bind.
func (h *Handler) bind(w http.ResponseWriter, r *http.Request, q *request) error {
	if r.Method != http.MethodPost {
		return methodNotAllowed(r)
	}
	var b struct {
		Metadata struct {
			Name            string `json:"name"`
			ResourceVersion string `json:"resourceVersion"`
		} `json:"metadata"`
		Target struct {
			Kind string `json:"kind"`
			Name string `json:"name"`
		} `json:"target"`
	}
	if err := jsonBody(r, &b); err != nil {
		return err
	}
	if b.Metadata.Name != "" && b.Metadata.Name != q.name {
		return apierrors.New(apierrors.ErrBadRequest, "the name of the binding (%s) does not match the name on the URL (%s)", b.Metadata.Name, q.name)
	}
	if b.Target.Kind != "" && b.Target.Kind != "Node" {
		return apierrors.Invalid("target.kind", "%q: a pod binds to a Node", b.Target.Kind)
	}
	rv, err := resourceVersion(b.Metadata.ResourceVersion)
	if err != nil {
		return err
	}
	req := &v1.BindRequest{Namespace: q.namespace, Name: q.name, NodeName: b.Target.Name, ResourceVersion: rv}
	if _, err := h.call(r.Context(), "Bind", req, func(ctx context.Context) (any, error) { return h.b.Objects().Bind(ctx, req) }); err != nil {
		return err
	}
	st := success(q.target())
	st.Code = http.StatusCreated
	writeJSON(w, http.StatusCreated, st)
	return nil
}

// evict serves POST pods/NAME/eviction (a policy/v1 Eviction) with
// Objects.Evict: authorized as create on pods/eviction, the apiserver's
// eviction checks (the disruption budgets) run first, and a refusal is 429
// TooManyRequests naming the budget.
func (h *Handler) evict(w http.ResponseWriter, r *http.Request, q *request) error {
	if r.Method != http.MethodPost {
		return methodNotAllowed(r)
	}
	var e struct {
		Metadata struct {
			Name string `json:"name"`
		} `json:"metadata"`
		DeleteOptions *deleteOptions `json:"deleteOptions"`
	}
	if err := jsonBody(r, &e); err != nil {
		return err
	}
	if e.Metadata.Name != "" && e.Metadata.Name != q.name {
		return apierrors.New(apierrors.ErrBadRequest, "the name of the eviction (%s) does not match the name on the URL (%s)", e.Metadata.Name, q.name)
	}
	if e.DeleteOptions == nil {
		e.DeleteOptions = &deleteOptions{}
	}
	req, err := e.DeleteOptions.request(r, q)
	if err != nil {
		return err
	}
	if _, err := h.call(r.Context(), "Evict", req, func(ctx context.Context) (any, error) { return h.b.Objects().Evict(ctx, req) }); err != nil {
		return err
	}
	st := success(q.target())
	st.Code = http.StatusCreated
	writeJSON(w, http.StatusCreated, st)
	return nil
}
