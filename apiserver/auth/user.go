// Package auth is the apiserver's first check on every request: who sent
// it (authentication: a client certificate verified against the cluster CA,
// or a bearer token from the tokens file, from the API, or a service
// account token: a JWT the apiserver signed, serviceaccount.go) and whether they
// may do it (authorization: the node authorizer for kubelets, RBAC for
// everyone else). The server calls Authenticate in an interceptor and
// Authorize in each handler, once it knows the kind, namespace and name.
package auth

import (
	"context"
	"slices"
	"strings"
)

// User is an authenticated caller.
type User struct {
	Name   string
	Groups []string
	// UID is the user's uid when the authenticator knows one (a service
	// account's).
	UID string
	// Extra is what else the authenticator says (Kubernetes' user extra:
	// a service account token's pod-name, pod-uid, credential-id, ...).
	Extra map[string][]string
	// Method is certificate, token, serviceaccount or anonymous.
	Method string
	// Serial is the client certificate's serial (hexadecimal), for
	// certificate users.
	Serial string
	// TokenID is the bearer token's id, for users of API-made tokens.
	TokenID string
	// Impersonator is the authenticated caller acting as this user
	// (Method "impersonated"; the Kubernetes door's Impersonate-User).
	Impersonator *User
}

// Well-known names.
const (
	GroupMasters         = "system:masters"
	GroupNodes           = "system:nodes"
	GroupAuthenticated   = "system:authenticated"
	GroupUnauthenticated = "system:unauthenticated"
	UserAnonymous        = "system:anonymous"
	// ServiceAccountPrefix begins a service account's user name:
	// system:serviceaccount:NAMESPACE:NAME.
	ServiceAccountPrefix = "system:serviceaccount:"
	NodePrefix           = "system:node:"
)

// InGroup reports membership.
func (u *User) InGroup(g string) bool { return slices.Contains(u.Groups, g) }

// NodeName returns the node a kubelet identity speaks for, if it is one.
func (u *User) NodeName() (string, bool) {
	if u == nil || !u.InGroup(GroupNodes) || !strings.HasPrefix(u.Name, NodePrefix) {
		return "", false
	}
	n := strings.TrimPrefix(u.Name, NodePrefix)
	return n, n != ""
}

type userKey struct{}

// WithUser attaches u to ctx.
func WithUser(ctx context.Context, u *User) context.Context {
	return context.WithValue(ctx, userKey{}, u)
}

// UserFrom returns the caller, or nil when authentication is off.
func UserFrom(ctx context.Context) *User {
	u, _ := ctx.Value(userKey{}).(*User)
	return u
}
