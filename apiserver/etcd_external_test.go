package apiserver_test

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	reflectpb "google.golang.org/grpc/reflection/grpc_reflection_v1"

	"github.com/tugboat/tugboat/api/client"
	v1 "github.com/tugboat/tugboat/api/v1"
	"github.com/tugboat/tugboat/apiserver"
	"github.com/tugboat/tugboat/apiserver/apiservertest"
)

func freePort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// startEtcdProcess runs Debian's etcd binary on free loopback ports.
func startEtcdProcess(t *testing.T, dir string) string {
	t.Helper()
	bin, err := exec.LookPath("etcd")
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("etcd binary missing in CI: hack/install-deps.sh installs etcd-server")
		}
		t.Skip("etcd binary missing: run hack/install-deps.sh (Debian package etcd-server)")
	}
	cport, pport := freePort(t), freePort(t)
	curl := fmt.Sprintf("http://127.0.0.1:%d", cport)
	purl := fmt.Sprintf("http://127.0.0.1:%d", pport)
	cmd := exec.Command(bin, "--name", "t", "--data-dir", dir,
		"--listen-client-urls", curl, "--advertise-client-urls", curl,
		"--listen-peer-urls", purl, "--initial-advertise-peer-urls", purl,
		"--initial-cluster", "t="+purl, "--log-level", "error")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	return curl
}

// TestExternalEtcdSurvivesRestart runs the apiserver on a separate etcd
// process, restarts the apiserver, and reads the data back.
func TestExternalEtcdSurvivesRestart(t *testing.T) {
	url := startEtcdProcess(t, t.TempDir())
	s := apiservertest.Start(t, func(c *apiserver.Config) { c.EtcdServers = []string{url}; c.DataDir = "" })
	ctx := ctxT(t)
	pods := client.For[*v1.Pod](s.Client)
	p, err := pods.Create(ctx, newPod("ext", nil))
	if err != nil {
		t.Fatal(err)
	}
	s.Restart()
	got, err := pods.Get(ctx, "default", "ext")
	if err != nil || got.Metadata.Uid != p.Metadata.Uid {
		t.Fatalf("after restart: %v %v", err, got)
	}
}

// TestHealthAndReflection checks what grpcurl and grpc_health_probe use.
func TestHealthAndReflection(t *testing.T) {
	s := apiservertest.Start(t)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	conn, err := grpc.NewClient(s.Addr(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	h, err := healthpb.NewHealthClient(conn).Check(ctx, &healthpb.HealthCheckRequest{})
	if err != nil || h.Status != healthpb.HealthCheckResponse_SERVING {
		t.Fatalf("health: %v %v", err, h)
	}
	stream, err := reflectpb.NewServerReflectionClient(conn).ServerReflectionInfo(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := stream.Send(&reflectpb.ServerReflectionRequest{MessageRequest: &reflectpb.ServerReflectionRequest_ListServices{}}); err != nil {
		t.Fatal(err)
	}
	resp, err := stream.Recv()
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, svc := range resp.GetListServicesResponse().GetService() {
		if svc.Name == "tugboat.api.v1.Objects" {
			found = true
		}
	}
	if !found {
		t.Fatalf("reflection does not list tugboat.api.v1.Objects: %v", resp)
	}
}
