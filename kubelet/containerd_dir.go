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

	"github.com/tugboat/tugboat/kubelet/runtime/containerd/daemon"
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
	if !hasOwnContainerdState(cfg.ContainerdDir) {
		pctx, cancel := context.WithTimeout(ctx, 3*time.Second)
		err := daemon.Ping(pctx, cfg.ContainerdSocket)
		cancel()
		if err == nil {
			return nil, nil
		}
		log.Info("no containerd answers; starting one of the kubelet's own", "socket", cfg.ContainerdSocket, "err", err, "dir", cfg.ContainerdDir)
	}
	d, err := daemon.Start(ctx, daemon.Options{Dir: cfg.ContainerdDir, Logger: log.With("containerd", cfg.ContainerdDir)})
	if err != nil {
		return nil, fmt.Errorf("--containerd-dir: %w", err)
	}
	cfg.ContainerdSocket = d.Address
	if cfg.ImageFSDir == DefaultImageFSDir {
		cfg.ImageFSDir = filepath.Join(cfg.ContainerdDir, "root")
	}
	return d, nil
}

// hasOwnContainerdState reports whether dir holds an earlier containerd's
// root.
func hasOwnContainerdState(dir string) bool {
	_, err := os.Stat(filepath.Join(dir, "root"))
	return err == nil || !errors.Is(err, fs.ErrNotExist)
}
