package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/netip"
	"path/filepath"
	"sync"
	"time"

	"github.com/tugboat/tugboat/api/client"
	v1 "github.com/tugboat/tugboat/api/v1"
	"github.com/tugboat/tugboat/apiserver"
	"github.com/tugboat/tugboat/kubelet"
	"github.com/tugboat/tugboat/kubelet/runtime/containerd/daemon"
)

// Config is the single-node cluster; every field has a flag of `tugboat up`.
type Config struct {
	// DataDir holds etcd's data (etcd/), the certificates (pki/) and the
	// kubelet's root dir (kubelet/).
	DataDir string
	// Listen is the apiserver's address, which the components dial too.
	Listen string
	// KubeListen is the address of the Kubernetes HTTP API (kubectl); ""
	// disables it.
	KubeListen string
	// NodeName and NodeIP identify the node (NodeIP empty: detected).
	NodeName string
	NodeIP   string
	// Runtime is the kubelet's backend (--runtime): cri (default) drives
	// the runtime at RuntimeEndpoint over CRI, or, with RuntimeEndpoint
	// empty, a containerd of the kubelet's own in <DataDir>/containerd
	// configured for it (CRI on, Tugboat's pause image, the CNI folders);
	// containerd drives containerd natively at ContainerdSocket (its own
	// in <DataDir>/containerd when none answers there).
	Runtime         string
	RuntimeEndpoint string
	// ContainerdSocket, ContainerdNamespace (native backend) and
	// CgroupRoot place the pods.
	ContainerdSocket    string
	ContainerdNamespace string
	CgroupRoot          string
	// CNIBinDirs and CNIConfDir: the CNI plugins and config.
	CNIBinDirs []string
	CNIConfDir string
	// ClusterCIDR (pods) and ServiceCIDR (ClusterIPs).
	ClusterCIDR string
	ServiceCIDR string
	// RegistryInsecure are registries pulled from over plain HTTP.
	RegistryInsecure []string
	// ImportImages, if set, is a folder whose *.tar are copied into the
	// node's image import folder at start.
	ImportImages string
	// AdminConfig is where the admin tugctl config goes (default
	// <DataDir>/admin.config); NoUserConfig skips the copy for the user
	// who ran sudo.
	AdminConfig  string
	NoUserConfig bool
	// IngressListen and IngressTLSListen are the proxy's Ingress
	// listeners (--ingress-listen, --ingress-tls-listen, as the proxy's
	// flags; empty: that one off).
	IngressListen, IngressTLSListen string
	Logger                          *slog.Logger
}

func (c *Config) setDefaults() {
	if c.AdminConfig == "" {
		c.AdminConfig = filepath.Join(c.DataDir, "admin.config")
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
}

// Validate names the first bad flag.
func (c *Config) Validate() error {
	switch {
	case c.DataDir == "" || !filepath.IsAbs(c.DataDir):
		return fmt.Errorf("--data-dir %q: must be an absolute path", c.DataDir)
	case c.NodeName == "":
		return errors.New("--node-name: required (the host name is unknown)")
	case len(c.CNIBinDirs) == 0:
		return errors.New("--cni-bin-dir: required")
	case c.Runtime != kubelet.RuntimeCRI && c.Runtime != kubelet.RuntimeContainerd:
		return fmt.Errorf("--runtime %q: want %s or %s", c.Runtime, kubelet.RuntimeCRI, kubelet.RuntimeContainerd)
	}
	if _, _, err := net.SplitHostPort(c.Listen); err != nil {
		return fmt.Errorf("--listen %q: %v", c.Listen, err)
	}
	for flag, addr := range map[string]string{"--ingress-listen": c.IngressListen, "--ingress-tls-listen": c.IngressTLSListen} {
		if addr == "" {
			continue
		}
		if _, _, err := net.SplitHostPort(addr); err != nil {
			return fmt.Errorf("%s %q: %v", flag, addr, err)
		}
	}
	if c.KubeListen != "" {
		if _, _, err := net.SplitHostPort(c.KubeListen); err != nil {
			return fmt.Errorf("--kube-listen %q: %v", c.KubeListen, err)
		}
	}
	if c.NodeIP != "" {
		if _, err := netip.ParseAddr(c.NodeIP); err != nil {
			return fmt.Errorf("--node-ip %q: %v", c.NodeIP, err)
		}
	}
	for flag, s := range map[string]string{"--cluster-cidr": c.ClusterCIDR, "--service-cidr": c.ServiceCIDR} {
		if _, err := netip.ParsePrefix(s); err != nil {
			return fmt.Errorf("%s %q: %v", flag, s, err)
		}
	}
	return nil
}

func (c Config) pkiDir() string { return filepath.Join(c.DataDir, "pki") }

// containerdDir is where the kubelet runs a containerd of its own when
// none answers at ContainerdSocket.
func (c Config) containerdDir() string { return filepath.Join(c.DataDir, "containerd") }

// criEndpoint is the kubelet's CRI endpoint: RuntimeEndpoint, else its
// own containerd's socket (nothing answers there before the kubelet
// starts it, so it does).
func (c Config) criEndpoint() string {
	if c.RuntimeEndpoint != "" {
		return c.RuntimeEndpoint
	}
	return "unix://" + daemon.Address(c.containerdDir())
}

// dialAddr is how the components and tugctl reach the apiserver: Listen,
// with a wildcard host replaced by loopback.
func (c Config) dialAddr() string { return dialable(c.Listen) }

// dialable is a listen address as a client dials it (0.0.0.0 -> 127.0.0.1).
func dialable(listen string) string {
	host, port, _ := net.SplitHostPort(listen)
	if ip := net.ParseIP(host); host == "" || (ip != nil && ip.IsUnspecified()) {
		host = "127.0.0.1"
	}
	return net.JoinHostPort(host, port)
}

// Run runs the cluster until ctx ends. The apiserver starts first; once it
// answers, the scheduler, controller-manager, kubelet and proxy start. If
// any of them fails, all stop and Run returns that error. On ctx's end the
// node and control-plane components stop first, the apiserver last.
func Run(ctx context.Context, cfg Config) error {
	cfg.setDefaults()
	if err := cfg.Validate(); err != nil {
		return err
	}
	log := cfg.Logger
	if err := preflight(cfg); err != nil {
		return err
	}
	if err := ensurePKI(cfg, log); err != nil {
		return err
	}
	srvCfg, err := apiserverConfig(cfg)
	if err != nil {
		return err
	}
	srv, err := apiserver.New(ctx, srvCfg)
	if err != nil {
		return fmt.Errorf("apiserver: %w", err)
	}

	// The apiserver outlives the others: it is cancelled after they stop.
	apiCtx, apiCancel := context.WithCancel(context.WithoutCancel(ctx))
	defer apiCancel()
	compCtx, compCancel := context.WithCancelCause(ctx)
	defer compCancel(nil)
	apiDone := make(chan error, 1)
	go func() {
		err := srv.Run(apiCtx)
		if apiCtx.Err() == nil {
			compCancel(fmt.Errorf("apiserver stopped: %v", err))
		}
		apiDone <- err
	}()
	stopAPI := func() error {
		apiCancel()
		return <-apiDone
	}

	admin, err := newClient(cfg, "admin")
	if err != nil {
		return errors.Join(err, stopAPI())
	}
	defer admin.Close()
	if err := waitAPIServer(compCtx, admin); err != nil {
		return errors.Join(err, context.Cause(compCtx), stopAPI())
	}
	if err := writeAdminConfigs(cfg, log); err != nil {
		return errors.Join(err, stopAPI())
	}
	if err := importImages(cfg, log); err != nil {
		return errors.Join(err, stopAPI())
	}
	checkSandboxImage(cfg, log)

	var wg sync.WaitGroup
	for _, c := range parts(cfg) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			err := c.run(compCtx)
			if compCtx.Err() == nil {
				if err == nil {
					err = errors.New("stopped")
				}
				compCancel(fmt.Errorf("%s: %w", c.name, err))
			}
		}()
	}
	log.Info("cluster up: TLS and RBAC on", "node", cfg.NodeName, "apiserver", cfg.dialAddr(), "adminConfig", cfg.AdminConfig)
	<-compCtx.Done()
	wg.Wait()
	apiErr := stopAPI()
	if cause := context.Cause(compCtx); ctx.Err() == nil || !errors.Is(cause, ctx.Err()) {
		return cause
	}
	if apiErr != nil && !errors.Is(apiErr, context.Canceled) {
		log.Warn("apiserver stopped with an error", "err", apiErr)
	}
	return nil
}

// waitAPIServer waits until the apiserver answers the admin.
func waitAPIServer(ctx context.Context, admin *client.Client) error {
	deadline := time.Now().Add(60 * time.Second)
	for {
		rctx, cancel := context.WithTimeout(ctx, time.Second)
		_, err := client.For[*v1.Namespace](admin).Get(rctx, "", "default")
		cancel()
		if err == nil {
			return nil
		}
		if ctx.Err() != nil {
			return fmt.Errorf("waiting for the apiserver: %w", ctx.Err())
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("the apiserver does not answer after 60s: %w", err)
		}
		select {
		case <-ctx.Done():
		case <-time.After(100 * time.Millisecond):
		}
	}
}
