package apiserver

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/url"
	"strings"
	"syscall"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/server/v3/embed"
	"go.uber.org/zap"
	"google.golang.org/grpc"
)

// startEmbeddedEtcd runs a single-member etcd in dataDir with its client URL
// on listen (port 0: a free port) and its peer URL on a free loopback port.
// A free port can be taken by another process between picking and
// binding it: that case is retried with new ports.
func startEmbeddedEtcd(ctx context.Context, dataDir, listen string) (*embed.Etcd, string, error) {
	for attempt := 0; ; attempt++ {
		e, url, err := startEmbeddedEtcdOnce(ctx, dataDir, listen)
		if err != nil && attempt < 5 && strings.HasSuffix(listen, ":0") && (errors.Is(err, syscall.EADDRINUSE) || strings.Contains(err.Error(), "address already in use")) {
			continue
		}
		return e, url, err
	}
}

func startEmbeddedEtcdOnce(ctx context.Context, dataDir, listen string) (*embed.Etcd, string, error) {
	clientAddr, err := freeAddr(listen)
	if err != nil {
		return nil, "", fmt.Errorf("--etcd-listen: %w", err)
	}
	peerAddr, err := freeAddr("127.0.0.1:0")
	if err != nil {
		return nil, "", err
	}
	cfg := embed.NewConfig()
	cfg.Name = "tugboat"
	cfg.Dir = dataDir
	cu := url.URL{Scheme: "http", Host: clientAddr}
	pu := url.URL{Scheme: "http", Host: peerAddr}
	cfg.ListenClientUrls = []url.URL{cu}
	cfg.AdvertiseClientUrls = []url.URL{cu}
	cfg.ListenPeerUrls = []url.URL{pu}
	cfg.AdvertisePeerUrls = []url.URL{pu}
	cfg.InitialCluster = cfg.Name + "=" + pu.String()
	cfg.LogLevel = "error"
	cfg.Logger = "zap"
	// Keep memory small for a lab: snapshot more often than the default.
	cfg.SnapshotCount = 10000
	cfg.ZapLoggerBuilder = embed.NewZapLoggerBuilder(zap.NewNop())
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
	return e, cu.String(), nil
}

// freeAddr resolves port 0 to a free port on the same host.
func freeAddr(addr string) (string, error) {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return "", err
	}
	if port != "0" {
		return addr, nil
	}
	l, err := net.Listen("tcp", net.JoinHostPort(host, "0"))
	if err != nil {
		return "", err
	}
	defer l.Close()
	return l.Addr().String(), nil
}

// dialEtcd connects to etcd and checks it answers.
func dialEtcd(ctx context.Context, endpoints []string) (*clientv3.Client, error) {
	cli, err := clientv3.New(clientv3.Config{
		Endpoints:   endpoints,
		DialTimeout: 5 * time.Second,
		Logger:      zap.NewNop(),
		DialOptions: []grpc.DialOption{},
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
