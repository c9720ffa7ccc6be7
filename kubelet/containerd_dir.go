package kubelet

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"time"

	"github.com/tugboat/tugboat/internal/containerdconfig"
	"github.com/tugboat/tugboat/kubelet/network"
	"github.com/tugboat/tugboat/kubelet/pod"
	"github.com/tugboat/tugboat/kubelet/runtime/containerd/daemon"
	"github.com/tugboat/tugboat/kubelet/runtime/cri"
)

// ownContainerd starts the kubelet's own containerd in cfg.ContainerdDir
// when the node has none (as k3s runs its own): when the dir holds the
// state of an earlier one (its pods are there), or no containerd answers
// at cfg.ContainerdSocket. It points cfg.ContainerdSocket (and, left at
// its default, cfg.ImageFSDir) at it and returns it; the caller stops it,
// which leaves its containers running. With no ContainerdDir, or a
// containerd answering and no earlier state, it returns nil.
func ownContainerd(ctx context.Context, cfg *Config, log *slog.Logger) (*daemon.Daemon, error) {
	if cfg.ContainerdDir == "" {
		return nil, nil
	}
	socket := cfg.ContainerdSocket
	if cfg.Runtime == RuntimeCRI {
		socket, _ = cri.SocketPath(cfg.RuntimeEndpoint)
	}
	if !hasOwnContainerdState(cfg.ContainerdDir) {
		pctx, cancel := context.WithTimeout(ctx, 3*time.Second)
		err := daemon.Ping(pctx, socket)
		cancel()
		if err == nil {
			return nil, nil
		}
		log.Info("no containerd answers; starting one of the kubelet's own", "socket", socket, "err", err, "dir", cfg.ContainerdDir)
	}
	opts, err := cfg.ownContainerdOptions(log)
	if err != nil {
		return nil, fmt.Errorf("--containerd-dir: %w", err)
	}
	if cfg.Runtime == RuntimeCRI {
		// Before its CRI plugin makes the folder: the kubelet's, removed
		// by its cleanup.
		if err := network.MakeConfDir(cfg.networkConfig(pod.Config{RootDir: cfg.RootDir})); err != nil {
			return nil, fmt.Errorf("--cni-conf-dir: %w", err)
		}
	}
	d, err := daemon.Start(ctx, opts)
	if err != nil {
		return nil, fmt.Errorf("--containerd-dir: %w", err)
	}
	cfg.ContainerdSocket = d.Address
	cfg.RuntimeEndpoint = "unix://" + d.Address
	if cfg.ImageFSDir == DefaultImageFSDir {
		cfg.ImageFSDir = filepath.Join(cfg.ContainerdDir, "root")
	}
	return d, nil
}

// ownContainerdOptions configure the kubelet's own containerd: under CRI
// the node's config (package containerdconfig, as compose, install.sh and
// the test cluster write it) with root, state, socket, opt and the pods'
// network namespaces under ContainerdDir, the kubelet's CNI folders, and
// a registry hosts folder for --registry-insecure; natively the daemon's
// own config, CRI off.
func (c Config) ownContainerdOptions(log *slog.Logger) (daemon.Options, error) {
	dir := c.ContainerdDir
	opts := daemon.Options{Dir: dir, Logger: log.With("containerd", dir)}
	if c.Runtime != RuntimeCRI {
		return opts, nil
	}
	hosts := ""
	if len(c.RegistryInsecure) > 0 {
		hosts = filepath.Join(dir, "certs.d")
		if err := containerdconfig.WritePlainHTTPHosts(hosts, c.RegistryInsecure); err != nil {
			return opts, err
		}
	}
	var err error
	opts.Config, err = containerdconfig.Render(containerdconfig.Options{
		Root:              filepath.Join(dir, "root"),
		State:             filepath.Join(dir, "state"),
		Address:           daemon.Address(dir),
		OptDir:            filepath.Join(dir, "opt"),
		SandboxImage:      c.SandboxImage,
		CNIBinDir:         cniPluginDir(c.CNIBinDirs),
		CNIConfDir:        c.CNIConfDir,
		RegistryConfigDir: hosts,
		NetNSUnderState:   true,
	})
	return opts, err
}

// cniPluginDir is the first of dirs that has the bridge plugin (a
// containerd 1.6 takes one folder), else the first.
func cniPluginDir(dirs []string) string {
	for _, d := range dirs {
		if _, err := os.Stat(filepath.Join(d, "bridge")); err == nil {
			return d
		}
	}
	return dirs[0]
}

// hasOwnContainerdState reports whether dir holds an earlier containerd's
// root.
func hasOwnContainerdState(dir string) bool {
	_, err := os.Stat(filepath.Join(dir, "root"))
	return err == nil || !errors.Is(err, fs.ErrNotExist)
}
