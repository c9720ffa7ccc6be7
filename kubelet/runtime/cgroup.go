package runtime

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"syscall"
)

// cgroupRoot is where the cgroup hierarchies are mounted.
const cgroupRoot = "/sys/fs/cgroup"

// CgroupDirs returns the cgroup path (cgroupfs style, "/tugboat/pod<uid>")
// in the v2 tree and in every v1 hierarchy where it exists.
func CgroupDirs(path string) []string {
	var out []string
	if _, err := os.Stat(filepath.Join(cgroupRoot, path)); err == nil {
		out = append(out, filepath.Join(cgroupRoot, path))
	}
	entries, _ := os.ReadDir(cgroupRoot)
	for _, e := range entries {
		p := filepath.Join(cgroupRoot, e.Name(), path)
		if _, err := os.Stat(p); err == nil && e.IsDir() {
			out = append(out, p)
		}
	}
	return out
}

// RemoveCgroup removes a sandbox's cgroup parent in every cgroup v1
// hierarchy and in the v2 tree, if empty. Best effort: runc removes the
// containers' own cgroups; a parent still in use stays. Runtimes call it
// from RemovePodSandbox.
func RemoveCgroup(parent string) {
	if parent == "" || parent == "/" {
		return
	}
	for _, d := range CgroupDirs(parent) {
		_ = syscall.Rmdir(d) // busy or not empty: leave it
	}
}

// RemoveCgroupTree removes the cgroup path and every cgroup under it,
// deepest first, in every hierarchy. A cgroup that still holds processes
// stays, and is named in the error.
func RemoveCgroupTree(path string) error {
	if path == "" || path == "/" {
		return nil
	}
	var errs []error
	for _, d := range CgroupDirs(path) {
		var dirs []string
		_ = filepath.WalkDir(d, func(p string, de fs.DirEntry, err error) error {
			if err == nil && de.IsDir() {
				dirs = append(dirs, p)
			}
			return nil
		})
		sort.Slice(dirs, func(i, j int) bool { return len(dirs[i]) > len(dirs[j]) })
		for _, p := range dirs {
			if err := syscall.Rmdir(p); err != nil && !errors.Is(err, syscall.ENOENT) {
				errs = append(errs, fmt.Errorf("remove cgroup %s: %w", p, err))
			}
		}
	}
	return errors.Join(errs...)
}
