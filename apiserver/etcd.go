package apiserver

import (
	"context"
	"crypto/tls"
	"fmt"
	"log/slog"
	"net/url"
	"os"
	"path/filepath"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/server/v3/embed"
	"go.uber.org/zap/zapcore"
)

// EtcdSocket is the file name of the embedded etcd's socket in the data dir.
const EtcdSocket = "etcd.sock"

// maxSocketPath is the longest path a unix socket may have on Linux
// (sockaddr_un.sun_path holds 108 bytes with the terminating NUL).
const maxSocketPath = 107

// startEmbeddedEtcd runs a single-member etcd in dataDir. Its only listener
// is the unix socket dataDir/etcd.sock, mode 0600 in a data dir made 0700,
// so no other user of the machine can connect to it, and no TCP port is
// open: not for clients, and not for peers (a single member has none; its
// advertised peer URL is a placeholder nobody listens on). It returns the
// client URL (unix://...). etcd's warnings and errors go to log.
func startEmbeddedEtcd(ctx context.Context, dataDir string, log *slog.Logger) (*embed.Etcd, string, error) {
	if err := os.MkdirAll(dataDir, 0o700); err != nil {
		return nil, "", fmt.Errorf("--data-dir: %w", err)
	}
	// An existing data dir may be more open than etcd needs; the socket
	// must not be reachable through it.
	if err := os.Chmod(dataDir, 0o700); err != nil {
		return nil, "", fmt.Errorf("--data-dir: %w", err)
	}
	abs, err := filepath.Abs(dataDir)
	if err != nil {
		return nil, "", fmt.Errorf("--data-dir: %w", err)
	}
	sock := filepath.Join(abs, EtcdSocket)
	if len(sock) > maxSocketPath {
		return nil, "", fmt.Errorf("--data-dir %s: the embedded etcd's socket %s would be longer than %d bytes, the limit of a unix socket path: use a shorter --data-dir", dataDir, sock, maxSocketPath)
	}
	cfg := embed.NewConfig()
	cfg.Name = "tugboat"
	cfg.Dir = abs
	cu := url.URL{Scheme: "unix", Path: sock}
	cfg.ListenClientUrls = []url.URL{cu}
	// Advertised URLs must be host:port; a single member is never dialled
	// at them (no peers, and the apiserver dials the socket directly).
	placeholder := url.URL{Scheme: "http", Host: "localhost:0"}
	cfg.AdvertiseClientUrls = []url.URL{placeholder}
	cfg.ListenPeerUrls = nil
	cfg.AdvertisePeerUrls = []url.URL{placeholder}
	cfg.InitialCluster = cfg.Name + "=" + placeholder.String()
	cfg.LogLevel = "warn"
	cfg.Logger = "zap"
	cfg.ZapLoggerBuilder = embed.NewZapLoggerBuilder(newZapToSlog(log, zapcore.WarnLevel))
	// embed.NewConfig leaves this 0 (etcdmain's flag sets it), which makes
	// etcd log every request as slow.
	cfg.WarningUnaryRequestDuration = embed.DefaultWarningUnaryRequestDuration
	// Keep memory small for a lab: snapshot more often than the default.
	cfg.SnapshotCount = 10000
	e, err := embed.StartEtcd(cfg)
	if err != nil {
		return nil, "", fmt.Errorf("starting embedded etcd in %s: %w", dataDir, err)
	}
	select {
	case <-e.Server.ReadyNotify():
	case <-time.After(60 * time.Second):
		e.Close()
		return nil, "", fmt.Errorf("embedded etcd in %s did not become ready in 60s", dataDir)
	case <-ctx.Done():
		e.Close()
		return nil, "", ctx.Err()
	}
	// The directory already keeps others out; the socket's own mode says
	// the same to whoever looks.
	if err := os.Chmod(sock, 0o600); err != nil {
		e.Close()
		return nil, "", fmt.Errorf("embedded etcd socket: %w", err)
	}
	return e, "unix://" + sock, nil
}

// dialEtcd connects to etcd (with client-certificate TLS when tlsCfg is
// set) and checks it answers. The client's errors go to log (its warnings
// are one per failed request, retried or not: the caller reports those).
func dialEtcd(ctx context.Context, endpoints []string, tlsCfg *tls.Config, log *slog.Logger) (*clientv3.Client, error) {
	cli, err := clientv3.New(clientv3.Config{
		Endpoints:   endpoints,
		DialTimeout: 5 * time.Second,
		TLS:         tlsCfg,
		Logger:      newZapToSlog(log, zapcore.ErrorLevel),
	})
	if err != nil {
		return nil, fmt.Errorf("etcd %v: %w", endpoints, err)
	}
	cctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if _, err := cli.Get(cctx, "/registry-revision-probe", clientv3.WithCountOnly()); err != nil {
		cli.Close()
		return nil, fmt.Errorf("etcd %v is not answering: %w", endpoints, err)
	}
	return cli, nil
}
