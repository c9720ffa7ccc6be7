package pod

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/tugboat/tugboat/api/apierrors"
	"github.com/tugboat/tugboat/api/resource"
	v1 "github.com/tugboat/tugboat/api/v1"
	"github.com/tugboat/tugboat/kubelet/runtime"
)

// Volumes live in the pod's directory (RootDir/pods/<uid>/volumes/<kind>/
// <name>) and are bind-mounted into containers:
//
//   - emptyDir: a directory (mode 0777, as Kubernetes), or a tmpfs for
//     medium Memory (sizeLimit as its size), removed with the pod; the
//     eviction manager evicts a pod whose emptyDir uses more than its
//     sizeLimit (kubelet/eviction, local_storage.go);
//   - hostPath: the host path itself, checked or created per its type;
//   - persistentVolumeClaim: the directory of the volume bound to the claim
//     (a local or hostPath volume, made with mode 0777 if missing: the
//     local-path provisioner's volumes are made here on first use); the
//     pod waits (retried) while the claim is not bound;
//   - configMap, secret, downwardAPI and projected: files (volume_files.go)
//     written as Kubernetes' AtomicWriter does (atomic_writer.go: a
//     timestamped directory behind the "..data" symlink, swapped in one
//     rename), rewritten when the objects change (every volumeRefresh)
//     or the pod's labels or annotations do (at once). Secrets and tokens
//     are files on the node's disk, not a tmpfs as in Kubernetes;
//   - image: nothing on disk; the runtime mounts the image's content
//     (image_volumes.go).

// prepareVolumes makes every volume of the pod ready and returns the host
// path of each, by name.
func prepareVolumes(ctx context.Context, cfg Config, src Sources, pod *v1.Pod) (map[string]string, error) {
	uid := pod.GetMetadata().GetUid()
	ns := pod.GetMetadata().GetNamespace()
	fsGroup := fsGroupOf(pod)
	// With an fsGroup, the files of configMap and secret volumes are
	// readable by the group (Kubernetes' read-only ownership mask).
	var groupRead fs.FileMode
	if fsGroup != nil {
		groupRead = 0o440
	}
	out := map[string]string{}
	for _, v := range pod.GetSpec().GetVolumes() {
		var p string
		var err error
		owned, readOnly := true, false
		switch {
		case v.EmptyDir != nil:
			p, err = emptyDir(cfg.EmptyDirPath(uid, v.Name), v.EmptyDir)
		case v.HostPath != nil:
			p, err = hostPath(v.HostPath)
			owned = false // Kubernetes leaves a hostPath's ownership alone
		case v.ConfigMap != nil, v.Secret != nil, v.DownwardApi != nil, v.Projected != nil:
			p, readOnly = cfg.volumeDir(uid, fileVolumeKind(v), v.Name), true
			var files map[string]fileSpec
			if files, err = volumeFiles(ctx, cfg, src, pod, v, groupRead); err == nil {
				_, err = writeVolumeFiles(p, files)
			}
		case v.PersistentVolumeClaim != nil:
			p, err = claimVolume(ctx, src, ns, v.PersistentVolumeClaim)
		case v.Image != nil:
			// Mounted by the runtime from the image (image_volumes.go):
			// nothing on the node's disk.
			out[v.Name] = ""
			continue
		default:
			err = configErrorf("volume %q: no supported source (emptyDir, hostPath, configMap, secret, downwardAPI, projected, persistentVolumeClaim, image)", v.Name)
		}
		if err != nil {
			var ce *configError
			if errors.As(err, &ce) {
				return nil, err
			}
			return nil, configErrorf("volume %q: %v", v.Name, err)
		}
		if owned && fsGroup != nil {
			if err := setVolumeOwnership(p, *fsGroup, readOnly, pod.GetSpec().GetSecurityContext().GetFsGroupChangePolicy()); err != nil {
				return nil, fmt.Errorf("volume %q: fsGroup %d: %w", v.Name, *fsGroup, err)
			}
		}
		out[v.Name] = p
	}
	return out, nil
}

func emptyDir(dir string, e *v1.EmptyDirVolumeSource) (string, error) {
	if err := os.MkdirAll(dir, 0o777); err != nil {
		return "", err
	}
	// 0777 whatever the umask, keeping the set-group-ID bit an fsGroup set.
	if fi, err := os.Stat(dir); err != nil {
		return "", err
	} else if fi.Mode().Perm() != 0o777 {
		if err := os.Chmod(dir, fi.Mode()&fs.ModeSetgid|0o777); err != nil {
			return "", err
		}
	}
	if e.Medium != "Memory" || isMountPoint(dir) {
		return dir, nil
	}
	opts := "mode=0777"
	if e.SizeLimit != "" {
		q, err := resource.Parse(e.SizeLimit)
		if err != nil {
			return "", configErrorf("emptyDir sizeLimit %q: %v", e.SizeLimit, err)
		}
		opts += fmt.Sprintf(",size=%d", q.Value())
	}
	if err := unix.Mount("tmpfs", dir, "tmpfs", unix.MS_NOSUID|unix.MS_NODEV, opts); err != nil {
		return "", fmt.Errorf("mount tmpfs on %s: %w", dir, err)
	}
	return dir, nil
}

// isMountPoint reports whether dir is on another device than its parent.
func isMountPoint(dir string) bool {
	var a, b unix.Stat_t
	if unix.Stat(dir, &a) != nil || unix.Stat(filepath.Dir(dir), &b) != nil {
		return false
	}
	return a.Dev != b.Dev
}

func hostPath(h *v1.HostPathVolumeSource) (string, error) {
	p := filepath.Clean(h.Path)
	if !filepath.IsAbs(p) {
		return "", configErrorf("hostPath %q: must be absolute", h.Path)
	}
	fi, err := os.Stat(p)
	missing := errors.Is(err, fs.ErrNotExist)
	if err != nil && !missing {
		return "", err
	}
	mustBe := func(ok bool, what string) (string, error) {
		if missing || !ok {
			return "", configErrorf("hostPath %s: not a %s", p, what)
		}
		return p, nil
	}
	switch h.Type {
	case "":
		return p, nil
	case "DirectoryOrCreate":
		if missing {
			return p, os.MkdirAll(p, 0o755)
		}
		return mustBe(fi.IsDir(), "directory")
	case "Directory":
		return mustBe(!missing && fi.IsDir(), "directory")
	case "FileOrCreate":
		if missing {
			if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
				return "", err
			}
			f, err := os.OpenFile(p, os.O_CREATE|os.O_WRONLY, 0o644)
			if err != nil {
				return "", err
			}
			return p, f.Close()
		}
		return mustBe(fi.Mode().IsRegular(), "file")
	case "File":
		return mustBe(!missing && fi.Mode().IsRegular(), "file")
	case "Socket":
		return mustBe(!missing && fi.Mode()&fs.ModeSocket != 0, "socket")
	case "CharDevice":
		return mustBe(!missing && fi.Mode()&fs.ModeCharDevice != 0, "character device")
	case "BlockDevice":
		return mustBe(!missing && fi.Mode()&fs.ModeDevice != 0 && fi.Mode()&fs.ModeCharDevice == 0, "block device")
	}
	return "", configErrorf("hostPath %s: unknown type %q", p, h.Type)
}

// fileVolumeKind is the folder of a file volume's kind (Kubernetes'
// plugin names: kubernetes.io~configmap...).
func fileVolumeKind(v *v1.Volume) string {
	switch {
	case v.ConfigMap != nil:
		return "configmap"
	case v.Secret != nil:
		return "secret"
	case v.DownwardApi != nil:
		return "downward-api"
	}
	return "projected"
}

type fileSpec struct {
	data []byte
	mode fs.FileMode
}

// containerMounts turns a container's volumeMounts into bind mounts, and
// those of image volumes into image mounts of images (volume name ->
// the image on the node, imageVolumes), read-only whatever the mount says.
// supportsRRO reports whether the runtime makes recursive read-only
// mounts (asked only when a mount wants one).
func containerMounts(c *v1.Container, vols, images map[string]string, supportsRRO func() bool) ([]runtime.Mount, error) {
	var out []runtime.Mount
	for _, vm := range c.VolumeMounts {
		src, ok := vols[vm.Name]
		if !ok {
			return nil, configErrorf("volumeMount %q: no volume of that name", vm.Name)
		}
		prop, err := mountPropagation(vm)
		if err != nil {
			return nil, err
		}
		rro, err := resolveRecursiveReadOnly(vm, supportsRRO)
		if err != nil {
			return nil, configErrorf("failed to resolve recursive read-only mode: %v", err)
		}
		opts := func(m runtime.Mount) runtime.Mount {
			m.Propagation, m.RecursiveReadOnly = prop, rro
			return m
		}
		if img, ok := images[vm.Name]; ok {
			sub := ""
			if vm.SubPath != "" {
				sub = path.Clean(vm.SubPath)
				if path.IsAbs(sub) || sub == ".." || strings.HasPrefix(sub, "../") {
					return nil, configErrorf("volumeMount %q: subPath %q must stay inside the volume", vm.Name, vm.SubPath)
				}
			}
			out = append(out, opts(runtime.Mount{Image: img, ImageSubPath: sub, ContainerPath: vm.MountPath, ReadOnly: true}))
			continue
		}
		if src == "" {
			return nil, configErrorf("volumeMount %q: the image volume's image is not ready", vm.Name)
		}
		if vm.SubPath != "" {
			sub := path.Clean(vm.SubPath)
			if path.IsAbs(sub) || sub == ".." || strings.HasPrefix(sub, "../") {
				return nil, configErrorf("volumeMount %q: subPath %q must stay inside the volume", vm.Name, vm.SubPath)
			}
			root := src
			src = filepath.Join(src, filepath.FromSlash(sub))
			// A file volume's paths are symlinks into ..data: mount what
			// they point at (it must stay inside the volume).
			if real, err := filepath.EvalSymlinks(src); err == nil {
				rootReal, _ := filepath.EvalSymlinks(root)
				if rel, err := filepath.Rel(rootReal, real); err != nil || rel == ".." || strings.HasPrefix(rel, "../") {
					return nil, configErrorf("volumeMount %q: subPath %q leads outside the volume", vm.Name, vm.SubPath)
				}
				src = real
			}
			if _, err := os.Stat(src); errors.Is(err, fs.ErrNotExist) {
				if err := os.MkdirAll(src, 0o777); err != nil {
					return nil, err
				}
			}
		}
		out = append(out, opts(runtime.Mount{HostPath: src, ContainerPath: vm.MountPath, ReadOnly: vm.ReadOnly}))
	}
	return out, nil
}

// removePodDir removes a pod's directory, unmounting tmpfs volumes first.
func removePodDir(dir string) error {
	emptyDirs := filepath.Join(dir, "volumes", "empty-dir")
	if entries, err := os.ReadDir(emptyDirs); err == nil {
		for _, e := range entries {
			p := filepath.Join(emptyDirs, e.Name())
			if isMountPoint(p) {
				if err := unix.Unmount(p, unix.MNT_DETACH); err != nil {
					return fmt.Errorf("unmount %s: %w", p, err)
				}
			}
		}
	}
	return os.RemoveAll(dir)
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// ClaimSource is implemented by Sources that can read claims and volumes
// (the kubelet's API sources); without it, claim volumes are refused.
type ClaimSource interface {
	// Claim returns the claim ns/name and the volume bound to it (nil
	// while it is not bound).
	Claim(ctx context.Context, ns, name string) (*v1.PersistentVolumeClaim, *v1.PersistentVolume, error)
}

// errClaimNotBound makes the pod wait: its claim is not bound yet.
var errClaimNotBound = errors.New("persistentvolumeclaim is not bound yet")

func claimVolume(ctx context.Context, src Sources, ns string, c *v1.PersistentVolumeClaimVolumeSource) (string, error) {
	cs, ok := src.(ClaimSource)
	if !ok {
		return "", configErrorf("persistentVolumeClaim %q: this kubelet cannot read claims", c.ClaimName)
	}
	pvc, pv, err := cs.Claim(ctx, ns, c.ClaimName)
	if apierrors.IsNotFound(err) && pvc == nil {
		return "", configErrorf("persistentvolumeclaim %q not found", c.ClaimName)
	}
	if err != nil {
		return "", err
	}
	if pv == nil {
		return "", fmt.Errorf("persistentvolumeclaim %q: %w", c.ClaimName, errClaimNotBound)
	}
	dir := pv.GetSpec().GetLocal().GetPath()
	if dir == "" {
		dir = pv.GetSpec().GetHostPath().GetPath()
	}
	if !filepath.IsAbs(dir) {
		return "", configErrorf("persistentvolume %q: no local or hostPath directory", pv.GetMetadata().GetName())
	}
	if err := os.MkdirAll(dir, 0o777); err != nil {
		return "", err
	}
	return dir, nil
}
