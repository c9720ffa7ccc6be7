package kubeapi

import (
	"net/http"
)

// Service account issuer discovery, as kube-apiserver serves it: the
// OpenID Connect discovery document at /.well-known/openid-configuration
// and the token verification keys at /openid/v1/jwks, so that something
// outside the cluster (a cloud's workload identity, Vault) can verify the
// service account tokens. Served to any authenticated caller (Kubernetes
// grants them to system:serviceaccounts through the ClusterRole
// system:service-account-issuer-discovery; Tugboat authorizes no
// non-resource URLs, and these documents hold only public keys).

// IssuerDiscovery is what a Backend that signs service account tokens
// serves: the two documents, JSON.
type IssuerDiscovery interface {
	OpenIDConfiguration() ([]byte, error)
	JWKS() ([]byte, error)
}

// oidc serves the two paths; ok is false for other paths.
func (h *Handler) oidc(w http.ResponseWriter, r *http.Request, path string) bool {
	if path != "/.well-known/openid-configuration" && path != "/openid/v1/jwks" {
		return false
	}
	d, ok := h.b.(IssuerDiscovery)
	if !ok {
		writeStatus(w, notFound("the server could not find the requested resource"))
		return true
	}
	if r.Method != http.MethodGet {
		writeStatus(w, statusOf(methodNotAllowed(r), target{}))
		return true
	}
	get, ct := d.OpenIDConfiguration, "application/json"
	if path == "/openid/v1/jwks" {
		get, ct = d.JWKS, "application/jwk-set+json"
	}
	b, err := get()
	if err != nil {
		writeStatus(w, statusOf(err, target{}))
		return true
	}
	w.Header().Set("Content-Type", ct)
	w.Header().Set("Cache-Control", "public, max-age=3600")
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write(b)
	return true
}
