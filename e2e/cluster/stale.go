package cluster

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/tugboat/tugboat/api/wait"
	"github.com/tugboat/tugboat/kubelet/runtime"
	"github.com/tugboat/tugboat/kubelet/runtime/containerd/daemon"
)

// A run owns: its directory under the base dir (etcd data, containerd's
// root and state, the nodes' root dirs with their pod network namespace
// mounts and pod files), and the cgroups under cgroupBase/<run id>. It holds
// an flock on <dir>/lock for its life, which the kernel drops however the
// process dies. The netlab lab (namespaces, root link) cleans up after
// itself the same way (netlab.CleanupStale, run by New).

// cgroupBase is the parent cgroup of every run's pods.
const cgroupBase = "/tugboat-e2e"

func cgroupRoot(runID, node string) string { return cgroupBase + "/" + runID + "/" + node }

const lockName = "lock"

// lockSetup serialises run setup (stale cleanup, making a run directory)
// among the processes sharing base.
func lockSetup(base string) (*os.File, error) {
	if err := os.MkdirAll(base, 0o755); err != nil {
		return nil, err
	}
	f, err := os.OpenFile(filepath.Join(base, ".setup.lock"), os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return nil, err
	}
	if err := unix.Flock(int(f.Fd()), unix.LOCK_EX); err != nil {
		f.Close()
		return nil, err
	}
	return f, nil
}

// lockRun creates dir and takes its lock.
func lockRun(dir string) (*os.File, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	f, err := os.OpenFile(filepath.Join(dir, lockName), os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return nil, err
	}
	if err := unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB); err != nil {
		f.Close()
		return nil, fmt.Errorf("cluster: %s is in use by another run: %w", dir, err)
	}
	return f, nil
}

// CleanupStale removes the run directories under base (and their
// processes, mounts and cgroups) whose run is dead, leaving live runs of
// other processes alone. It returns the run ids it removed. (The lab's
// namespaces are netlab's: netlab.CleanupStale.)
func CleanupStale(ctx context.Context, base string, log *slog.Logger) ([]string, error) {
	setup, err := lockSetup(base)
	if err != nil {
		return nil, err
	}
	defer setup.Close()
	return cleanupStaleLocked(ctx, base, log)
}

func cleanupStaleLocked(ctx context.Context, base string, log *slog.Logger) ([]string, error) {
	entries, err := os.ReadDir(base)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, cleanupStaleCgroups(nil)
	}
	if err != nil {
		return nil, err
	}
	var removed []string
	var errs []error
	live := map[string]bool{}
	for _, e := range entries {
		if !e.IsDir() {
			continue
		}
		dir := filepath.Join(base, e.Name())
		f, err := lockRun(dir)
		if err != nil {
			live[e.Name()] = true
			continue
		}
		log.Info("removing a stale cluster run", "dir", dir)
		if err := removeRun(dir, log); err != nil {
			errs = append(errs, err)
		} else {
			removed = append(removed, e.Name())
		}
		f.Close()
	}
	errs = append(errs, cleanupStaleCgroups(live))
	return removed, errors.Join(errs...)
}

// removeRun kills what still runs from dir (containerd shims, container
// processes in the run's cgroups), unmounts everything under it, removes
// it and the run's cgroups.
func removeRun(dir string, log *slog.Logger) error {
	runID := filepath.Base(dir)
	var errs []error
	for _, pid := range pidsUsing(dir) {
		_ = syscall.Kill(pid, syscall.SIGKILL)
		log.Debug("killed a stale process", "pid", pid, "dir", dir)
	}
	if err := killCgroup(cgroupBase + "/" + runID); err != nil {
		errs = append(errs, err)
	}
	if err := daemon.UnmountUnder(dir); err != nil {
		errs = append(errs, err)
	}
	if err := os.RemoveAll(dir); err != nil {
		errs = append(errs, err)
	}
	if err := runtime.RemoveCgroupTree(cgroupBase + "/" + runID); err != nil {
		errs = append(errs, err)
	}
	for _, d := range runtime.CgroupDirs(cgroupBase) {
		_ = unix.Rmdir(d) // the shared parent, once no run uses it
	}
	return errors.Join(errs...)
}

// pidsUsing lists processes whose command line or working directory names
// dir (the containerd shims run in their bundle directories under it).
func pidsUsing(dir string) []int {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return nil
	}
	self := os.Getpid()
	var out []int
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == self {
			continue
		}
		cwd, _ := os.Readlink("/proc/" + e.Name() + "/cwd")
		cmdline, _ := os.ReadFile("/proc/" + e.Name() + "/cmdline")
		if strings.HasPrefix(cwd, dir+"/") || cwd == dir || strings.Contains(string(cmdline), dir+"/") {
			out = append(out, pid)
		}
	}
	return out
}

// killCgroup kills every process in the cgroup tree and waits briefly for
// them to go.
func killCgroup(path string) error {
	err := wait.Until(context.Background(), time.Second, func(context.Context) error {
		pids := 0
		for _, d := range runtime.CgroupDirs(path) {
			_ = filepath.WalkDir(d, func(p string, de fs.DirEntry, err error) error {
				if err != nil || !de.IsDir() {
					return nil
				}
				b, _ := os.ReadFile(filepath.Join(p, "cgroup.procs"))
				for _, f := range strings.Fields(string(b)) {
					if pid, err := strconv.Atoi(f); err == nil {
						_ = syscall.Kill(pid, syscall.SIGKILL)
						pids++
					}
				}
				return nil
			})
		}
		if pids > 0 {
			return fmt.Errorf("%d processes signalled", pids)
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("cluster: processes left in cgroup %s: %w", path, err)
	}
	return nil
}

// cleanupStaleCgroups removes run cgroups under cgroupBase that belong to
// no live run (a run whose directory was already removed).
func cleanupStaleCgroups(live map[string]bool) error {
	var errs []error
	seen := map[string]bool{}
	for _, d := range runtime.CgroupDirs(cgroupBase) {
		entries, _ := os.ReadDir(d)
		for _, e := range entries {
			if e.IsDir() && !live[e.Name()] && !seen[e.Name()] {
				seen[e.Name()] = true
				if err := killCgroup(cgroupBase + "/" + e.Name()); err != nil {
					errs = append(errs, err)
				}
				if err := runtime.RemoveCgroupTree(cgroupBase + "/" + e.Name()); err != nil {
					errs = append(errs, err)
				}
			}
		}
	}
	return errors.Join(errs...)
}
