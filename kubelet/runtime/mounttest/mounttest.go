// Package mounttest makes the host mounts both runtime backends' tests
// of mount propagation and recursive read-only mounts need: a directory
// that is a shared mount (so mounts under it propagate), and a tmpfs
// mounted under a directory after the fact. Everything is unmounted on
// the test's cleanup. Root only.
package mounttest

import (
	"os"
	"path/filepath"
	"testing"

	"golang.org/x/sys/unix"
)

// SharedDir is a new directory bind-mounted on itself and made rshared
// (as Kubernetes' kubelet makes its root dir), so a HostToContainer or
// Bidirectional mount of it propagates.
func SharedDir(t testing.TB) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "shared")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := unix.Mount(dir, dir, "", unix.MS_BIND, ""); err != nil {
		t.Fatalf("bind %s: %v", dir, err)
	}
	t.Cleanup(func() { _ = unix.Unmount(dir, unix.MNT_DETACH) })
	// Private first: a peer group of its own, not the one of the mount
	// it sits on (the host's / may be shared with other namespaces).
	if err := unix.Mount("", dir, "", unix.MS_PRIVATE, ""); err != nil {
		t.Fatalf("make %s private: %v", dir, err)
	}
	if err := unix.Mount("", dir, "", unix.MS_SHARED|unix.MS_REC, ""); err != nil {
		t.Fatalf("make %s rshared: %v", dir, err)
	}
	return dir
}

// Tmpfs mounts a small tmpfs at dir/name (made if missing) holding the
// file "hello" with content, and returns its path; unmounted on cleanup.
func Tmpfs(t testing.TB, dir, name, content string) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.MkdirAll(p, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := unix.Mount("tmpfs", p, "tmpfs", 0, "size=1m"); err != nil {
		t.Fatalf("mount tmpfs at %s: %v", p, err)
	}
	t.Cleanup(func() { _ = unix.Unmount(p, unix.MNT_DETACH) })
	if err := os.WriteFile(filepath.Join(p, "hello"), []byte(content), 0o666); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(p, 0o777); err != nil {
		t.Fatal(err)
	}
	return p
}
