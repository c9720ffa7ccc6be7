package apiserver

import (
	"context"

	"github.com/tugboat/tugboat/api/apierrors"
	"github.com/tugboat/tugboat/api/kinds"
	"github.com/tugboat/tugboat/apiserver/auth"
)

// virtualResources are the resources RBAC names that are not kinds.
var virtualResources = kinds.NonKindResources

// authorizeVirtual checks the caller may verb the virtual resource (by
// RBAC; nodes never may). why, if set, ends a refusal's message.
func (s *Server) authorizeVirtual(ctx context.Context, verb, resource, name, why string) error {
	u := auth.UserFrom(ctx)
	if u == nil {
		return nil // authentication is off
	}
	return s.authorizeRBAC(auth.Attributes{User: u, Verb: verb, APIGroup: virtualResources[resource], Resource: resource, Name: name}, why)
}

// authorizeRBAC checks a (its User set) by RBAC alone: nodes never may.
func (s *Server) authorizeRBAC(a auth.Attributes, why string) error {
	if _, isNode := a.User.NodeName(); isNode {
		return apierrors.New(apierrors.ErrForbidden, "%s", a.Denied("nodes may not "+a.Verb+" "+a.Resource))
	}
	if ok, _ := s.rbac.Authorize(a); !ok {
		s.metrics.authFailures.WithLabelValues("authorization").Inc()
		return apierrors.New(apierrors.ErrForbidden, "%s", a.Denied(why))
	}
	return nil
}
