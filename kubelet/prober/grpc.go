package prober

import (
	"context"
	"fmt"
	"net"
	"strconv"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/status"

	v1 "github.com/tugboat/tugboat/api/v1"
)

// grpcProbe calls grpc.health.v1.Health/Check on the pod's IP and port
// with the probe's service name, over plaintext (as Kubernetes: no TLS,
// no authentication); SERVING is a success, anything else or an error a
// failure, with Kubernetes' messages.
func grpcProbe(ctx context.Context, podIP string, g *v1.GRPCAction, timeout time.Duration) (bool, string) {
	if podIP == "" {
		return false, "gRPC probe: the pod has no IP yet"
	}
	addr := net.JoinHostPort(podIP, strconv.Itoa(int(g.Port)))
	service := g.GetService()
	conn, err := grpc.NewClient(addr,
		grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithUserAgent("tugboat-probe/1.0"),
	)
	if err != nil {
		return false, fmt.Sprintf("failed to connect service %q: %v", addr, err)
	}
	defer conn.Close()
	resp, err := grpc_health_v1.NewHealthClient(conn).Check(ctx, &grpc_health_v1.HealthCheckRequest{Service: service})
	if err != nil {
		st, ok := status.FromError(err)
		switch {
		case ok && st.Code() == codes.Unimplemented:
			return false, fmt.Sprintf("this server does not implement the grpc health protocol (grpc.health.v1.Health): %s", st.Message())
		case ok && st.Code() == codes.DeadlineExceeded, ctx.Err() != nil:
			return false, fmt.Sprintf("timeout: health rpc did not complete within %v", timeout)
		case ok && st.Code() == codes.NotFound:
			return false, fmt.Sprintf("service %q not found by the health server at %s", service, addr)
		}
		return false, fmt.Sprintf("error: health rpc probe failed: %v", err)
	}
	if resp.GetStatus() != grpc_health_v1.HealthCheckResponse_SERVING {
		return false, fmt.Sprintf("service unhealthy (responded with %q)", resp.GetStatus().String())
	}
	return true, ""
}
