package apiserver

import (
	"context"
	"net/http"
	"slices"
	"sort"
	"strings"

	"github.com/tugboat/tugboat/api/apierrors"
	"github.com/tugboat/tugboat/apiserver/auth"
)

// Impersonation, as Kubernetes does it (kubectl --as, --as-group): a
// request to the Kubernetes door with an Impersonate-User header (and any
// Impersonate-Group headers) is served as that user, if the authenticated
// caller may impersonate it: the verb impersonate on users (or on
// serviceaccounts in the account's namespace, for
// system:serviceaccount:NS:NAME) and on each group. The audit log names
// both: user is the caller, impersonatedUser the one it acted as; a refused
// attempt has a line of its own. Tugboat users carry no uid or extra
// fields, so Impersonate-Uid and Impersonate-Extra-* are refused.

const (
	headerImpersonateUser  = "Impersonate-User"
	headerImpersonateGroup = "Impersonate-Group"
	headerImpersonateUID   = "Impersonate-Uid"
	headerImpersonateExtra = "Impersonate-Extra-"
)

// impersonate returns ctx acting as the user h's Impersonate-* headers
// name, once the caller in ctx is allowed to; ctx as is without them.
// The headers are removed from h.
func (s *Server) impersonate(ctx context.Context, h http.Header) (context.Context, error) {
	name, groups := h.Get(headerImpersonateUser), h.Values(headerImpersonateGroup)
	var unsupported []string
	for k := range h {
		if k == headerImpersonateUID || strings.HasPrefix(k, headerImpersonateExtra) {
			unsupported = append(unsupported, k)
		}
	}
	_, named := h[headerImpersonateUser]
	if !named && len(groups) == 0 && len(unsupported) == 0 {
		return ctx, nil
	}
	h.Del(headerImpersonateUser)
	h.Del(headerImpersonateGroup)
	sort.Strings(unsupported)
	var err error
	switch {
	case len(unsupported) > 0:
		err = apierrors.New(apierrors.ErrBadRequest, "impersonation header(s) %s not supported: Tugboat users have no uid or extra fields (impersonate with Impersonate-User and Impersonate-Group)", strings.Join(unsupported, ", "))
	case name == "":
		err = apierrors.New(apierrors.ErrBadRequest, "requested %v without impersonating a user: Impersonate-Group needs Impersonate-User", groups)
	default:
		err = s.authorizeImpersonation(ctx, name, groups, "")
	}
	if err != nil {
		s.auditEvent(ctx, auditEntry{Stage: stageComplete, Verb: "impersonate", Kind: "User", Name: name, ImpersonatedGroups: groups}.withResult(err))
		return nil, err
	}
	return auth.WithUser(ctx, &auth.User{Name: name, Groups: impersonatedGroups(name, groups), Method: "impersonated", Impersonator: auth.UserFrom(ctx)}), nil
}

// authorizeImpersonation checks the caller may act as user in groups
// (impersonate on users, or on the service account, and on groups:
// Kubernetes' verb for it); why, if set, ends a refusal's message.
func (s *Server) authorizeImpersonation(ctx context.Context, user string, groups []string, why string) error {
	if ns, sa, ok := serviceAccount(user); ok {
		if caller := auth.UserFrom(ctx); caller != nil {
			a := auth.Attributes{User: caller, Verb: "impersonate", Resource: "serviceaccounts", Namespace: ns, Name: sa}
			if err := s.authorizeRBAC(a, why); err != nil {
				return err
			}
		}
	} else if err := s.authorizeVirtual(ctx, "impersonate", "users", user, why); err != nil {
		return err
	}
	for _, g := range groups {
		if err := s.authorizeVirtual(ctx, "impersonate", "groups", g, why); err != nil {
			return err
		}
	}
	return nil
}

// serviceAccount splits system:serviceaccount:NS:NAME.
func serviceAccount(user string) (ns, name string, ok bool) {
	rest, ok := strings.CutPrefix(user, auth.ServiceAccountPrefix)
	if !ok {
		return "", "", false
	}
	ns, name, ok = strings.Cut(rest, ":")
	return ns, name, ok && ns != "" && name != ""
}

// impersonatedGroups are the groups an impersonated user has, as
// Kubernetes gives them: those asked for (a service account's own groups
// when none are), plus system:authenticated (system:unauthenticated for
// system:anonymous) unless either is asked for.
func impersonatedGroups(user string, asked []string) []string {
	groups := slices.Clone(asked)
	if ns, _, ok := serviceAccount(user); ok && len(groups) == 0 {
		groups = []string{"system:serviceaccounts", "system:serviceaccounts:" + ns}
	}
	if slices.Contains(groups, auth.GroupAuthenticated) || slices.Contains(groups, auth.GroupUnauthenticated) {
		return groups
	}
	if user == auth.UserAnonymous {
		return append(groups, auth.GroupUnauthenticated)
	}
	return append(groups, auth.GroupAuthenticated)
}
