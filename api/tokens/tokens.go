// Package tokens is the part of the API contract that bearer and join
// tokens are: Secrets of a known type in a known namespace, which tugctl
// writes (tugctl token create) and the apiserver's authenticator and
// JoinNode read. Both sides take these names from here, so neither imports
// the other.
//
// A token is "<id>.<secret>" (6 and 16 lower-case alphanumerics). Its
// Secret is named for the id and holds the secret under "token-secret":
// a UserTokenType Secret "token-<id>" is a bearer token (data user and
// groups, comma-separated) until it is deleted; a BootstrapTokenType Secret
// "bootstrap-token-<id>" (data expiration, RFC 3339) is spent by one
// JoinNode, as Kubernetes' bootstrap tokens are.
package tokens

const (
	// Namespace holds every token Secret.
	Namespace = "kube-system"
	// UserTokenType is the Secret type of a bearer token.
	UserTokenType = "tugboat.io/user-token"
	// BootstrapTokenType is the Secret type of a join token (Kubernetes'
	// bootstrap token type).
	BootstrapTokenType = "bootstrap.kubernetes.io/token"
)
