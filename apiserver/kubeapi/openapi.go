package kubeapi

import "net/http"

type openAPIDocs struct{}

func newOpenAPIDocs(*registry) *openAPIDocs { return &openAPIDocs{} }

func (h *Handler) serveOpenAPI(w http.ResponseWriter, r *http.Request, path string) {
	writeStatus(w, notFound("the server could not find the requested resource"))
}
