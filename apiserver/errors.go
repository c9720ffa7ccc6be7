package apiserver

import (
	"context"

	"google.golang.org/grpc"

	"github.com/tugboat/tugboat/api/apierrors"
)

// The error edge. Handlers of every service on this server (Objects, Auth,
// the NodeAPI relay, NodeTunnel) and the authentication interceptor return
// plain errors that wrap an apierrors sentinel with a message naming the
// object or field; these two interceptors map them to gRPC status codes, once,
// through apierrors.ToGRPC (the one table). Status errors relayed from a
// kubelet pass unchanged. Interceptors outside this one (metrics) see status
// errors; those inside it (authentication, audit) see plain ones.

func unaryErrors(ctx context.Context, req any, _ *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
	resp, err := handler(ctx, req)
	return resp, apierrors.ToGRPC(err)
}

func streamErrors(srv any, ss grpc.ServerStream, _ *grpc.StreamServerInfo, handler grpc.StreamHandler) error {
	return apierrors.ToGRPC(handler(srv, ss))
}
