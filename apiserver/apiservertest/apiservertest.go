// Package apiservertest starts a real apiserver on a real embedded etcd for
// tests: etcd data in t.TempDir(), free loopback ports, everything stopped by
// t.Cleanup. Restart keeps the data, as a process restart would.
package apiservertest

import (
	"context"
	"crypto/tls"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"

	"github.com/tugboat/tugboat/api/client"
	"github.com/tugboat/tugboat/api/pki"
	"github.com/tugboat/tugboat/api/wait"
	"github.com/tugboat/tugboat/apiserver"
)

// Server is a running test apiserver.
type Server struct {
	*apiserver.Server
	Client *client.Client

	t         testing.TB
	cfg       apiserver.Config
	clientTLS *tls.Config
	// PKIDir holds the cluster CA and certificates when started with StartSecure.
	PKIDir string
	cancel context.CancelFunc
	done   chan error
}

// Option adjusts the config before start.
type Option func(*apiserver.Config)

// WithKubeAPI serves the Kubernetes HTTP API on a free loopback port
// (Server.KubeAddr).
func WithKubeAPI(c *apiserver.Config) { c.KubeListen = "127.0.0.1:0" }

// Start runs an apiserver with embedded etcd and returns it with a client.
func Start(t testing.TB, opts ...Option) *Server {
	t.Helper()
	return start(t, "", opts)
}

// StartSecure runs an apiserver with TLS 1.3, client certificates, RBAC
// and the node authorizer on, using certificates made by pki.Init in a temp
// dir (server, admin, scheduler, controller-manager, proxy, and nodes n1 and
// n2). s.Client is the admin (system:masters).
func StartSecure(t testing.TB, opts ...Option) *Server {
	t.Helper()
	dir := t.TempDir()
	if err := pki.Init(pki.InitOptions{Dir: dir, Nodes: []string{"n1", "n2"}}); err != nil {
		t.Fatal(err)
	}
	return start(t, dir, opts)
}

// ClientAs returns a client presenting the certificate pair name (from the
// PKI dir: "admin", "scheduler", "node-n1", ...); "" presents none.
func (s *Server) ClientAs(name string) *client.Client {
	s.t.Helper()
	cfg := client.Config{Server: s.Addr(), UserAgent: "test-" + name}
	if s.PKIDir != "" {
		var err error
		cert, key := "", ""
		if name != "" {
			cert, key = filepath.Join(s.PKIDir, name+".crt"), filepath.Join(s.PKIDir, name+".key")
		}
		cfg.TLS, err = client.TLSFromFiles(filepath.Join(s.PKIDir, "ca.crt"), cert, key)
		if err != nil {
			s.t.Fatal(err)
		}
	}
	c, err := client.New(cfg)
	if err != nil {
		s.t.Fatal(err)
	}
	s.t.Cleanup(func() { c.Close() })
	return c
}

// Etcd returns a client of the server's etcd, closed when the test ends:
// for tests that look at (or tamper with) what is stored at rest. Nothing
// else but the apiserver's storage talks to etcd.
func (s *Server) Etcd() *clientv3.Client {
	s.t.Helper()
	c, err := clientv3.New(clientv3.Config{Endpoints: s.EtcdEndpoints(), TLS: s.cfg.EtcdTLS, DialTimeout: 5 * time.Second, Logger: zap.NewNop()})
	if err != nil {
		s.t.Fatalf("etcd client: %v", err)
	}
	s.t.Cleanup(func() { c.Close() })
	return c
}

func start(t testing.TB, pkiDir string, opts []Option) *Server {
	cfg := apiserver.Config{
		Listen:           "127.0.0.1:0",
		DataDir:          t.TempDir(),
		BookmarkInterval: time.Second,
		Logger:           testLogger(),
	}
	s := &Server{t: t, PKIDir: pkiDir}
	if pkiDir != "" {
		if err := apiserver.SecureFromPKIDir(&cfg, pkiDir); err != nil {
			t.Fatal(err)
		}
		var err error
		s.clientTLS, err = client.TLSFromFiles(filepath.Join(pkiDir, "ca.crt"), filepath.Join(pkiDir, "admin.crt"), filepath.Join(pkiDir, "admin.key"))
		if err != nil {
			t.Fatal(err)
		}
	}
	for _, o := range opts {
		o(&cfg)
	}
	s.cfg = cfg
	s.start()
	t.Cleanup(s.Stop)
	return s
}

func testLogger() *slog.Logger {
	if os.Getenv("TUGBOAT_TEST_LOG") != "" {
		return slog.New(slog.NewTextHandler(os.Stderr, nil))
	}
	return slog.New(slog.NewTextHandler(io.Discard, nil))
}

func (s *Server) start() {
	s.t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	srv, err := apiserver.New(ctx, s.cfg)
	if err != nil {
		cancel()
		s.t.Fatalf("starting apiserver: %v", err)
	}
	s.Server = srv
	s.cancel = cancel
	s.done = make(chan error, 1)
	go func() { s.done <- srv.Run(ctx) }()
	// Keep the same ports across restarts so clients reconnect.
	s.cfg.Listen = srv.Addr()
	if s.cfg.KubeListen != "" {
		s.cfg.KubeListen = srv.KubeAddr()
	}
	if s.Client == nil {
		// One client for the server's life: it reconnects across restarts.
		c, err := client.New(client.Config{Server: srv.Addr(), UserAgent: "test", TLS: s.clientTLS})
		if err != nil {
			s.t.Fatalf("client: %v", err)
		}
		s.Client = c
		s.t.Cleanup(func() { c.Close() })
	}
	s.waitReady()
}

func (s *Server) waitReady() {
	wait.Eventually(s.t, 30*time.Second, "the apiserver at "+s.Addr(), func() error {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		_, err := s.Client.Objects().Get(ctx, nsGet)
		return err
	})
}

// Stop stops the apiserver and its etcd (idempotent).
func (s *Server) Stop() {
	if s.cancel == nil {
		return
	}
	s.cancel()
	<-s.done
	s.cancel = nil
}

// Restart stops the apiserver and starts a new one on the same address and
// etcd data directory.
func (s *Server) Restart() {
	s.t.Helper()
	s.Stop()
	s.start()
}

// Config is the config the server runs with.
func (s *Server) Config() apiserver.Config { return s.cfg }
