// Package tokens is the part of the API contract that bearer and join
// tokens are: Secrets of two types in one namespace that only the
// apiserver makes (Auth.CreateToken, tugctl token create) and reads
// (authentication, JoinNode). Both sides take these names from here, so
// neither imports the other.
//
// A token is "<id>.<secret>" (6 and 16 lower-case alphanumerics). Its
// Secret is named for the id and holds the SHA-256 of the secret under
// DataSecretHash (never the secret itself); reading such a Secret through
// the API returns neither. A UserTokenType Secret "token-<id>" is a bearer
// token (data user and groups, comma-separated) until it is deleted or its
// expiration passes; a BootstrapTokenType Secret "bootstrap-token-<id>"
// (data expiration, RFC 3339) is spent by one JoinNode, as Kubernetes'
// bootstrap tokens are. The Objects API refuses to create or change
// Secrets of either type: nobody with create on secrets in kube-system can
// mint a credential through it.
package tokens

import (
	"crypto/sha256"
	"encoding/hex"
)

const (
	// Namespace holds every token Secret.
	Namespace = "kube-system"
	// UserTokenType is the Secret type of a bearer token.
	UserTokenType = "tugboat.io/user-token"
	// BootstrapTokenType is the Secret type of a join token (Kubernetes'
	// bootstrap token type).
	BootstrapTokenType = "bootstrap.kubernetes.io/token"
	// UserPrefix and JoinPrefix name token Secrets: prefix + id.
	UserPrefix = "token-"
	JoinPrefix = "bootstrap-token-"
)

// Data keys of a token Secret.
const (
	DataID          = "token-id"
	DataSecretHash  = "token-secret-sha256"
	DataExpiration  = "expiration"
	DataDescription = "description"
	DataUser        = "user"
	DataGroups      = "groups"
	// DataReplaceNode names the node a join token may take over.
	DataReplaceNode = "replace-node"
	// DataSecret is where versions before hashing kept the secret itself:
	// still accepted, never returned.
	DataSecret = "token-secret"
)

// IsTokenType reports whether a Secret type is one only the apiserver writes.
func IsTokenType(t string) bool { return t == UserTokenType || t == BootstrapTokenType }

// Hash is what a token Secret stores of the secret part.
func Hash(secret string) []byte {
	h := sha256.Sum256([]byte(secret))
	return []byte(hex.EncodeToString(h[:]))
}
