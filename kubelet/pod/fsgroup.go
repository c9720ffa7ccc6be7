package pod

import (
	"io/fs"
	"os"
	"path/filepath"
	"syscall"

	v1 "github.com/tugboat/tugboat/api/v1"
)

// fsGroupOf is the pod's fsGroup, nil if it has none.
func fsGroupOf(pod *v1.Pod) *int64 {
	if sc := pod.GetSpec().GetSecurityContext(); sc != nil {
		return sc.FsGroup
	}
	return nil
}

// setVolumeOwnership gives a volume to the pod's fsGroup as Kubernetes'
// kubelet does (volume.SetVolumeOwnership): every file and directory's
// group becomes gid, files get group read (read-only volumes) or read and
// write, directories also group search and set-group-ID, so files the
// containers make inherit the group. With policy OnRootMismatch a volume
// whose root already has the group and permissions is left alone.
//
// Volumes are prepared at every sync of the pod, not once per mount as in
// Kubernetes, so a writable volume (emptyDir, claim) is walked only when
// its root does not match (its first sync, or a claim's volume last owned
// by another group) whatever the policy; configMap and secret volumes,
// small and rewritten on change, are walked every time.
func setVolumeOwnership(dir string, gid int64, readOnly bool, policy string) error {
	mask := fs.FileMode(0o660)
	if readOnly {
		mask = 0o440
	}
	dirMask := mask | 0o110 | fs.ModeSetgid
	if (policy == "OnRootMismatch" || !readOnly) && ownedBy(dir, gid, dirMask) {
		return nil
	}
	return filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.Type()&fs.ModeSymlink != 0 {
			return nil // Kubernetes skips symlinks (the atomic writer's ..data)
		}
		fi, err := d.Info()
		if err != nil {
			return err
		}
		if err := os.Lchown(p, -1, int(gid)); err != nil {
			return err
		}
		m := mask
		if d.IsDir() {
			m = dirMask
		}
		have := fi.Mode() & (fs.ModePerm | fs.ModeSetgid | fs.ModeSticky)
		if have&m == m {
			return nil
		}
		return os.Chmod(p, have|m)
	})
}

// ownedBy reports whether dir has group gid and at least the bits of mask.
func ownedBy(dir string, gid int64, mask fs.FileMode) bool {
	fi, err := os.Stat(dir)
	if err != nil {
		return false
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	return ok && int64(st.Gid) == gid && fi.Mode()&mask == mask
}
