package pod

import (
	"bytes"
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
	"github.com/tugboat/tugboat/internal/atomicfile"
	"github.com/tugboat/tugboat/kubelet/runtime"
)

// Volumes live in the pod's directory (RootDir/pods/<uid>/volumes/<kind>/
// <name>) and are bind-mounted into containers:
//
//   - emptyDir: a directory (mode 0777, as Kubernetes), or a tmpfs for
//     medium Memory (sizeLimit as its size), removed with the pod;
//   - hostPath: the host path itself, checked or created per its type;
//   - persistentVolumeClaim: the directory of the volume bound to the claim
//     (a local or hostPath volume, made with mode 0777 if missing: the
//     local-path provisioner's volumes are made here on first use); the
//     pod waits (retried) while the claim is not bound;
//   - configMap and secret: one file per key (or per item), rewritten when
//     the object changes (files are replaced atomically; a key that
//     disappears is removed). Secrets are files on the node's disk, not a
//     tmpfs as in Kubernetes.

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
			p, err = emptyDir(cfg.volumeDir(uid, "empty-dir", v.Name), v.EmptyDir)
		case v.HostPath != nil:
			p, err = hostPath(v.HostPath)
			owned = false // Kubernetes leaves a hostPath's ownership alone
		case v.ConfigMap != nil:
			p, readOnly = cfg.volumeDir(uid, "configmap", v.Name), true
			err = configMapVolume(ctx, src, ns, p, v.ConfigMap, groupRead)
		case v.Secret != nil:
			p, readOnly = cfg.volumeDir(uid, "secret", v.Name), true
			err = secretVolume(ctx, src, ns, p, v.Secret, groupRead)
		case v.PersistentVolumeClaim != nil:
			p, err = claimVolume(ctx, src, ns, v.PersistentVolumeClaim)
		default:
			err = configErrorf("volume %q: no supported source (emptyDir, hostPath, configMap, secret, persistentVolumeClaim)", v.Name)
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

func configMapVolume(ctx context.Context, src Sources, ns, dir string, c *v1.ConfigMapVolumeSource, extra fs.FileMode) error {
	cm, err := src.ConfigMap(ctx, ns, c.Name)
	if err != nil {
		if c.Optional && apierrors.IsNotFound(err) {
			return writeKeyFiles(dir, nil, nil, 0o644, extra)
		}
		return sourceError("configmap", ns, c.Name, err)
	}
	data := map[string][]byte{}
	for k, v := range cm.Data {
		data[k] = []byte(v)
	}
	for k, v := range cm.BinaryData {
		data[k] = v
	}
	return writeKeyFiles(dir, data, c.Items, modeOr(c.DefaultMode, 0o644), extra)
}

func secretVolume(ctx context.Context, src Sources, ns, dir string, s *v1.SecretVolumeSource, extra fs.FileMode) error {
	sec, err := src.Secret(ctx, ns, s.SecretName)
	if err != nil {
		if s.Optional && apierrors.IsNotFound(err) {
			return writeKeyFiles(dir, nil, nil, 0o644, extra)
		}
		return sourceError("secret", ns, s.SecretName, err)
	}
	return writeKeyFiles(dir, sec.Data, s.Items, modeOr(s.DefaultMode, 0o644), extra)
}

func modeOr(m *int32, def fs.FileMode) fs.FileMode {
	if m == nil {
		return def
	}
	return fs.FileMode(*m) & 0o777
}

// writeKeyFiles makes dir hold exactly one file per key (or per item),
// rewriting only what changed. extra is or-ed into every file's mode.
func writeKeyFiles(dir string, data map[string][]byte, items []*v1.KeyToPath, mode, extra fs.FileMode) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	want := map[string]fileSpec{}
	if len(items) == 0 {
		for k, v := range data {
			want[k] = fileSpec{v, mode | extra}
		}
	} else {
		for _, it := range items {
			v, ok := data[it.Key]
			if !ok {
				return configErrorf("key %q not found", it.Key)
			}
			m := mode
			if it.Mode != nil {
				m = fs.FileMode(*it.Mode) & 0o777
			}
			want[it.Path] = fileSpec{v, m | extra}
		}
	}
	for rel, f := range want {
		clean := path.Clean(rel)
		if path.IsAbs(clean) || clean == ".." || strings.HasPrefix(clean, "../") {
			return configErrorf("file path %q: must be relative and stay inside the volume", rel)
		}
		p := filepath.Join(dir, filepath.FromSlash(clean))
		if have, err := os.ReadFile(p); err == nil && bytes.Equal(have, f.data) {
			if fi, err := os.Stat(p); err == nil && fi.Mode().Perm() == f.mode {
				continue
			}
		}
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			return err
		}
		if err := atomicfile.Write(p, bytes.NewReader(f.data), f.mode); err != nil {
			return err
		}
	}
	// Remove files of keys that are gone.
	return filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		if _, ok := want[filepath.ToSlash(rel)]; !ok {
			return os.Remove(p)
		}
		return nil
	})
}

type fileSpec struct {
	data []byte
	mode fs.FileMode
}

// containerMounts turns a container's volumeMounts into bind mounts.
func containerMounts(c *v1.Container, vols map[string]string) ([]runtime.Mount, error) {
	var out []runtime.Mount
	for _, vm := range c.VolumeMounts {
		src, ok := vols[vm.Name]
		if !ok {
			return nil, configErrorf("volumeMount %q: no volume of that name", vm.Name)
		}
		if vm.SubPath != "" {
			sub := path.Clean(vm.SubPath)
			if path.IsAbs(sub) || sub == ".." || strings.HasPrefix(sub, "../") {
				return nil, configErrorf("volumeMount %q: subPath %q must stay inside the volume", vm.Name, vm.SubPath)
			}
			src = filepath.Join(src, filepath.FromSlash(sub))
			if _, err := os.Stat(src); errors.Is(err, fs.ErrNotExist) {
				if err := os.MkdirAll(src, 0o777); err != nil {
					return nil, err
				}
			}
		}
		out = append(out, runtime.Mount{HostPath: src, ContainerPath: vm.MountPath, ReadOnly: vm.ReadOnly})
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
