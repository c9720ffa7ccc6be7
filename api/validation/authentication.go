// The authentication.k8s.io group: TokenRequest (the serviceaccounts/token
// subresource's body; not stored).

package validation

import (
	"fmt"

	v1 "github.com/tugboat/tugboat/api/v1"
)

// Token lifetimes Kubernetes' TokenRequest validation enforces.
const (
	MinTokenExpirationSeconds = 10 * 60
	MaxTokenExpirationSeconds = 1 << 32
)

// TokenRequest validates a (defaulted) token request with Kubernetes'
// texts. The bound object's kind is checked by the apiserver, which also
// looks it up.
func TokenRequest(tr *v1.TokenRequest) Errs {
	var errs Errs
	exp := tr.GetSpec().GetExpirationSeconds()
	if exp < MinTokenExpirationSeconds {
		errs.Add("spec.expirationSeconds", "Invalid value: %d: may not specify a duration less than 10 minutes", exp)
	}
	if exp > MaxTokenExpirationSeconds {
		errs.Add("spec.expirationSeconds", "Invalid value: %d: may not specify a duration larger than 2^32 seconds", exp)
	}
	for i, a := range tr.GetSpec().GetAudiences() {
		if a == "" {
			errs.Add(fmt.Sprintf("spec.audiences[%d]", i), "Invalid value: \"\": must not be empty")
		}
	}
	if ref := tr.GetSpec().GetBoundObjectRef(); ref != nil && ref.Name == "" {
		errs.Add("spec.boundObjectRef.name", "Required value")
	}
	return errs
}
