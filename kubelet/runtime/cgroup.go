package runtime

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
)

// RemoveCgroup removes a sandbox's cgroup parent in every cgroup v1
// hierarchy and in the v2 tree, if empty. Best effort: runc removes the
// containers' own cgroups; a parent still in use stays. Runtimes call it
// from RemovePodSandbox.
func RemoveCgroup(parent string) {
	if parent == "" || parent == "/" {
		return
	}
	const root = "/sys/fs/cgroup"
	candidates := []string{filepath.Join(root, parent)}
	if entries, err := os.ReadDir(root); err == nil {
		for _, e := range entries {
			if e.IsDir() {
				candidates = append(candidates, filepath.Join(root, e.Name(), parent))
			}
		}
	}
	for _, c := range candidates {
		if err := syscall.Rmdir(c); err != nil && !errors.Is(err, fs.ErrNotExist) {
			continue // busy or not empty: leave it
		}
	}
}
