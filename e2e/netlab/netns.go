package netlab

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strconv"

	"github.com/vishvananda/netns"
	"golang.org/x/sys/unix"
)

// netnsDir is where named network namespaces are bind-mounted, the same
// folder "ip netns" uses, so "ip netns exec tb-abc123-h1 ..." works on a lab.
const netnsDir = "/run/netns"

func netnsPath(name string) string { return filepath.Join(netnsDir, name) }

// inNetns runs fn on an OS thread that has entered the network namespace
// target, and returns the thread to its original namespace afterwards. fn
// runs on a new goroutine locked to its thread; goroutines fn starts run in
// whatever namespace their own thread is in (the root one), but sockets fn
// opens stay in target. If the thread cannot be switched back, it stays
// locked and the Go runtime ends it when the goroutine returns, so no thread
// in the wrong namespace is ever reused.
func inNetns(target netns.NsHandle, fn func() error) error {
	errc := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		orig, err := netns.Get()
		if err != nil {
			runtime.UnlockOSThread()
			errc <- fmt.Errorf("netlab: get current netns: %w", err)
			return
		}
		defer orig.Close()
		if err := netns.Set(target); err != nil {
			runtime.UnlockOSThread()
			errc <- fmt.Errorf("netlab: setns: %w", err)
			return
		}
		ferr := fn()
		if err := netns.Set(orig); err != nil {
			// Stay locked: the thread dies with this goroutine.
			errc <- errors.Join(ferr, fmt.Errorf("netlab: return to original netns: %w", err))
			return
		}
		runtime.UnlockOSThread()
		errc <- ferr
	}()
	return <-errc
}

// createNamedNetns makes a new network namespace and bind-mounts it at
// /run/netns/<name>, as "ip netns add" does. It fails if the name exists.
func createNamedNetns(name string) (netns.NsHandle, error) {
	if err := os.MkdirAll(netnsDir, 0o755); err != nil {
		return netns.None(), fmt.Errorf("netlab: %w", err)
	}
	path := netnsPath(name)
	f, err := os.OpenFile(path, os.O_CREATE|os.O_EXCL|os.O_RDONLY, 0o444)
	if err != nil {
		return netns.None(), fmt.Errorf("netlab: create netns %s: %w", name, err)
	}
	f.Close()

	errc := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		orig, err := netns.Get()
		if err != nil {
			runtime.UnlockOSThread()
			errc <- err
			return
		}
		defer orig.Close()
		if err := unix.Unshare(unix.CLONE_NEWNET); err != nil {
			runtime.UnlockOSThread()
			errc <- fmt.Errorf("unshare: %w", err)
			return
		}
		merr := unix.Mount("/proc/thread-self/ns/net", path, "none", unix.MS_BIND, "")
		if err := netns.Set(orig); err != nil {
			// Stay locked: the thread dies with this goroutine.
			errc <- errors.Join(merr, fmt.Errorf("return to original netns: %w", err))
			return
		}
		runtime.UnlockOSThread()
		errc <- merr
	}()
	if err := <-errc; err != nil {
		_ = unix.Unmount(path, unix.MNT_DETACH)
		_ = os.Remove(path)
		return netns.None(), fmt.Errorf("netlab: create netns %s: %w", name, err)
	}
	h, err := netns.GetFromPath(path)
	if err != nil {
		_ = deleteNamedNetns(name)
		return netns.None(), fmt.Errorf("netlab: open netns %s: %w", name, err)
	}
	return h, nil
}

// deleteNamedNetns unmounts and removes /run/netns/<name>. A missing name
// is not an error. The namespace itself (and its links) goes away when no
// process and no open file holds it any more.
func deleteNamedNetns(name string) error {
	path := netnsPath(name)
	if err := unix.Unmount(path, unix.MNT_DETACH); err != nil && !errors.Is(err, unix.EINVAL) && !errors.Is(err, unix.ENOENT) {
		return fmt.Errorf("netlab: unmount %s: %w", path, err)
	}
	if err := os.Remove(path); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("netlab: remove %s: %w", path, err)
	}
	return nil
}

// nsKey identifies a namespace by the device and inode of its nsfs file.
type nsKey struct{ dev, ino uint64 }

func nsKeyOf(path string) (nsKey, error) {
	var st unix.Stat_t
	if err := unix.Stat(path, &st); err != nil {
		return nsKey{}, err
	}
	return nsKey{dev: st.Dev, ino: st.Ino}, nil
}

// isNetnsMount reports whether path is a mounted network namespace (and not
// a left-over empty file, which is what a failed or half-removed
// "ip netns add" leaves).
func isNetnsMount(path string) bool {
	var fs unix.Statfs_t
	if err := unix.Statfs(path, &fs); err != nil {
		return false
	}
	return fs.Type == unix.NSFS_MAGIC
}

// pidsInNetns returns the processes (but this one) whose network namespace
// is key.
func pidsInNetns(key nsKey) []int {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return nil
	}
	self := os.Getpid()
	var pids []int
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == self {
			continue
		}
		k, err := nsKeyOf(filepath.Join("/proc", e.Name(), "ns", "net"))
		if err != nil || k != key {
			continue
		}
		pids = append(pids, pid)
	}
	return pids
}

// processName returns the comm of pid, for log messages.
func processName(pid int) string {
	b, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "comm"))
	if err != nil {
		return "?"
	}
	return string(trimNewline(b))
}

func trimNewline(b []byte) []byte {
	for len(b) > 0 && (b[len(b)-1] == '\n' || b[len(b)-1] == '\r') {
		b = b[:len(b)-1]
	}
	return b
}

// killPIDsInNetns sends SIGKILL to every process in the namespace key. Each
// process is pinned with a pidfd before its namespace is checked and the
// signal sent through that pidfd, so a reused PID is never hit. It returns
// the PIDs it killed.
func killPIDsInNetns(key nsKey) []int {
	var killed []int
	for _, pid := range pidsInNetns(key) {
		fd, err := unix.PidfdOpen(pid, 0)
		if err != nil {
			continue
		}
		k, err := nsKeyOf(filepath.Join("/proc", strconv.Itoa(pid), "ns", "net"))
		if err == nil && k == key && unix.PidfdSendSignal(fd, unix.SIGKILL, nil, 0) == nil {
			killed = append(killed, pid)
		}
		unix.Close(fd)
	}
	return killed
}
