package eviction

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"golang.org/x/sys/unix"

	"github.com/tugboat/tugboat/api/resource"
	v1 "github.com/tugboat/tugboat/api/v1"
)

// Local storage limits (Kubernetes' localStorageEviction, with
// LocalStorageCapacityIsolation on): every round, before the node-pressure
// thresholds, each running pod's emptyDir volumes that have a sizeLimit
// are measured, and a pod whose volume uses more than its limit is
// evicted at once (all such pods in the round, not one), with
// Kubernetes' message: Usage of EmptyDir volume "NAME" exceeds the limit
// "SIZE". A round that evicted for local storage evicts nothing for
// pressure (the next one sees what it freed).
//
// Usage is measured as du does (du -x -s): the blocks allocated to the
// volume's files (st_blocks × 512), a hard-linked file counted once,
// other file systems under the volume (a mount point) not entered. The
// cost is bounded: only volumes with a sizeLimit are walked, once per
// Interval (5 s by default), and a walk stops as soon as the usage
// passes the limit — it reads at most the inodes of about SIZE bytes of
// files beyond what is needed to decide. A volume of medium Memory is a
// tmpfs of that size and so cannot exceed it; it is measured the same
// way (Kubernetes does not tell them apart either).
//
// Containers' limits.ephemeral-storage and the pod's sum of them are
// enforced in the same round (local_storage_limits.go).

// SignalEmptyDirFsLimit labels evictions for an emptyDir over its
// sizeLimit in tugboat_kubelet_pressure_evictions_total (Kubernetes'
// signal name).
const SignalEmptyDirFsLimit = "emptydirfs.limit"

// emptyDirMessage is Kubernetes' emptyDirMessageFmt.
func emptyDirMessage(volume, size string) string {
	return fmt.Sprintf("Usage of EmptyDir volume %q exceeds the limit %q. ", volume, size)
}

// overLimit is a pod's first emptyDir volume that uses more than its
// sizeLimit ("" if none), with the limit as the spec wrote it.
func overLimit(p *v1.Pod, path func(uid, volume string) string) (volume, size string) {
	for _, v := range p.GetSpec().GetVolumes() {
		e := v.GetEmptyDir()
		if e == nil || e.GetSizeLimit() == "" {
			continue
		}
		q, err := resource.Parse(e.GetSizeLimit())
		if err != nil || q.Value() <= 0 {
			continue
		}
		if used, _ := diskUsage(path(p.GetMetadata().GetUid(), v.GetName()), q.Value()); used > q.Value() {
			return v.GetName(), e.GetSizeLimit()
		}
	}
	return "", ""
}

// DiskUsage is the bytes allocated to the files under dir (du -x -s
// -B1); 0 for a dir that cannot be read.
func DiskUsage(dir string) int64 {
	n, _ := diskUsage(dir, 0)
	return n
}

// diskUsage is the bytes allocated to the files under dir (du -x -s -B1),
// stopping once it passes stopAbove (> 0). A missing dir uses nothing;
// files that vanish during the walk are skipped.
func diskUsage(dir string, stopAbove int64) (int64, error) {
	var root unix.Stat_t
	if err := unix.Lstat(dir, &root); err != nil {
		if errors.Is(err, unix.ENOENT) {
			return 0, nil
		}
		return 0, err
	}
	type inode struct{ dev, ino uint64 }
	seen := map[inode]bool{}
	var used int64
	errStop := errors.New("over the limit")
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				return nil
			}
			return err
		}
		var st unix.Stat_t
		if err := unix.Lstat(p, &st); err != nil {
			if errors.Is(err, unix.ENOENT) {
				return nil
			}
			return err
		}
		if uint64(st.Dev) != uint64(root.Dev) {
			if d.IsDir() {
				return filepath.SkipDir
			}
			return nil
		}
		if st.Nlink > 1 && !d.IsDir() {
			k := inode{uint64(st.Dev), st.Ino}
			if seen[k] {
				return nil
			}
			seen[k] = true
		}
		used += st.Blocks * 512
		if stopAbove > 0 && used > stopAbove {
			return errStop
		}
		return nil
	})
	if errors.Is(err, errStop) || errors.Is(err, os.ErrNotExist) {
		err = nil
	}
	return used, err
}
