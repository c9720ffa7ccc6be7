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
// RBAC; nodes never may). why is added to a refusal.
func (s *Server) authorizeVirtual(ctx context.Context, verb, resource, name, why string) error {
	u := auth.UserFrom(ctx)
	if u == nil {
		return nil // authentication is off
	}
	a := auth.Attributes{User: u, Verb: verb, APIGroup: virtualResources[resource], Resource: resource, Name: name}
	if _, isNode := u.NodeName(); isNode {
		return apierrors.New(apierrors.ErrForbidden, "%s", a.Denied("nodes may not "+verb+" "+resource))
	}
	if ok, reason := s.rbac.Authorize(a); !ok {
		s.metrics.authFailures.WithLabelValues("authorization").Inc()
		return apierrors.New(apierrors.ErrForbidden, "%s", a.Denied(reason+why))
	}
	return nil
}
