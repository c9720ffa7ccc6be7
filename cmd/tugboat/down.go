package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/user"
	"path/filepath"
	"strings"

	"github.com/tugboat/tugboat/kubelet"
	"github.com/tugboat/tugboat/proxy"
)

// upMark starts every file tugboat up writes outside the data dir.
const upMark = "# Written by tugboat up"

// Down removes what `tugboat up` with cfg put on the host, once it has
// stopped (its kubelet holds a lock on the root dir, so Down refuses while
// up runs): the kubelet's cleanup (the pods with their containers, CNI
// DEL, network namespaces, mounts and cgroups; the masquerade table, and
// with the kubelet's own default config the bridge and the conflist; its
// own containerd's runtime state), the proxy's (its nftables table, pod
// CIDR routes, the cluster DNS address), and under sudo the invoking
// user's tugctl config and kubeconfigs that up wrote. What is data stays
// in --data-dir: etcd's, the certificates, the admin config, images; the
// next up starts from it.
func Down(ctx context.Context, cfg Config) error {
	cfg.setDefaults()
	if err := cfg.Validate(); err != nil {
		return err
	}
	if os.Geteuid() != 0 {
		return errors.New("tugboat down needs root (sudo tugboat down): it removes network namespaces, mounts and cgroups")
	}
	var errs []error
	if err := kubelet.Cleanup(ctx, kubeletConfig(cfg)); err != nil {
		errs = append(errs, fmt.Errorf("node: %w", err))
	}
	if err := proxy.Cleanup("", 0, cfg.Logger.With("component", "proxy")); err != nil {
		errs = append(errs, fmt.Errorf("proxy: %w", err))
	}
	if err := removeUserConfigs(cfg); err != nil {
		errs = append(errs, err)
	}
	if err := errors.Join(errs...); err != nil {
		return err
	}
	cfg.Logger.Info("down: nothing of the node is left on the host; the cluster's data stays", "dataDir", cfg.DataDir)
	return nil
}

// removeUserConfigs removes, under sudo, the files writeAdminConfigs wrote
// for the invoking user (each starts with upMark; the credentials' copies
// go with them), and the folders it made if they are empty now.
func removeUserConfigs(cfg Config) error {
	name := os.Getenv("SUDO_USER")
	if cfg.NoUserConfig || name == "" || name == "root" {
		return nil
	}
	u, err := user.Lookup(name)
	if err != nil {
		return nil
	}
	home := filepath.Join(u.HomeDir, ".tugboat")
	var errs []error
	for _, p := range []string{filepath.Join(home, "config"), filepath.Join(home, "kubeconfig"), filepath.Join(u.HomeDir, ".kube", "config")} {
		if b, err := os.ReadFile(p); err == nil && strings.HasPrefix(string(b), upMark) {
			errs = append(errs, os.Remove(p))
		}
	}
	if _, err := os.Stat(filepath.Join(home, "config")); os.IsNotExist(err) {
		errs = append(errs, os.RemoveAll(filepath.Join(home, "tugboat-up")))
	}
	for _, d := range []string{home, filepath.Join(u.HomeDir, ".kube")} {
		_ = os.Remove(d) // only if empty
	}
	return errors.Join(errs...)
}
