// Package netns makes, enters and removes Linux network namespaces: the
// one place Tugboat switches an OS thread into another namespace. The
// kubelet pins a namespace per pod (kubelet/network), the proxy opens its
// sockets and programs its tables in the namespace it is given (the
// all-in-one binary and the tests give it one), and the e2e lab makes its
// hosts as namespaces (e2e/netlab).
//
// It lives under internal/ at the module root, beside no component,
// because two components and the test lab need it and components meet
// only through the API: in kubelet/ the proxy would import the kubelet, in
// proxy/ the kubelet would import the proxy, and api/ is the API contract
// and the client library that every binary and tugctl link, not the place
// for privileged, Linux-only node mechanics. It imports nothing of
// Tugboat's.
//
// What it touches: the namespace directory it is given (made a shared
// mount point, as iproute2 does for /run/netns, so namespaces pinned in it
// propagate to other mount namespaces, and a later "ip netns add" does not
// mount over the ones already pinned), the pin files and their bind
// mounts, and the calling process's threads.
//
// Threads: every function runs its namespace work on a goroutine of its
// own, locked to an OS thread, and never changes the caller's thread. The
// thread goes back to its original namespace afterwards (Create's too,
// after its unshare); one that cannot be put back stays locked and dies
// with its goroutine, so no goroutine ever runs in a namespace it did not
// ask for (see onThread).
package netns

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"sync"

	"github.com/vishvananda/netlink"
	vnetns "github.com/vishvananda/netns"
	"golang.org/x/sys/unix"
)

// DefaultDir is where `ip netns` keeps named network namespaces.
const DefaultDir = "/run/netns"

// ErrExists is returned by Create for a name already in use.
var ErrExists = errors.New("network namespace already exists")

// Create makes a new network namespace, pins it by bind-mounting it at
// dir/name (so it outlives every process in it, and a restarted program
// finds it; `ip netns exec name` works when dir is DefaultDir), brings its
// loopback interface up, and returns the path. It fails with ErrExists if
// the name is taken, and removes what it made if any step fails.
func Create(dir, name string) (string, error) {
	if name == "" || filepath.Base(name) != name {
		return "", fmt.Errorf("netns name %q: must be a plain file name", name)
	}
	if err := ensureSharedMountDir(dir); err != nil {
		return "", fmt.Errorf("netns dir %s: %w", dir, err)
	}
	path := filepath.Join(dir, name)
	f, err := os.OpenFile(path, os.O_RDONLY|os.O_CREATE|os.O_EXCL, 0o444)
	if errors.Is(err, fs.ErrExist) {
		return "", fmt.Errorf("netns %s: %w", path, ErrExists)
	}
	if err != nil {
		return "", fmt.Errorf("netns %s: %w", path, err)
	}
	f.Close()

	err = onThread(
		func() error { return unix.Unshare(unix.CLONE_NEWNET) },
		func() error {
			self := fmt.Sprintf("/proc/%d/task/%d/ns/net", os.Getpid(), unix.Gettid())
			if err := unix.Mount(self, path, "none", unix.MS_BIND, ""); err != nil {
				return fmt.Errorf("bind mount: %w", err)
			}
			lo, err := netlink.LinkByName("lo")
			if err != nil {
				return fmt.Errorf("loopback: %w", err)
			}
			if err := netlink.LinkSetUp(lo); err != nil {
				return fmt.Errorf("loopback up: %w", err)
			}
			return nil
		})
	if err != nil {
		_ = Remove(path)
		return "", fmt.Errorf("netns %s: %w", path, err)
	}
	return path, nil
}

// Remove unmounts and removes a pinned network namespace. The kernel frees
// the namespace, and the links in it, once no process and no open file
// holds it any more. Idempotent: nil if path does not exist.
func Remove(path string) error {
	if err := unix.Unmount(path, unix.MNT_DETACH); err != nil && !errors.Is(err, unix.EINVAL) && !errors.Is(err, unix.ENOENT) {
		return fmt.Errorf("unmount netns %s: %w", path, err)
	}
	if err := os.Remove(path); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("remove netns %s: %w", path, err)
	}
	return nil
}

// IsPinned reports whether path is a mounted network namespace. A pin file
// left without its mount (after a reboot, when the dir is on disk, or a
// half-done "ip netns add") is an empty regular file, not a namespace.
func IsPinned(path string) bool {
	var st unix.Statfs_t
	return unix.Statfs(path, &st) == nil && st.Type == unix.NSFS_MAGIC
}

// Do runs fn on an OS thread inside the network namespace open as fd, and
// returns fn's error. Sockets fn opens (net.Listen, net.Dial) stay in that
// namespace and are usable from any goroutine afterwards; goroutines fn
// starts run where their own threads are, not in the namespace; a process
// fn starts (exec.Cmd.Start) starts in it. With fd 0 (no namespace given)
// fn runs on the caller's goroutine, where the caller is.
func Do(fd int, fn func() error) error {
	if fd == 0 {
		return fn()
	}
	return onThread(func() error { return vnetns.Set(vnetns.NsHandle(fd)) }, fn)
}

// onThread runs enter and then, if enter succeeded, fn, on a goroutine of
// its own locked to its OS thread, and puts the thread back into the
// network namespace it started in before unlocking it. Only a thread that
// cannot be put back stays locked, so that the Go runtime ends it with the
// goroutine.
//
// Never leaving a thread behind on purpose matters: the runtime cannot end
// the process's main thread, so a goroutine that exits locked on it wedges
// it in the foreign namespace for good, and /proc/<pid>/ns/net, which
// names the main thread's namespace (the kubelet's host network, netlab's
// root namespace), would name that one from then on.
func onThread(enter, fn func() error) error {
	errc := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		orig, err := vnetns.Get()
		if err != nil {
			runtime.UnlockOSThread()
			errc <- fmt.Errorf("current network namespace: %w", err)
			return
		}
		defer orig.Close()
		if err := enter(); err != nil {
			runtime.UnlockOSThread()
			errc <- fmt.Errorf("entering network namespace: %w", err)
			return
		}
		err = fn()
		if rerr := vnetns.Set(orig); rerr != nil {
			errc <- errors.Join(err, fmt.Errorf("leaving network namespace: %w", rerr))
			return // the thread stays locked and exits with this goroutine
		}
		runtime.UnlockOSThread()
		errc <- err
	}()
	return <-errc
}

// DoPath runs fn inside the network namespace at path (a pin Create made,
// or /proc/<pid>/ns/net), as Do does.
func DoPath(path string, fn func() error) error {
	target, err := vnetns.GetFromPath(path)
	if err != nil {
		return fmt.Errorf("netns %s: %w", path, err)
	}
	defer target.Close()
	if err := Do(int(target), fn); err != nil {
		return fmt.Errorf("netns %s: %w", path, err)
	}
	return nil
}

// sharedMountMu serialises ensureSharedMountDir, so that two first pins in
// one dir do not both bind-mount it over itself.
var sharedMountMu sync.Mutex

// ensureSharedMountDir creates dir and makes it a shared mount point, as
// iproute2 does for /run/netns, so namespace mounts made under it
// propagate to other mount namespaces (a containerd shim's, a
// container's). Doing it before the first pin matters: "ip netns add" on a
// dir that is not yet a mount point bind-mounts the dir over itself, which
// hides the pins made before and makes them impossible to remove. It asks
// the kernel every time (one mount call) rather than remembering, since
// whoever cleans the dir up may unmount it.
func ensureSharedMountDir(dir string) error {
	sharedMountMu.Lock()
	defer sharedMountMu.Unlock()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	err := unix.Mount("", dir, "none", unix.MS_SHARED|unix.MS_REC, "")
	if errors.Is(err, unix.EINVAL) { // not a mount point yet: bind it to itself
		if err := unix.Mount(dir, dir, "none", unix.MS_BIND|unix.MS_REC, ""); err != nil {
			return err
		}
		err = unix.Mount("", dir, "none", unix.MS_SHARED|unix.MS_REC, "")
	}
	return err
}

// ReleaseDir unmounts dir if ensureSharedMountDir made it a mount point
// (a bind mount of itself) and removes it if it is empty: what the last
// user of a namespace dir calls once every pin in it is removed. A dir
// that is not a mount point, or holds anything, is left alone.
func ReleaseDir(dir string) error {
	sharedMountMu.Lock()
	defer sharedMountMu.Unlock()
	entries, err := os.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	if len(entries) > 0 {
		return nil
	}
	if err := unix.Unmount(dir, 0); err != nil && !errors.Is(err, unix.EINVAL) {
		return fmt.Errorf("unmount %s: %w", dir, err)
	}
	if err := os.Remove(dir); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	return nil
}
