// The authentication.k8s.io group: TokenRequest, the body of the
// serviceaccounts/token subresource. It is not a stored kind (no etcd key,
// no watch, no list): it is registered as a create subresource of its
// parent kind, with its own defaulting and validation.

package kinds

import (
	"google.golang.org/protobuf/proto"

	"github.com/tugboat/tugboat/api/apierrors"
	v1 "github.com/tugboat/tugboat/api/v1"
	"github.com/tugboat/tugboat/api/validation"
)

// Subresource is a subresource made by posting a body of its own type to
// an object (Kubernetes' POST .../RESOURCE/NAME/SUBRESOURCE with a body
// that is not the parent kind): Objects.Create with
// CreateRequest.subresource, authorized as create on
// <parent plural>/<Name>.
type Subresource struct {
	Parent string // the parent Kind: "ServiceAccount"
	Name   string // "token"
	// APIVersion and Kind are the body's: "authentication.k8s.io/v1",
	// "TokenRequest".
	APIVersion, Kind string
	New              func() v1.Object
	Default          func(v1.Object)
	Validate         func(v1.Object) apierrors.FieldErrors
}

// DefaultTokenExpirationSeconds is a TokenRequest's lifetime when it asks
// for none (Kubernetes' default, an hour).
const DefaultTokenExpirationSeconds = 3600

var createSubresources = []*Subresource{
	{Parent: "ServiceAccount", Name: "token", APIVersion: "authentication.k8s.io/v1", Kind: "TokenRequest",
		New: func() v1.Object { return &v1.TokenRequest{} }, Default: typedDefault(defaultTokenRequest), Validate: typed(validation.TokenRequest)},
}

func defaultTokenRequest(tr *v1.TokenRequest) {
	if tr.Spec == nil {
		tr.Spec = &v1.TokenRequestSpec{}
	}
	if tr.Spec.ExpirationSeconds == nil {
		tr.Spec.ExpirationSeconds = proto.Int64(DefaultTokenExpirationSeconds)
	}
}

// CreateSubresource returns the create subresource name of kind parent.
func CreateSubresource(parent *Kind, name string) (*Subresource, bool) {
	for _, s := range createSubresources {
		if s.Parent == parent.Name && s.Name == name {
			return s, true
		}
	}
	return nil, false
}

// CreateSubresources lists kind parent's create subresources.
func CreateSubresources(parent *Kind) []*Subresource {
	var out []*Subresource
	for _, s := range createSubresources {
		if s.Parent == parent.Name {
			out = append(out, s)
		}
	}
	return out
}
