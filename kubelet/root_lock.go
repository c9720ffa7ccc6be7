package kubelet

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// rootLockFile, in the root dir, is flocked by a running kubelet (and by
// `kubelet --cleanup`), so two kubelets never share a root dir and the
// cleanup never runs under a live kubelet. The kernel drops the lock when
// the process dies, however it dies.
const rootLockFile = "kubelet.lock"

// lockRootDir takes the root dir's lock, or fails naming the process that
// holds it. The caller closes the file to release it.
func lockRootDir(rootDir string) (*os.File, error) {
	if err := os.MkdirAll(rootDir, 0o755); err != nil {
		return nil, fmt.Errorf("--root-dir: %w", err)
	}
	path := filepath.Join(rootDir, rootLockFile)
	f, err := os.OpenFile(path, os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return nil, fmt.Errorf("--root-dir: %w", err)
	}
	if err := unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB); err != nil {
		b, _ := os.ReadFile(path)
		f.Close()
		if errors.Is(err, unix.EWOULDBLOCK) {
			return nil, fmt.Errorf("--root-dir %s: a kubelet (pid %s) is running on it", rootDir, strings.TrimSpace(string(b)))
		}
		return nil, fmt.Errorf("--root-dir %s: lock: %w", rootDir, err)
	}
	_ = f.Truncate(0)
	_, _ = f.WriteAt([]byte(strconv.Itoa(os.Getpid())+"\n"), 0)
	return f, nil
}
