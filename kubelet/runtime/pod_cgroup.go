package runtime

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// ApplyPodCgroup makes the pod's cgroup (parent, cgroupfs style, as in
// SandboxConfig.CgroupParent) and sets the pod-level limits on it, before
// the runtime puts the sandbox's containers under it, as Kubernetes'
// kubelet does for its pod cgroups. Nil resources do nothing. Runtimes
// call it from RunPodSandbox; an error (no writable cgroup tree) fails
// the sandbox: the limits are never silently left out.
func ApplyPodCgroup(parent string, r *PodResources) error {
	return applyPodCgroup(cgroupRoot, parent, r)
}

func applyPodCgroup(root, parent string, r *PodResources) error {
	if r == nil || *r == (PodResources{}) {
		return nil
	}
	if parent == "" || parent == "/" {
		return fmt.Errorf("pod cgroup: no cgroup parent to set pod-level resources on: %w", ErrInvalid)
	}
	if _, err := os.Stat(filepath.Join(root, "cgroup.controllers")); err == nil {
		return applyV2(root, parent, r)
	}
	return applyV1(root, parent, r)
}

// applyV2 enables cpu and memory down to the pod's cgroup and writes
// cpu.max, cpu.weight and memory.max.
func applyV2(root, parent string, r *PodResources) error {
	dir := filepath.Join(root, parent)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("pod cgroup %s: %w", dir, err)
	}
	// Each ancestor's subtree_control must hand cpu and memory down.
	rel := strings.Split(strings.Trim(filepath.Clean(parent), "/"), "/")
	cur := root
	for i := 0; i < len(rel); i++ {
		if err := os.WriteFile(filepath.Join(cur, "cgroup.subtree_control"), []byte("+cpu +memory"), 0o644); err != nil {
			return fmt.Errorf("pod cgroup: enable cpu and memory in %s: %w", cur, err)
		}
		cur = filepath.Join(cur, rel[i])
	}
	var files [][2]string
	if r.CPUQuota > 0 {
		files = append(files, [2]string{"cpu.max", fmt.Sprintf("%d %d", r.CPUQuota, period(r))})
	}
	if r.CPUShares > 0 {
		files = append(files, [2]string{"cpu.weight", strconv.FormatInt(sharesToWeight(r.CPUShares), 10)})
	}
	if r.MemoryLimit > 0 {
		files = append(files, [2]string{"memory.max", strconv.FormatInt(r.MemoryLimit, 10)})
	}
	return writeAll(dir, files)
}

// applyV1 writes the cpu and memory hierarchies' files.
func applyV1(root, parent string, r *PodResources) error {
	var errs []error
	if r.CPUQuota > 0 || r.CPUShares > 0 {
		dir, err := v1Dir(root, "cpu", parent)
		if err != nil {
			return err
		}
		var files [][2]string
		if r.CPUQuota > 0 {
			files = append(files, [2]string{"cpu.cfs_period_us", strconv.FormatInt(period(r), 10)},
				[2]string{"cpu.cfs_quota_us", strconv.FormatInt(r.CPUQuota, 10)})
		}
		if r.CPUShares > 0 {
			files = append(files, [2]string{"cpu.shares", strconv.FormatInt(r.CPUShares, 10)})
		}
		errs = append(errs, writeAll(dir, files))
	}
	if r.MemoryLimit > 0 {
		dir, err := v1Dir(root, "memory", parent)
		if err != nil {
			return err
		}
		errs = append(errs, writeAll(dir, [][2]string{{"memory.limit_in_bytes", strconv.FormatInt(r.MemoryLimit, 10)}}))
	}
	return errors.Join(errs...)
}

// v1Dir makes parent in the v1 hierarchy of controller ("cpu" is also
// mounted as "cpu,cpuacct").
func v1Dir(root, controller, parent string) (string, error) {
	entries, _ := os.ReadDir(root)
	for _, e := range entries {
		for _, c := range strings.Split(e.Name(), ",") {
			if c == controller && e.IsDir() {
				dir := filepath.Join(root, e.Name(), parent)
				if err := os.MkdirAll(dir, 0o755); err != nil {
					return "", fmt.Errorf("pod cgroup %s: %w", dir, err)
				}
				return dir, nil
			}
		}
	}
	return "", fmt.Errorf("pod cgroup: no %s cgroup hierarchy under %s to set pod-level resources on", controller, root)
}

func writeAll(dir string, files [][2]string) error {
	for _, f := range files {
		if err := os.WriteFile(filepath.Join(dir, f[0]), []byte(f[1]), 0o644); err != nil {
			return fmt.Errorf("pod cgroup: write %s: %w", filepath.Join(dir, f[0]), err)
		}
	}
	return nil
}

func period(r *PodResources) int64 {
	if r.CPUPeriod > 0 {
		return r.CPUPeriod
	}
	return 100000
}

// sharesToWeight is runc's ConvertCPUSharesToCgroupV2Value.
func sharesToWeight(shares int64) int64 {
	if shares == 0 {
		return 0
	}
	return 1 + ((shares-2)*9999)/262142
}
