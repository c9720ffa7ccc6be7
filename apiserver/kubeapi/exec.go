package kubeapi

import (
	"net/http"

	"github.com/tugboat/tugboat/api/apierrors"
)

func (h *Handler) stream(w http.ResponseWriter, r *http.Request, q *request) error {
	return apierrors.New(apierrors.ErrBadRequest, "%s: not served yet", q.sub)
}
