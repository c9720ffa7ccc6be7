package main

import (
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"

	"golang.org/x/sys/unix"
)

// prepareMounts gives the node container what --privileged would, on
// hosts where --privileged itself fails (CAP_SYS_RESOURCE missing from the
// bounding set): docker mounts /sys, /proc/sys and the cgroup hierarchies
// read-only in an unprivileged container, and runc in the node must create
// cgroups for pods. The remounts keep nosuid/nodev/noexec as they were. The root is
// made rshared so volume mounts the kubelet makes propagate into pods, as
// on a host.
func prepareMounts(log *slog.Logger) error {
	if err := remountRW("/sys", false); err != nil {
		return fmt.Errorf("remount /sys read-write (does the container have CAP_SYS_ADMIN?): %w", err)
	}
	// /proc/sys: docker's read-only bind (what `--security-opt
	// systempaths=unconfined` would lift, an option compose v1 cannot
	// pass); sysctls of the node's network namespace are set through it.
	if err := remountRW("/proc/sys", true); err != nil {
		return fmt.Errorf("remount /proc/sys read-write: %w", err)
	}
	hier, err := cgroupHierarchies("/sys/fs/cgroup")
	if err != nil {
		return err
	}
	for _, d := range hier {
		if err := remountRW(d, true); err != nil {
			return fmt.Errorf("remount cgroup %s read-write: %w", d, err)
		}
	}
	if err := unix.Mount("", "/", "", unix.MS_REC|unix.MS_SHARED, ""); err != nil {
		return fmt.Errorf("make / rshared: %w", err)
	}
	log.Info("mounts ready", "cgroups", len(hier))
	return nil
}

// cgroupHierarchies lists the mounted hierarchies under root: its real
// subdirectories (v1: one per controller, v2 hybrid: "unified"), or root
// itself when it is a cgroup2 mount (pure v2). Symlinks such as
// cpu -> cpu,cpuacct are skipped.
func cgroupHierarchies(root string) ([]string, error) {
	var st unix.Statfs_t
	if err := unix.Statfs(root, &st); err != nil {
		return nil, fmt.Errorf("%s: %w", root, err)
	}
	if st.Type == unix.CGROUP2_SUPER_MAGIC {
		return []string{root}, nil
	}
	entries, err := os.ReadDir(root)
	if err != nil {
		return nil, err
	}
	var out []string
	for _, e := range entries {
		if e.IsDir() { // DirEntry of a symlink is not a dir
			out = append(out, filepath.Join(root, e.Name()))
		}
	}
	return out, nil
}

// remountRW remounts path read-write, keeping its other flags (bind: the
// path is a bind mount, which needs MS_BIND to be remounted by itself).
func remountRW(path string, bind bool) error {
	var st unix.Statfs_t
	if err := unix.Statfs(path, &st); err != nil {
		return err
	}
	if st.Flags&unix.ST_RDONLY == 0 {
		return nil
	}
	flags := uintptr(unix.MS_REMOUNT) | mountFlags(st.Flags)&^unix.MS_RDONLY
	if bind {
		flags |= unix.MS_BIND
	}
	return unix.Mount("", path, "", flags, "")
}

// mountFlags maps statfs's ST_* flags to the MS_* flags of mount(2).
func mountFlags(st int64) uintptr {
	table := []struct {
		st int64
		ms uintptr
	}{
		{unix.ST_RDONLY, unix.MS_RDONLY},
		{unix.ST_NOSUID, unix.MS_NOSUID},
		{unix.ST_NODEV, unix.MS_NODEV},
		{unix.ST_NOEXEC, unix.MS_NOEXEC},
		{unix.ST_NOATIME, unix.MS_NOATIME},
		{unix.ST_NODIRATIME, unix.MS_NODIRATIME},
		{unix.ST_RELATIME, unix.MS_RELATIME},
	}
	var ms uintptr
	for _, t := range table {
		if st&t.st != 0 {
			ms |= t.ms
		}
	}
	return ms
}

// setSysctls writes each key=value under /proc/sys. Failures are logged,
// not fatal: bridge-nf-call-iptables exists only with br_netfilter loaded.
func setSysctls(log *slog.Logger, kvs []string) {
	for _, kv := range kvs {
		k, v, _ := strings.Cut(kv, "=")
		p := filepath.Join("/proc/sys", strings.ReplaceAll(k, ".", "/"))
		if err := os.WriteFile(p, []byte(v), 0o644); err != nil {
			log.Warn("sysctl not set", "key", k, "value", v, "err", err)
		}
	}
}
