package kubelet

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
	"time"

	"github.com/tugboat/tugboat/internal/netns"
	"github.com/tugboat/tugboat/kubelet/network"
	"github.com/tugboat/tugboat/kubelet/pod"
	"github.com/tugboat/tugboat/kubelet/runtime"
	"github.com/tugboat/tugboat/kubelet/runtime/containerd"
	"github.com/tugboat/tugboat/kubelet/runtime/containerd/daemon"
	"github.com/tugboat/tugboat/kubelet/runtime/cri"
)

// Cleanup removes what a kubelet with cfg put on the host: the counterpart
// of running one (`kubelet --cleanup`, as `proxy --cleanup` is the
// proxy's; `make local-down` and `tugboat down` run it):
//
//   - every pod of cfg.NodeName: containers killed and removed, CNI DEL,
//     network namespace pins, pod directories (pod.RemoveAll);
//   - the pod network: the masquerade table, and with the kubelet's own
//     default config the bridge, the conflist and the folders made for it
//     (network.Manager.Cleanup); an operator's config stays;
//   - the network namespace folder's mount, anything still mounted under
//     RootDir, and the pod cgroups under CgroupRoot (CgroupRoot included);
//   - with ContainerdDir, the kubelet's own containerd: started for the
//     cleanup if it is not running, purged, stopped, its runtime state
//     (ContainerdDir/state) and mounts removed. Its image store stays, for
//     the next start.
//
// A hollow node (RuntimeHollow) has only its pod folders to remove.
//
// What is data stays: the root dir's files (certificates, the import
// folder), images. No kubelet may be running on RootDir (its lock says
// so). It carries on past failures and returns them all.
func Cleanup(ctx context.Context, cfg Config) error {
	cfg.SetDefaults()
	if err := cfg.validateNode(); err != nil {
		return err
	}
	lock, err := lockRootDir(cfg.RootDir)
	if err != nil {
		return err
	}
	defer lock.Close()
	log := cfg.Logger.With("node", cfg.NodeName)
	if cfg.Runtime == RuntimeHollow {
		// A hollow node's pods lived in its process only; what is left
		// on the host is their folders.
		pcfg := pod.Config{NodeName: cfg.NodeName, RootDir: cfg.RootDir}
		if err := os.RemoveAll(pcfg.PodsDir()); err != nil {
			return err
		}
		log.Info("cleaned up the hollow node", "root", cfg.RootDir)
		return nil
	}
	var errs []error

	var own *daemon.Daemon
	if cfg.ContainerdDir != "" && hasOwnContainerdState(cfg.ContainerdDir) {
		addr := daemon.Address(cfg.ContainerdDir)
		opts, oerr := cfg.ownContainerdOptions(log)
		switch {
		case daemon.Ping(ctx, addr) == nil:
			errs = append(errs, fmt.Errorf("--containerd-dir %s: its containerd is running without a kubelet; its pods are removed, but stop it (by its pid) to remove its state", cfg.ContainerdDir))
		case oerr != nil:
			errs = append(errs, fmt.Errorf("--containerd-dir: %w", oerr))
		default:
			if own, err = daemon.Start(ctx, opts); err != nil {
				errs = append(errs, fmt.Errorf("--containerd-dir: %w", err))
			}
		}
		cfg.ContainerdSocket, cfg.RuntimeEndpoint = addr, "unix://"+addr
	}

	pcfg := pod.Config{NodeName: cfg.NodeName, RootDir: cfg.RootDir, Logger: log}
	net, err := network.New(cfg.networkConfig(pcfg), log, nil)
	if err != nil {
		return errors.Join(append(errs, err)...)
	}
	if err := removePods(ctx, cfg, pcfg, net); err != nil {
		errs = append(errs, err)
	}
	if err := net.Cleanup(); err != nil {
		errs = append(errs, fmt.Errorf("pod network: %w", err))
	}
	if err := netns.ReleaseDir(pcfg.NetNSDir()); err != nil {
		errs = append(errs, err)
	}
	if err := daemon.UnmountUnder(cfg.RootDir); err != nil {
		errs = append(errs, err)
	}
	if err := runtime.RemoveCgroupTree(cfg.CgroupRoot); err != nil {
		errs = append(errs, err)
	}
	ns := cfg.ContainerdNamespace
	if cfg.Runtime == RuntimeCRI {
		ns = cri.DefaultImportNamespace // the CRI plugin's
	}
	removeEmptyRuntimeDirs(ns, own != nil)
	if own != nil {
		pctx, cancel := context.WithTimeout(ctx, time.Minute)
		if err := daemon.Purge(pctx, own.Address); err != nil {
			errs = append(errs, fmt.Errorf("containerd: %w", err))
		}
		cancel()
		own.Stop()
		if err := daemon.UnmountUnder(cfg.ContainerdDir); err != nil {
			errs = append(errs, err)
		}
		if err := os.RemoveAll(filepath.Join(cfg.ContainerdDir, "state")); err != nil {
			errs = append(errs, err)
		}
	}
	if err := errors.Join(errs...); err != nil {
		return err
	}
	log.Info("cleaned up the node", "root", cfg.RootDir)
	return nil
}

// removePods removes every pod of the node through the runtime; without a
// runtime it cannot, and says so.
func removePods(ctx context.Context, cfg Config, pcfg pod.Config, net *network.Manager) error {
	socket := cfg.ContainerdSocket
	if cfg.Runtime == RuntimeCRI {
		socket, _ = cri.SocketPath(cfg.RuntimeEndpoint)
	}
	pctx, cancel := context.WithTimeout(ctx, 3*time.Second)
	err := daemon.Ping(pctx, socket)
	cancel()
	if err != nil {
		return fmt.Errorf("no runtime answers at %s (%v): the pods' containers are not removed; start it and run the cleanup again", socket, err)
	}
	if cfg.Runtime == RuntimeCRI {
		// The runtime runs CNI DEL when a sandbox stops.
		rt, err := cri.New(cri.Config{Endpoint: cfg.RuntimeEndpoint, CgroupParent: cfg.CgroupRoot}, pcfg.Logger)
		if err != nil {
			return err
		}
		defer rt.Close()
		if err := waitCRIReady(ctx, rt); err != nil {
			return err
		}
		return pod.RemoveAll(ctx, pcfg, rt, &criNetwork{rt: rt, ips: map[string]netip.Addr{}})
	}
	rt, err := containerd.New(containerd.Config{
		Address: cfg.ContainerdSocket, Namespace: cfg.ContainerdNamespace, CgroupParent: cfg.CgroupRoot,
	}, pcfg.Logger)
	if err != nil {
		return err
	}
	defer rt.Close()
	return pod.RemoveAll(ctx, pcfg, rt, cleanupNetwork{net})
}

// cleanupNetwork is the pod network as pod.RemoveAll sees it: the
// network manager, always ready.
type cleanupNetwork struct{ *network.Manager }

func (cleanupNetwork) Ready() error                 { return nil }
func (cleanupNetwork) NetNSExists(path string) bool { return netns.IsPinned(path) }

// runtimeStateDir is where containerd's shims keep their state whatever
// containerd's own state dir is: runc's root per namespace
// (runc/<namespace>), the shims' sockets (s/) and the clients' fifos
// (fifo/).
const runtimeStateDir = "/run/containerd"

// removeEmptyRuntimeDirs removes, if empty, the namespace's runc state
// folder, and with the kubelet's own containerd the shared folders its
// shims made (a system containerd's are in use and not empty).
func removeEmptyRuntimeDirs(namespace string, own bool) {
	_ = os.Remove(filepath.Join(runtimeStateDir, "runc", namespace))
	if !own {
		return
	}
	for _, d := range []string{"runc", "s", "fifo", ""} {
		_ = os.Remove(filepath.Join(runtimeStateDir, d))
	}
}

// criReadyTimeout bounds the wait for a CRI runtime that answers on its
// socket to serve the CRI: a containerd just started (the kubelet's own,
// started for the cleanup) answers its own API before its CRI plugin has
// loaded its state ("server is not initialized yet").
const criReadyTimeout = 30 * time.Second

// waitCRIReady waits until the runtime lists its sandboxes.
func waitCRIReady(ctx context.Context, rt *cri.Runtime) error {
	ctx, cancel := context.WithTimeout(ctx, criReadyTimeout)
	defer cancel()
	for {
		_, err := rt.ListPodSandbox(ctx, runtime.SandboxFilter{})
		if err == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("the CRI runtime does not serve (%v): the pods' containers are not removed; run the cleanup again", err)
		case <-time.After(200 * time.Millisecond):
		}
	}
}
