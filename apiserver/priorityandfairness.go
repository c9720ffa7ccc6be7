package apiserver

import (
	"context"
	"strings"

	"google.golang.org/grpc"

	"github.com/tugboat/tugboat/api/pki"
	"github.com/tugboat/tugboat/apiserver/auth"
	"github.com/tugboat/tugboat/apiserver/flowcontrol"
)

// priorityLevel is the flow schema match of a request (Kubernetes'
// suggested FlowSchemas, in their order of precedence): who sends it and
// about which kind.
//
//   - exempt: system:masters, and every request when authentication is
//     off (no identity to tell flows apart);
//   - leader-election: Leases of the scheduler, the controller-manager and
//     kube-system's service accounts (system-leader-election);
//   - node-high: a node's Node and Lease (system-node-high), system: a
//     node's other requests (system-nodes);
//   - workload-high: the scheduler's and controller-manager's other
//     requests (kube-scheduler, kube-controller-manager);
//   - workload-low: service accounts (service-accounts);
//   - global-default: any other authenticated user; catch-all: the rest.
func priorityLevel(u *auth.User, kind string) string {
	switch {
	case u == nil || u.InGroup(auth.GroupMasters):
		return flowcontrol.Exempt
	}
	control := u.Name == pki.UserScheduler || u.Name == pki.UserControllers
	if kind == "Lease" && (control || strings.HasPrefix(u.Name, auth.ServiceAccountPrefix+"kube-system:")) {
		return flowcontrol.LeaderElection
	}
	if _, ok := u.NodeName(); ok {
		if kind == "Node" || kind == "Lease" {
			return flowcontrol.NodeHigh
		}
		return flowcontrol.System
	}
	switch {
	case control:
		return flowcontrol.WorkloadHigh
	case strings.HasPrefix(u.Name, auth.ServiceAccountPrefix):
		return flowcontrol.WorkloadLow
	case u.InGroup(auth.GroupAuthenticated):
		return flowcontrol.GlobalDefault
	}
	return flowcontrol.CatchAll
}

// unaryFlow holds each unary call in its priority level's queue until it
// has a seat (flowcontrol). Health checks are not held: clients balance
// on them. Streams (watches, exec, logs, tunnels) are not held either:
// they last as long as their client wants.
func (s *Server) unaryFlow(ctx context.Context, req any, info *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
	if s.flow == nil || strings.HasPrefix(info.FullMethod, "/grpc.health.v1.") {
		return handler(ctx, req)
	}
	release, err := s.flow.Acquire(ctx, priorityLevel(auth.UserFrom(ctx), requestKind(req)))
	if err != nil {
		return nil, err
	}
	defer release()
	return handler(ctx, req)
}
