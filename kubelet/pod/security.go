package pod

import (
	"context"
	"fmt"
	"path/filepath"
	"strconv"
	"strings"

	v1 "github.com/tugboat/tugboat/api/v1"
	"github.com/tugboat/tugboat/kubelet/runtime"
)

// securityConfig is the container's security context for the runtime: the
// container's fields over the pod's (runAsUser, runAsGroup, runAsNonRoot,
// seccompProfile), the pod's groups (supplementalGroups and fsGroup), as
// Kubernetes' kubelet merges them. A Localhost seccomp profile is a file
// under the kubelet's seccomp directory.
func (c Config) securityConfig(pod *v1.Pod, ctr *v1.Container) runtime.SecurityConfig {
	psc := pod.GetSpec().GetSecurityContext()
	if psc == nil {
		psc = &v1.PodSecurityContext{}
	}
	sc := ctr.GetSecurityContext()
	if sc == nil {
		sc = &v1.SecurityContext{}
	}
	out := runtime.SecurityConfig{
		RunAsUser:          psc.RunAsUser,
		RunAsGroup:         psc.RunAsGroup,
		SupplementalGroups: append([]int64(nil), psc.GetSupplementalGroups()...),
		Privileged:         sc.GetPrivileged(),
		ReadOnlyRootfs:     sc.GetReadOnlyRootFilesystem(),
		NoNewPrivs:         sc.AllowPrivilegeEscalation != nil && !*sc.AllowPrivilegeEscalation,
		CapAdd:             sc.GetCapabilities().GetAdd(),
		CapDrop:            sc.GetCapabilities().GetDrop(),
		Seccomp:            c.seccomp(psc.GetSeccompProfile()),
	}
	if g := psc.FsGroup; g != nil {
		out.SupplementalGroups = append(out.SupplementalGroups, *g)
	}
	if sc.RunAsUser != nil {
		out.RunAsUser = sc.RunAsUser
	}
	if sc.RunAsGroup != nil {
		out.RunAsGroup = sc.RunAsGroup
	}
	if sc.SeccompProfile != nil {
		out.Seccomp = c.seccomp(sc.SeccompProfile)
	}
	return out
}

// SeccompDir is where Localhost seccomp profiles are read from
// (RootDir/seccomp, as Kubernetes' <root-dir>/seccomp).
func (c Config) SeccompDir() string { return filepath.Join(c.RootDir, "seccomp") }

func (c Config) seccomp(p *v1.SeccompProfile) runtime.SeccompProfile {
	switch p.GetType() {
	case "RuntimeDefault":
		return runtime.SeccompProfile{Type: runtime.SeccompRuntimeDefault}
	case "Localhost":
		return runtime.SeccompProfile{Type: runtime.SeccompLocalhost, LocalhostPath: filepath.Join(c.SeccompDir(), filepath.FromSlash(p.GetLocalhostProfile()))}
	}
	return runtime.SeccompProfile{}
}

// runAsNonRoot reports whether the container must not run as root (its
// own field over the pod's).
func runAsNonRoot(pod *v1.Pod, c *v1.Container) bool {
	if sc := c.GetSecurityContext(); sc != nil && sc.RunAsNonRoot != nil {
		return *sc.RunAsNonRoot
	}
	return pod.GetSpec().GetSecurityContext().GetRunAsNonRoot()
}

// verifyRunAsNonRoot refuses, as a config error (the container waits as
// CreateContainerConfigError, with Kubernetes' messages), a container
// that must not run as root but would: runAsUser 0, or no runAsUser and an
// image whose user is root or a name that cannot be checked.
func (r *syncRun) verifyRunAsNonRoot(ctx context.Context, c *v1.Container, sc runtime.SecurityConfig) error {
	pod := r.in.pod
	if !runAsNonRoot(pod, c) {
		return nil
	}
	podName := pod.GetMetadata().GetName()
	if sc.RunAsUser != nil {
		if *sc.RunAsUser == 0 {
			return configErrorf("container's runAsUser breaks non-root policy (pod: %q, container: %s)", podName, c.Name)
		}
		return nil
	}
	img, err := r.w.m.rt.ImageStatus(ctx, c.Image)
	if err != nil {
		return fmt.Errorf("image %s: %w", c.Image, err)
	}
	user, _, _ := strings.Cut(img.User, ":")
	if user == "" {
		user = "0"
	}
	uid, err := strconv.ParseInt(user, 10, 64)
	if err != nil {
		return configErrorf("container has runAsNonRoot and image has non-numeric user (%s), cannot verify user is non-root (pod: %q, container: %s)", user, podName, c.Name)
	}
	if uid == 0 {
		return configErrorf("container has runAsNonRoot and image will run as root (pod: %q, container: %s)", podName, c.Name)
	}
	return nil
}

// podSysctls are the pod's sysctls for its sandbox.
func podSysctls(pod *v1.Pod) map[string]string {
	list := pod.GetSpec().GetSecurityContext().GetSysctls()
	if len(list) == 0 {
		return nil
	}
	out := make(map[string]string, len(list))
	for _, s := range list {
		// Kubernetes accepts "net/ipv4/..." as well as dots.
		out[strings.ReplaceAll(s.Name, "/", ".")] = s.Value
	}
	return out
}

// podPrivileged reports whether any container of the pod is privileged.
func podPrivileged(pod *v1.Pod) bool {
	for _, c := range append(append([]*v1.Container(nil), pod.GetSpec().GetInitContainers()...), pod.GetSpec().GetContainers()...) {
		if c.GetSecurityContext().GetPrivileged() {
			return true
		}
	}
	return false
}
