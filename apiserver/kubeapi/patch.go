package kubeapi

import (
	"context"
	"net/http"
	"strconv"

	"github.com/tugboat/tugboat/api/apierrors"
	"github.com/tugboat/tugboat/api/patch"
	v1 "github.com/tugboat/tugboat/api/v1"
)

// patchType reads the patch type from the Content-Type.
func patchType(r *http.Request) (patch.Type, error) {
	ct := r.Header.Get("Content-Type")
	t, err := patch.ForContentType(ct)
	if err != nil {
		return "", apierrors.New(errUnsupportedMedia, "%v", err)
	}
	return t, nil
}

// patch serves PATCH of an object or its status through Objects.Patch.
func (h *Handler) patch(w http.ResponseWriter, r *http.Request, q *request) error {
	t, err := patchType(r)
	if err != nil {
		return err
	}
	dry, err := dryRun(r)
	if err != nil {
		return err
	}
	if _, err := fieldValidation(r); err != nil {
		return err
	}
	body, err := readBody(r)
	if err != nil {
		return err
	}
	p := r.URL.Query()
	force := false
	if f := p.Get("force"); f != "" {
		if force, err = strconv.ParseBool(f); err != nil {
			return apierrors.New(apierrors.ErrBadRequest, "force %q: want true or false", f)
		}
	}
	req := &v1.PatchRequest{Kind: q.res.kind.Name, Namespace: q.namespace, Name: q.name, Type: string(t), Patch: body, Subresource: q.sub, DryRun: dry,
		FieldManager: p.Get("fieldManager"), Force: force}
	out, err := h.call(r.Context(), "Patch", req, func(ctx context.Context) (any, error) { return h.b.Objects().Patch(ctx, req) })
	if err != nil {
		return err
	}
	h.writeObject(w, r, http.StatusOK, q.res, out)
	return nil
}
