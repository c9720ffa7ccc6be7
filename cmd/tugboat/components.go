package main

import (
	"context"
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
	"time"

	"github.com/tugboat/tugboat/api/client"
	"github.com/tugboat/tugboat/api/pki"
	"github.com/tugboat/tugboat/apiserver"
	"github.com/tugboat/tugboat/apiserver/storage"
	"github.com/tugboat/tugboat/controllers/manager"
	"github.com/tugboat/tugboat/kubelet"
	"github.com/tugboat/tugboat/proxy"
	"github.com/tugboat/tugboat/scheduler"
)

// part is one part of the cluster: a name and its Run.
type part struct {
	name string
	run  func(ctx context.Context) error
}

// apiserverConfig is cmd/apiserver's secure default (--pki-dir: serving
// pair, CA, service account key; an encryption key for Secrets) with the embedded etcd in DataDir/etcd.
func apiserverConfig(cfg Config) (apiserver.Config, error) {
	dir := cfg.pkiDir()
	t, err := apiserver.ServingTLS(filepath.Join(dir, "apiserver.crt"), filepath.Join(dir, "apiserver.key"), filepath.Join(dir, "ca.crt"))
	if err != nil {
		return apiserver.Config{}, err
	}
	ca, err := pki.LoadCA(filepath.Join(dir, "ca.crt"), filepath.Join(dir, "ca.key"))
	if err != nil {
		return apiserver.Config{}, fmt.Errorf("cluster CA: %w", err)
	}
	enc, err := storage.LoadEncryption(filepath.Join(dir, encryptionKeyFile), "secrets")
	if err != nil {
		return apiserver.Config{}, err
	}
	c := apiserver.Config{
		Listen:        cfg.Listen,
		KubeListen:    cfg.KubeListen,
		MetricsListen: "127.0.0.1:9443",
		DataDir:       filepath.Join(cfg.DataDir, "etcd"),
		TLS:           t,
		Auth:          &apiserver.AuthConfig{SigningCA: ca},
		Encryption:    enc,
		ServiceCIDR:   cfg.ServiceCIDR,
		Logger:        cfg.Logger.With("component", "apiserver"),
	}
	// Service account tokens (the serviceaccounts/token subresource), as
	// cmd/apiserver --pki-dir: every pod's kube-api-access volume asks
	// for one.
	if err := apiserver.ServiceAccountFromDir(&c, dir); err != nil {
		return apiserver.Config{}, err
	}
	return c, nil
}

// clientConfig is a client of the apiserver presenting the certificate
// pair identity from the PKI folder ("scheduler", "node-<name>", ...).
func clientConfig(cfg Config, identity string) (client.Config, error) {
	dir := cfg.pkiDir()
	t, err := client.TLSFromFiles(filepath.Join(dir, "ca.crt"), filepath.Join(dir, identity+".crt"), filepath.Join(dir, identity+".key"))
	if err != nil {
		return client.Config{}, fmt.Errorf("credentials %s: %w", identity, err)
	}
	return client.Config{Server: cfg.dialAddr(), TLS: t, UserAgent: "tugboat-" + identity}, nil
}

func newClient(cfg Config, identity string) (*client.Client, error) {
	cc, err := clientConfig(cfg, identity)
	if err != nil {
		return nil, err
	}
	return client.New(cc)
}

// withClient runs f with a client of identity, closed when f returns.
func withClient(cfg Config, identity string, f func(ctx context.Context, c *client.Client) error) func(context.Context) error {
	return func(ctx context.Context) error {
		c, err := newClient(cfg, identity)
		if err != nil {
			return err
		}
		defer c.Close()
		return f(ctx, c)
	}
}

// parts are the scheduler, controller-manager, kubelet and proxy,
// configured as their binaries' defaults for a single node (no leader
// election: there is one replica).
func parts(cfg Config) []part {
	log := cfg.Logger
	return []part{
		{"scheduler", withClient(cfg, "scheduler", func(ctx context.Context, c *client.Client) error {
			s, err := scheduler.New(c, scheduler.Config{MetricsListen: "127.0.0.1:10259", Logger: log.With("component", "scheduler")})
			if err != nil {
				return err
			}
			return s.Run(ctx)
		})},
		{"controller-manager", withClient(cfg, "controller-manager", func(ctx context.Context, c *client.Client) error {
			mc := manager.Config{Client: c, MetricsListen: "127.0.0.1:10257", Logger: log.With("component", "controller-manager")}
			mc.NodeIPAM.ClusterCIDR = cfg.ClusterCIDR
			ca, err := os.ReadFile(filepath.Join(cfg.pkiDir(), "ca.crt"))
			if err != nil {
				return err
			}
			mc.RootCACertPublisher.RootCA = ca
			return manager.Run(ctx, mc)
		})},
		{"kubelet", func(ctx context.Context) error {
			cc, err := clientConfig(cfg, "node-"+cfg.NodeName)
			if err != nil {
				return err
			}
			kc := kubeletConfig(cfg)
			kc.Client = cc
			return kubelet.Run(ctx, kc)
		}},
		{"proxy", withClient(cfg, "proxy", func(ctx context.Context, c *client.Client) error {
			return proxy.Run(ctx, proxyConfig(cfg, c))
		})},
	}
}

// proxyConfig is the node's proxy: cmd/proxy's defaults, the Ingress
// listeners of --ingress-listen and --ingress-tls-listen.
func proxyConfig(cfg Config, c *client.Client) proxy.Config {
	pc := proxy.Config{
		Client:           c,
		NodeName:         cfg.NodeName,
		ClusterCIDR:      netip.MustParsePrefix(cfg.ClusterCIDR),
		ClusterDNS:       netip.MustParseAddr(proxy.DefaultClusterDNS),
		ClusterDomain:    proxy.DefaultClusterDomain,
		ResolvConf:       resolvConf(),
		UpstreamTimeout:  2 * time.Second,
		MetricsListen:    proxy.DefaultMetricsListen,
		FullSyncPeriod:   10 * time.Minute,
		NetworkPolicy:    true,
		IngressListen:    cfg.IngressListen,
		IngressTLSListen: cfg.IngressTLSListen,
		Logger:           cfg.Logger.With("component", "proxy"),
	}
	if cfg.NodeIP != "" {
		pc.NodeIP = netip.MustParseAddr(cfg.NodeIP)
	}
	return pc
}

// kubeletConfig is the node's kubelet, without its client: what up runs
// and down cleans up after. Under CRI (the default) its runtime is the one
// at --container-runtime-endpoint, or a containerd of its own in
// <data-dir>/containerd; natively the containerd answering at
// ContainerdSocket, or its own.
func kubeletConfig(cfg Config) kubelet.Config {
	return kubelet.Config{
		Runtime:             cfg.Runtime,
		RuntimeEndpoint:     cfg.criEndpoint(),
		NodeName:            cfg.NodeName,
		NodeIP:              cfg.NodeIP,
		RootDir:             filepath.Join(cfg.DataDir, "kubelet"),
		ContainerdSocket:    cfg.ContainerdSocket,
		ContainerdDir:       cfg.containerdDir(),
		ContainerdNamespace: cfg.ContainerdNamespace,
		CgroupRoot:          cfg.CgroupRoot,
		RegistryInsecure:    cfg.RegistryInsecure,
		CNIBinDirs:          cfg.CNIBinDirs,
		CNIConfDir:          cfg.CNIConfDir,
		ClusterCIDR:         cfg.ClusterCIDR,
		NodeStatusInterval:  2 * time.Second,
		MetricsListen:       kubelet.DefaultMetricsListen,
		Logger:              cfg.Logger.With("component", "kubelet"),
	}
}

// resolvConf is the host's real resolvers: systemd-resolved's upstream
// list when it runs (/etc/resolv.conf then names only its loopback stub,
// which pods cannot use), else /etc/resolv.conf.
func resolvConf() string {
	const resolved = "/run/systemd/resolve/resolv.conf"
	if _, err := os.Stat(resolved); err == nil {
		return resolved
	}
	return proxy.DefaultResolvConf
}
