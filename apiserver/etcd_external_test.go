package apiserver_test

import (
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	reflectpb "google.golang.org/grpc/reflection/grpc_reflection_v1"

	"github.com/tugboat/tugboat/api/client"
	"github.com/tugboat/tugboat/api/pki"
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

// etcdProcess is Debian's etcd binary on free loopback ports with
// client-certificate TLS, and peer TLS, from certificates made by
// pki.InitEtcd, as hack/install.sh --etcd local runs it.
type etcdProcess struct {
	URL    string // https://127.0.0.1:port
	PKIDir string // etcd/ca.crt, etcd/server.*, apiserver-etcd-client.*
}

// TLS is the apiserver's client TLS towards it.
func (e etcdProcess) TLS(t *testing.T) *tls.Config {
	t.Helper()
	c, err := apiserver.EtcdClientTLS(e.file(pki.EtcdCACert), e.file(pki.EtcdClientCert), e.file(pki.EtcdClientKey))
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func (e etcdProcess) file(name string) string { return filepath.Join(e.PKIDir, name) }

// Use points an apiserver config at it.
func (e etcdProcess) Use(t *testing.T) apiservertest.Option {
	tlsCfg := e.TLS(t)
	return func(c *apiserver.Config) { c.EtcdServers = []string{e.URL}; c.DataDir = ""; c.EtcdTLS = tlsCfg }
}

// etcdBinary is Debian's etcd; it skips t without one (fails under CI).
func etcdBinary(t *testing.T) string {
	t.Helper()
	bin, err := exec.LookPath("etcd")
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("etcd binary missing in CI: hack/install-deps.sh installs etcd-server")
		}
		t.Skip("etcd binary missing: run hack/install-deps.sh (Debian package etcd-server)")
	}
	return bin
}

func startEtcdProcess(t *testing.T, dir string) etcdProcess {
	t.Helper()
	bin := etcdBinary(t)
	e := etcdProcess{PKIDir: filepath.Join(dir, "pki")}
	if err := pki.InitEtcd(pki.InitOptions{Dir: e.PKIDir}); err != nil {
		t.Fatal(err)
	}
	cport, pport := freePort(t), freePort(t)
	e.URL = fmt.Sprintf("https://127.0.0.1:%d", cport)
	purl := fmt.Sprintf("https://127.0.0.1:%d", pport)
	cmd := exec.Command(bin, "--name", "t", "--data-dir", filepath.Join(dir, "data"),
		"--listen-client-urls", e.URL, "--advertise-client-urls", e.URL,
		"--cert-file", e.file(pki.EtcdServerCert), "--key-file", e.file(pki.EtcdServerKey),
		"--trusted-ca-file", e.file(pki.EtcdCACert), "--client-cert-auth",
		"--listen-peer-urls", purl, "--initial-advertise-peer-urls", purl,
		"--peer-cert-file", e.file(pki.EtcdPeerCert), "--peer-key-file", e.file(pki.EtcdPeerKey),
		"--peer-trusted-ca-file", e.file(pki.EtcdCACert), "--peer-client-cert-auth",
		"--initial-cluster", "t="+purl, "--log-level", "error")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	return e
}

// TestExternalEtcdSurvivesRestart runs the apiserver on a separate etcd
// process, restarts the apiserver, and reads the data back.
func TestExternalEtcdSurvivesRestart(t *testing.T) {
	etcd := startEtcdProcess(t, t.TempDir())
	s := apiservertest.Start(t, etcd.Use(t))
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

// TestExternalEtcdRequiresClientCert: the external etcd answers only the
// etcd CA's client certificate — not a client without one, and not a
// cluster certificate (the admin's, signed by the cluster CA).
func TestExternalEtcdRequiresClientCert(t *testing.T) {
	etcd := startEtcdProcess(t, t.TempDir())
	s := apiservertest.StartSecure(t, etcd.Use(t))
	ctx := ctxT(t)
	if _, err := client.For[*v1.ConfigMap](s.Client).Create(ctx, &v1.ConfigMap{Metadata: &v1.ObjectMeta{Name: "c"}}); err != nil {
		t.Fatal(err)
	}
	pool := etcd.TLS(t).RootCAs
	admin, err := tls.LoadX509KeyPair(filepath.Join(s.PKIDir, "admin.crt"), filepath.Join(s.PKIDir, "admin.key"))
	if err != nil {
		t.Fatal(err)
	}
	host := strings.TrimPrefix(etcd.URL, "https://")
	for name, c := range map[string]*tls.Config{
		"no certificate":           {RootCAs: pool, ServerName: "127.0.0.1"},
		"the cluster admin's cert": {RootCAs: pool, ServerName: "127.0.0.1", Certificates: []tls.Certificate{admin}},
	} {
		err := etcdVersion(host, c)
		if err == nil || !strings.Contains(err.Error(), "certificate") {
			t.Errorf("%s: want a refused certificate, got %v", name, err)
		}
		t.Logf("%s: %v", name, err)
	}
	// The apiserver's own client certificate works; plaintext does not.
	if err := etcdVersion(host, etcd.TLS(t)); err != nil {
		t.Errorf("apiserver-etcd-client: %v", err)
	}
	if err := etcdVersion(host, nil); err == nil {
		t.Error("plaintext: etcd answered")
	}
}

// etcdVersion asks etcd's /version over TLS with c (nil: plaintext) and
// returns why it got no version.
func etcdVersion(host string, c *tls.Config) error {
	d := &net.Dialer{Timeout: 2 * time.Second}
	var conn net.Conn
	var err error
	if c != nil {
		conn, err = tls.DialWithDialer(d, "tcp", host, c)
	} else {
		conn, err = d.Dial("tcp", host)
	}
	if err != nil {
		return err
	}
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(3 * time.Second))
	if _, err := conn.Write([]byte("GET /version HTTP/1.1\r\nHost: etcd\r\nConnection: close\r\n\r\n")); err != nil {
		return err
	}
	b, err := io.ReadAll(conn)
	if !strings.Contains(string(b), "etcdserver") {
		return fmt.Errorf("no version (%v): %q", err, b)
	}
	return nil
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
