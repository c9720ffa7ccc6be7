package prober

import (
	"context"
	"net"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/health"
	"google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/protobuf/proto"

	v1 "github.com/tugboat/tugboat/api/v1"
)

func TestGRPCProbe(t *testing.T) {
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := grpc.NewServer()
	hs := health.NewServer()
	grpc_health_v1.RegisterHealthServer(srv, hs)
	go srv.Serve(lis)
	defer srv.Stop()
	hs.SetServingStatus("", grpc_health_v1.HealthCheckResponse_SERVING)
	hs.SetServingStatus("db", grpc_health_v1.HealthCheckResponse_NOT_SERVING)
	ip, port := hostPort(t, lis.Addr().String())

	plain, _ := net.Listen("tcp", "127.0.0.1:0") // a TCP port with no gRPC server behind it
	defer plain.Close()
	go func() {
		for {
			c, err := plain.Accept()
			if err != nil {
				return
			}
			defer c.Close()
		}
	}()
	_, plainPort := hostPort(t, plain.Addr().String())
	closed, _ := net.Listen("tcp", "127.0.0.1:0")
	_, closedPort := hostPort(t, closed.Addr().String())
	closed.Close()

	for _, tc := range []struct {
		name    string
		port    string
		service *string
		ok      bool
		msg     string
	}{
		{"serving", port, nil, true, ""},
		{"not serving", port, proto.String("db"), false, `service unhealthy (responded with "NOT_SERVING")`},
		{"unknown service", port, proto.String("nope"), false, `service "nope" not found`},
		{"refused", closedPort, nil, false, "connection refused"},
		{"not gRPC", plainPort, nil, false, "timeout: health rpc did not complete within 500ms"},
	} {
		g := &v1.GRPCAction{Port: mustAtoi(tc.port), Service: tc.service}
		ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
		ok, msg := run(ctx, nil, &v1.Pod{}, ip, &v1.Container{Name: "c"}, "id", &v1.Probe{Grpc: g}, 500*time.Millisecond)
		cancel()
		if ok != tc.ok || !strings.Contains(msg, tc.msg) {
			t.Errorf("%s: ok %v msg %q, want %v containing %q", tc.name, ok, msg, tc.ok, tc.msg)
		}
	}
}
