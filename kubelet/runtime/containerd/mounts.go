package containerd

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os/exec"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"sync"

	"github.com/containerd/containerd/v2/core/containers"
	"github.com/containerd/containerd/v2/pkg/oci"
	"github.com/moby/sys/mountinfo"
	specs "github.com/opencontainers/runtime-spec/specs-go"
	"golang.org/x/sys/unix"

	"github.com/tugboat/tugboat/kubelet/runtime"
)

// Mount propagation and recursive read-only mounts on the native backend,
// as containerd's CRI plugin writes them into the OCI spec (WithMounts):
// a private mount is rprivate, HostToContainer rslave, Bidirectional
// rshared, and the container's root file system propagation follows
// (rslave for HostToContainer unless a mount is Bidirectional, rshared
// then), so that mounts can travel through it. The host path must be on a
// mount that can propagate — shared for Bidirectional, shared or a slave
// for HostToContainer — or the container is refused with containerd's
// message (a private host mount would propagate nothing). A recursive
// read-only mount gets runc's "rro" option next to "ro".

// mounts returns the bind mounts: the sandbox's /etc files unless the
// container mounts something over them, then the container's own.
func mounts(etc runtime.EtcFiles, ms []runtime.Mount) []specs.Mount {
	taken := make(map[string]bool, len(ms))
	for _, m := range ms {
		taken[path.Clean(m.ContainerPath)] = true
	}
	var out []specs.Mount
	for _, f := range []struct{ src, dst string }{
		{etc.HostsPath, "/etc/hosts"},
		{etc.HostnamePath, "/etc/hostname"},
		{etc.ResolvConfPath, "/etc/resolv.conf"},
	} {
		if f.src != "" && !taken[f.dst] {
			out = append(out, bind(runtime.Mount{HostPath: f.src, ContainerPath: f.dst, ReadOnly: true}))
		}
	}
	for _, m := range ms {
		out = append(out, bind(m))
	}
	return out
}

func bind(m runtime.Mount) specs.Mount {
	prop := map[runtime.MountPropagation]string{
		runtime.PropagationHostToContainer: "rslave",
		runtime.PropagationBidirectional:   "rshared",
	}[m.Propagation]
	if prop == "" {
		prop = "rprivate"
	}
	opts := []string{"rbind", prop, "rw"}
	if m.ReadOnly {
		opts[2] = "ro"
	}
	if m.RecursiveReadOnly {
		opts = append(opts, "rro")
	}
	return specs.Mount{Destination: path.Clean(m.ContainerPath), Type: "bind", Source: m.HostPath, Options: opts}
}

// withRootfsPropagation sets the root file system's propagation the
// container's mounts need (containerd CRI's rule).
func withRootfsPropagation(ms []runtime.Mount) oci.SpecOpts {
	return func(_ context.Context, _ oci.Client, _ *containers.Container, s *oci.Spec) error {
		if s.Linux == nil {
			s.Linux = &specs.Linux{}
		}
		for _, m := range ms {
			switch m.Propagation {
			case runtime.PropagationBidirectional:
				s.Linux.RootfsPropagation = "rshared"
			case runtime.PropagationHostToContainer:
				if s.Linux.RootfsPropagation != "rshared" {
					s.Linux.RootfsPropagation = "rslave"
				}
			}
		}
		return nil
	}
}

// checkPropagation refuses a mount whose host path's mount cannot
// propagate as asked, with containerd CRI's messages.
func checkPropagation(ms []runtime.Mount) error {
	for _, m := range ms {
		if m.Propagation == runtime.PropagationPrivate {
			continue
		}
		mi, err := hostMount(m.HostPath)
		if err != nil {
			return err
		}
		shared := strings.Contains(mi.Optional, "shared:")
		slave := strings.Contains(mi.Optional, "master:")
		switch {
		case m.Propagation == runtime.PropagationBidirectional && !shared:
			return fmt.Errorf("path %q is mounted on %q but it is not a shared mount: %w", m.HostPath, mi.Mountpoint, runtime.ErrInvalid)
		case m.Propagation == runtime.PropagationHostToContainer && !shared && !slave:
			return fmt.Errorf("path %q is mounted on %q but it is not a shared or slave mount: %w", m.HostPath, mi.Mountpoint, runtime.ErrInvalid)
		}
	}
	return nil
}

// hostMount is the mount p is on (the innermost of the mounts whose
// mount point is p or a parent of it), after symlinks.
func hostMount(p string) (*mountinfo.Info, error) {
	real, err := filepath.EvalSymlinks(p)
	if err != nil {
		return nil, fmt.Errorf("mount propagation: %w", err)
	}
	ms, err := mountinfo.GetMounts(mountinfo.ParentsFilter(real))
	if err != nil {
		return nil, fmt.Errorf("mount propagation: reading the host's mounts: %w", err)
	}
	if len(ms) == 0 {
		return nil, fmt.Errorf("mount propagation: no mount holds %q", real)
	}
	// The last listed of the longest mount points is the one on top.
	best := ms[0]
	for _, m := range ms[1:] {
		if len(m.Mountpoint) >= len(best.Mountpoint) {
			best = m
		}
	}
	return best, nil
}

// RecursiveReadOnlyMounts implements runtime.ContainerRuntime: runc makes
// them ("rro", with the kernel's mount_setattr, Linux 5.12) if `runc
// features` lists the option. The runc asked is the first on the
// kubelet's PATH, the one the runc shim runs when containerd shares that
// PATH (as the project's installs and tests do).
func (r *Runtime) RecursiveReadOnlyMounts(context.Context) error {
	rroOnce.Do(func() { rroErr = runcSupportsRRO() })
	return rroErr
}

var (
	rroOnce sync.Once
	rroErr  error
)

func runcSupportsRRO() error {
	if err := unix.MountSetattr(-1, "", unix.AT_EMPTY_PATH, &unix.MountAttr{}); errors.Is(err, unix.ENOSYS) {
		return errors.New("recursive read-only mounts need Linux 5.12 or later (mount_setattr)")
	}
	bin, err := exec.LookPath("runc")
	if err != nil {
		return fmt.Errorf("recursive read-only mounts: %w", err)
	}
	out, err := exec.Command(bin, "features").Output()
	if err != nil {
		return fmt.Errorf("recursive read-only mounts: %s features: %w (runc 1.1 or later is needed)", bin, err)
	}
	var f struct {
		MountOptions []string `json:"mountOptions"`
	}
	if err := json.Unmarshal(out, &f); err != nil {
		return fmt.Errorf("recursive read-only mounts: %s features: %w", bin, err)
	}
	if !slices.Contains(f.MountOptions, "rro") {
		return fmt.Errorf("recursive read-only mounts: %s does not support the mount option rro", bin)
	}
	return nil
}
