package network

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	goruntime "runtime"
	"sync"

	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netns"
	"golang.org/x/sys/unix"
)

// DefaultNetNSDir is where `ip netns` keeps named network namespaces.
const DefaultNetNSDir = "/var/run/netns"

// ErrNetNSExists is returned by CreateNetNS for a name already in use.
var ErrNetNSExists = errors.New("network namespace already exists")

// CreateNetNS makes a new network namespace, pins it by bind-mounting it at
// dir/name (so it outlives every process in it, and a restarted kubelet
// finds it), brings its loopback interface up, and returns the path. The
// calling goroutine's namespace is not changed. ErrNetNSExists if the name
// is taken.
func CreateNetNS(dir, name string) (string, error) {
	if name == "" || filepath.Base(name) != name {
		return "", fmt.Errorf("netns name %q: must be a plain file name", name)
	}
	if err := ensureSharedMountDir(dir); err != nil {
		return "", fmt.Errorf("netns dir %s: %w", dir, err)
	}
	path := filepath.Join(dir, name)
	f, err := os.OpenFile(path, os.O_RDONLY|os.O_CREATE|os.O_EXCL, 0o444)
	if errors.Is(err, fs.ErrExist) {
		return "", fmt.Errorf("netns %s: %w", path, ErrNetNSExists)
	}
	if err != nil {
		return "", fmt.Errorf("netns %s: %w", path, err)
	}
	f.Close()

	// Unshare on a thread of our own that is thrown away afterwards: the
	// goroutine ends locked, so the Go runtime terminates the thread
	// instead of reusing it in the new namespace.
	errc := make(chan error, 1)
	go func() {
		goruntime.LockOSThread()
		errc <- func() error {
			if err := unix.Unshare(unix.CLONE_NEWNET); err != nil {
				return fmt.Errorf("unshare: %w", err)
			}
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
		}()
	}()
	if err := <-errc; err != nil {
		_ = DeleteNetNS(path)
		return "", fmt.Errorf("netns %s: %w", path, err)
	}
	return path, nil
}

// DeleteNetNS unmounts and removes a pinned network namespace. The kernel
// frees the namespace, and the pod end of its veth pairs, once no process
// is left in it. Idempotent: nil if path does not exist.
func DeleteNetNS(path string) error {
	if err := unix.Unmount(path, unix.MNT_DETACH); err != nil && !errors.Is(err, unix.EINVAL) && !errors.Is(err, unix.ENOENT) {
		return fmt.Errorf("unmount netns %s: %w", path, err)
	}
	if err := os.Remove(path); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("remove netns %s: %w", path, err)
	}
	return nil
}

// NetNSExists reports whether path is a pinned network namespace. A pin
// file left without its mount (after a reboot, when the dir is on disk) is
// an empty regular file, not a namespace.
func NetNSExists(path string) bool {
	var st unix.Statfs_t
	return unix.Statfs(path, &st) == nil && st.Type == unix.NSFS_MAGIC
}

// InNetNS runs fn on a thread in the network namespace at path. The
// caller's thread is not touched: fn runs on a goroutine of its own, whose
// thread is discarded if it cannot be returned to its namespace.
func InNetNS(path string, fn func() error) error {
	target, err := netns.GetFromPath(path)
	if err != nil {
		return fmt.Errorf("netns %s: %w", path, err)
	}
	defer target.Close()
	errc := make(chan error, 1)
	go func() {
		goruntime.LockOSThread()
		orig, err := netns.Get()
		if err != nil {
			errc <- err
			return // thread discarded
		}
		defer orig.Close()
		if err := netns.Set(target); err != nil {
			errc <- fmt.Errorf("enter netns %s: %w", path, err)
			return
		}
		err = fn()
		if netns.Set(orig) == nil {
			goruntime.UnlockOSThread()
		}
		errc <- err
	}()
	return <-errc
}

var sharedMountDirs sync.Map // dir -> struct{}

// ensureSharedMountDir creates dir and makes it a shared mount point, as
// iproute2 does for /var/run/netns, so namespace mounts made under it
// propagate to other mount namespaces (a containerd shim's, a container's).
func ensureSharedMountDir(dir string) error {
	if _, ok := sharedMountDirs.Load(dir); ok {
		return nil
	}
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
	if err != nil {
		return err
	}
	sharedMountDirs.Store(dir, struct{}{})
	return nil
}
