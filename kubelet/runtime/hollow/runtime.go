package hollow

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/netip"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/distribution/reference"

	"github.com/tugboat/tugboat/kubelet/runtime"
)

// Name and Version are what Version reports ("hollow://0.1.0" in the
// Node's nodeInfo).
const (
	Name    = "hollow"
	Version = "0.1.0"
)

// KilledExitCode is the exit code of a container StopContainer ended.
const KilledExitCode = 137

// Config configures one node's runtime.
type Config struct {
	// Images are present on the node from the start. Give every node the
	// same slice: it is read, never copied or written.
	Images []runtime.ImageStatus
	// Now is the clock (time.Now if nil).
	Now func() time.Time
}

// Runtime is one hollow node's runtime; see the package documentation.
// It is safe for concurrent use.
type Runtime struct {
	cfg Config

	mu         sync.Mutex
	seq        uint64
	ips        addressPool
	sandboxes  map[string]*sandbox
	containers map[string]*container
	pulled     map[string]runtime.ImageStatus // by normalised ref
}

type sandbox struct {
	status runtime.SandboxStatus
}

type container struct {
	status  runtime.ContainerStatus
	cmdline []string
}

// New returns an empty runtime: no sandboxes, no pod CIDR yet.
func New(cfg Config) *Runtime {
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	return &Runtime{cfg: cfg, sandboxes: map[string]*sandbox{}, containers: map[string]*container{}}
}

// Close releases nothing; it is there for symmetry with the other backends.
func (r *Runtime) Close() error { return nil }

// Version implements runtime.Runtime; a hollow runtime is always ready.
func (r *Runtime) Version(context.Context) (runtime.VersionInfo, error) {
	return runtime.VersionInfo{RuntimeName: Name, RuntimeVersion: Version}, nil
}

// SetPodCIDR sets the range pod addresses come from (CRI's
// UpdateRuntimeConfig). Addresses already handed out stay in use; a
// change of range applies to new sandboxes.
func (r *Runtime) SetPodCIDR(cidr netip.Prefix) error {
	if !cidr.IsValid() || cidr.Masked() != cidr || !cidr.Addr().Is4() || cidr.Bits() > 30 {
		return fmt.Errorf("pod CIDR %q: want an IPv4 network prefix of at most /30: %w", cidr, runtime.ErrInvalid)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.ips.setRange(cidr)
	return nil
}

// PodCIDR is the range set by SetPodCIDR (invalid until then).
func (r *Runtime) PodCIDR() netip.Prefix {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.ips.cidr
}

func (r *Runtime) newID() string {
	r.seq++
	return strconv.FormatUint(r.seq, 16)
}

// RunPodSandbox implements runtime.Runtime.
func (r *Runtime) RunPodSandbox(_ context.Context, cfg runtime.SandboxConfig) (string, error) {
	if err := cfg.Validate(); err != nil {
		return "", err
	}
	if cfg.UserNamespace != nil {
		// A hollow node runs no processes to put in a user namespace.
		return "", runtime.UserNamespacesUnsupported("")
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	st := runtime.SandboxStatus{Config: cfg, State: runtime.SandboxReady, CreatedAt: r.cfg.Now()}
	if !cfg.HostNetwork {
		ip, err := r.ips.allocate()
		if err != nil {
			return "", fmt.Errorf("pod %s: %v: %w", cfg.Pod, err, runtime.ErrNetworkSetup)
		}
		st.IP = ip.String()
	}
	st.ID = r.newID()
	r.sandboxes[st.ID] = &sandbox{status: st}
	return st.ID, nil
}

// StopPodSandbox implements runtime.Runtime.
func (r *Runtime) StopPodSandbox(_ context.Context, id string) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	sb := r.sandboxes[id]
	if sb == nil {
		return nil
	}
	for _, c := range r.containers {
		if c.status.SandboxID == id && c.status.State == runtime.ContainerRunning {
			r.exitLocked(c, KilledExitCode)
		}
	}
	r.stopLocked(sb)
	return nil
}

func (r *Runtime) stopLocked(sb *sandbox) {
	if sb.status.IP != "" {
		r.ips.release(netip.MustParseAddr(sb.status.IP))
		sb.status.IP = ""
	}
	sb.status.State = runtime.SandboxNotReady
}

// RemovePodSandbox implements runtime.Runtime.
func (r *Runtime) RemovePodSandbox(_ context.Context, id string) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	sb := r.sandboxes[id]
	if sb == nil {
		return nil
	}
	for cid, c := range r.containers {
		if c.status.SandboxID == id {
			delete(r.containers, cid)
		}
	}
	r.stopLocked(sb)
	delete(r.sandboxes, id)
	return nil
}

// PodSandboxStatus implements runtime.Runtime.
func (r *Runtime) PodSandboxStatus(_ context.Context, id string) (runtime.SandboxStatus, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if sb := r.sandboxes[id]; sb != nil {
		return sb.status, nil
	}
	return runtime.SandboxStatus{}, fmt.Errorf("sandbox %s: %w", id, runtime.ErrNotFound)
}

// ListPodSandbox implements runtime.Runtime. Like the other backends'
// lists, it leaves IP empty.
func (r *Runtime) ListPodSandbox(_ context.Context, f runtime.SandboxFilter) ([]runtime.SandboxStatus, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []runtime.SandboxStatus
	for id, sb := range r.sandboxes {
		s := sb.status
		if (f.ID == "" || id == f.ID) && (f.PodUID == "" || s.Config.Pod.UID == f.PodUID) &&
			(f.State == "" || s.State == f.State) && hasLabels(s.Config.Labels, f.Labels) {
			s.IP = ""
			out = append(out, s)
		}
	}
	return out, nil
}

func hasLabels(have, want map[string]string) bool {
	for k, v := range want {
		if got, ok := have[k]; !ok || got != v {
			return false
		}
	}
	return true
}

// ImageVolumes implements runtime.Runtime: the simulation has no image
// content to mount.
func (r *Runtime) ImageVolumes(context.Context) error {
	return errors.New("image volumes are not supported by the hollow (simulated) runtime")
}

// RecursiveReadOnlyMounts implements runtime.Runtime: the simulation
// mounts nothing, so it cannot make a mount read-only recursively.
func (r *Runtime) RecursiveReadOnlyMounts(context.Context) error {
	return errors.New("recursive read-only mounts are not supported by the hollow (simulated) runtime")
}

// CreateContainer implements runtime.Runtime.
func (r *Runtime) CreateContainer(_ context.Context, sandboxID string, cfg runtime.ContainerConfig) (string, error) {
	if err := cfg.Validate(); err != nil {
		return "", err
	}
	ref, err := normalizeRef(cfg.Image)
	if err != nil {
		return "", err
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	sb := r.sandboxes[sandboxID]
	switch {
	case sb == nil:
		return "", fmt.Errorf("sandbox %s: %w", sandboxID, runtime.ErrNotFound)
	case sb.status.State != runtime.SandboxReady:
		return "", fmt.Errorf("sandbox %s: %w", sandboxID, runtime.ErrSandboxNotReady)
	}
	img, ok := r.imageLocked(ref)
	if !ok {
		return "", fmt.Errorf("image %s: %w", cfg.Image, runtime.ErrImageNotPresent)
	}
	id := r.newID()
	r.containers[id] = &container{
		cmdline: append(append([]string(nil), cfg.Command...), cfg.Args...),
		status: runtime.ContainerStatus{
			ID: id, SandboxID: sandboxID, Pod: sb.status.Config.Pod, Name: cfg.Name, Attempt: cfg.Attempt,
			Image: cfg.Image, ImageID: img.ID, State: runtime.ContainerCreated, CreatedAt: r.cfg.Now(),
			LogPath: cfg.LogPath, LogFormat: runtime.LogFormatCRI, Labels: cfg.Labels,
		},
	}
	return id, nil
}

// StartContainer implements runtime.Runtime: the container runs at once
// (or exits at once, for the commands the package documentation lists).
func (r *Runtime) StartContainer(_ context.Context, id string) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	c := r.containers[id]
	if c == nil {
		return fmt.Errorf("container %s: %w", id, runtime.ErrNotFound)
	}
	if c.status.State != runtime.ContainerCreated {
		return fmt.Errorf("container %s is %s, not Created: containers are not restarted: %w", id, c.status.State, runtime.ErrInvalid)
	}
	c.status.State = runtime.ContainerRunning
	c.status.StartedAt = r.cfg.Now()
	if code, exits := exitCode(c.cmdline); exits {
		r.exitLocked(c, code)
	}
	return nil
}

func (r *Runtime) exitLocked(c *container, code int) {
	c.status.State = runtime.ContainerExited
	c.status.ExitCode = code
	c.status.FinishedAt = r.cfg.Now()
	c.status.Reason = runtime.ReasonCompleted
	if code != 0 {
		c.status.Reason = runtime.ReasonError
	}
}

// StopContainer implements runtime.Runtime: a hollow container exits at
// once when told to, whatever the grace period.
func (r *Runtime) StopContainer(_ context.Context, id string, _ time.Duration) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	c := r.containers[id]
	if c == nil {
		return fmt.Errorf("container %s: %w", id, runtime.ErrNotFound)
	}
	if c.status.State == runtime.ContainerRunning {
		r.exitLocked(c, KilledExitCode)
	}
	return nil
}

// RemoveContainer implements runtime.Runtime.
func (r *Runtime) RemoveContainer(_ context.Context, id string) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	delete(r.containers, id)
	return nil
}

// ContainerStatus implements runtime.Runtime.
func (r *Runtime) ContainerStatus(_ context.Context, id string) (runtime.ContainerStatus, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if c := r.containers[id]; c != nil {
		return c.status, nil
	}
	return runtime.ContainerStatus{}, fmt.Errorf("container %s: %w", id, runtime.ErrNotFound)
}

// ListContainers implements runtime.Runtime.
func (r *Runtime) ListContainers(_ context.Context, f runtime.ContainerFilter) ([]runtime.ContainerStatus, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []runtime.ContainerStatus
	for id, c := range r.containers {
		s := c.status
		if (f.ID == "" || id == f.ID) && (f.PodUID == "" || s.Pod.UID == f.PodUID) &&
			(f.SandboxID == "" || s.SandboxID == f.SandboxID) && (f.State == "" || s.State == f.State) &&
			hasLabels(s.Labels, f.Labels) {
			out = append(out, s)
		}
	}
	return out, nil
}

// UpdateContainerResources implements runtime.Runtime: there is no
// cgroup, so it only checks the container can take it (the kubelet keeps
// what it gave each container).
func (r *Runtime) UpdateContainerResources(_ context.Context, id string, _ runtime.Resources) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	c := r.containers[id]
	switch {
	case c == nil:
		return fmt.Errorf("container %s: %w", id, runtime.ErrNotFound)
	case c.status.State == runtime.ContainerExited:
		return fmt.Errorf("container %s: %w", id, runtime.ErrNotRunning)
	}
	return nil
}

// ContainerStats implements runtime.Runtime: zero usage.
func (r *Runtime) ContainerStats(_ context.Context, id string) (runtime.ContainerStats, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	c := r.containers[id]
	switch {
	case c == nil:
		return runtime.ContainerStats{}, fmt.Errorf("container %s: %w", id, runtime.ErrNotFound)
	case c.status.State != runtime.ContainerRunning:
		return runtime.ContainerStats{}, fmt.Errorf("container %s: %w", id, runtime.ErrNotRunning)
	}
	return runtime.ContainerStats{Timestamp: r.cfg.Now()}, nil
}

// Exec implements runtime.Runtime: nothing runs; the exit code is the
// one exitCode gives the command (0 unless it is "false" or an "exit N").
func (r *Runtime) Exec(_ context.Context, id string, req runtime.ExecRequest) (int, error) {
	r.mu.Lock()
	c := r.containers[id]
	running := c != nil && c.status.State == runtime.ContainerRunning
	r.mu.Unlock()
	switch {
	case c == nil:
		return 0, fmt.Errorf("container %s: %w", id, runtime.ErrNotFound)
	case !running:
		return 0, fmt.Errorf("container %s: %w", id, runtime.ErrNotRunning)
	case len(req.Cmd) == 0:
		return 0, fmt.Errorf("exec: no command: %w", runtime.ErrInvalid)
	}
	if req.Stdin != nil {
		_, _ = io.Copy(io.Discard, req.Stdin)
	}
	code, _ := exitCode(req.Cmd)
	return code, nil
}

// exitCode is how a hollow process given cmdline ends: "true" (0),
// "false" (1) and "sh -c 'exit N'" (N) end at once (exits true); any
// other command runs until it is stopped, and as an exec succeeds.
func exitCode(cmdline []string) (code int, exits bool) {
	switch {
	case len(cmdline) == 1 && (cmdline[0] == "true" || cmdline[0] == "/bin/true"):
		return 0, true
	case len(cmdline) == 1 && (cmdline[0] == "false" || cmdline[0] == "/bin/false"):
		return 1, true
	case len(cmdline) == 3 && (cmdline[0] == "sh" || cmdline[0] == "/bin/sh") && cmdline[1] == "-c":
		f := strings.Fields(cmdline[2])
		if len(f) == 2 && f[0] == "exit" {
			if n, err := strconv.Atoi(f[1]); err == nil && n >= 0 && n <= 255 {
				return n, true
			}
		}
	}
	return 0, false
}

// normalizeRef turns "busybox" into "docker.io/library/busybox:latest".
func normalizeRef(ref string) (string, error) {
	named, err := reference.ParseDockerRef(ref)
	if err != nil {
		return "", fmt.Errorf("image %q: %v: %w", ref, err, runtime.ErrInvalid)
	}
	return named.String(), nil
}

func (r *Runtime) imageLocked(ref string) (runtime.ImageStatus, bool) {
	for _, img := range r.cfg.Images {
		if img.Ref == ref {
			return img, true
		}
	}
	img, ok := r.pulled[ref]
	return img, ok
}

// EnsureImage implements runtime.Runtime: any valid reference is "pulled"
// at once, without a registry.
func (r *Runtime) EnsureImage(_ context.Context, ref string, _ *runtime.RegistryAuth) (runtime.ImageStatus, error) {
	n, err := normalizeRef(ref)
	if err != nil {
		return runtime.ImageStatus{}, err
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if img, ok := r.imageLocked(n); ok {
		return img, nil
	}
	img := SimulatedImage(n)
	if r.pulled == nil {
		r.pulled = map[string]runtime.ImageStatus{}
	}
	r.pulled[n] = img
	return img, nil
}

// SimulatedImage describes the image ref (normalised) as a hollow node
// has it: a made-up ID and digest derived from the name, no layers.
func SimulatedImage(ref string) runtime.ImageStatus {
	id := fmt.Sprintf("sha256:%064x", fnv64(ref))
	return runtime.ImageStatus{Ref: ref, ID: id, Digest: id}
}

func fnv64(s string) uint64 {
	h := uint64(14695981039346656037)
	for i := 0; i < len(s); i++ {
		h ^= uint64(s[i])
		h *= 1099511628211
	}
	return h
}

// ImportImage implements runtime.Runtime: refused, a hollow node has no
// image store to import into.
func (r *Runtime) ImportImage(context.Context, io.Reader) ([]runtime.ImageStatus, error) {
	return nil, fmt.Errorf("a hollow node does not import images (its images are simulated: any reference pulls at once): %w", runtime.ErrInvalid)
}

// ImageStatus implements runtime.Runtime.
func (r *Runtime) ImageStatus(_ context.Context, ref string) (runtime.ImageStatus, error) {
	n, err := normalizeRef(ref)
	if err != nil {
		return runtime.ImageStatus{}, err
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if img, ok := r.imageLocked(n); ok {
		return img, nil
	}
	return runtime.ImageStatus{}, fmt.Errorf("image %s: %w", ref, runtime.ErrImageNotPresent)
}

// ListImages implements runtime.Runtime.
func (r *Runtime) ListImages(context.Context) ([]runtime.ImageStatus, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := append([]runtime.ImageStatus(nil), r.cfg.Images...)
	for _, img := range r.pulled {
		out = append(out, img)
	}
	return out, nil
}

// RemoveImage implements runtime.Runtime: a pulled image is forgotten; the
// configured ones are every node's and stay.
func (r *Runtime) RemoveImage(_ context.Context, ref string) error {
	n, err := normalizeRef(ref)
	if err != nil {
		return err
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	delete(r.pulled, n)
	return nil
}
