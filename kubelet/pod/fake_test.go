package pod

import (
	"context"
	"fmt"
	"io"
	"net/netip"
	"sort"
	"strings"
	"sync"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/tugboat/tugboat/api/apierrors"
	"github.com/tugboat/tugboat/api/client"
	v1 "github.com/tugboat/tugboat/api/v1"
	"github.com/tugboat/tugboat/kubelet/network"
	"github.com/tugboat/tugboat/kubelet/prober"
	"github.com/tugboat/tugboat/kubelet/runtime"
)

// fakeRuntime is an in-memory runtime.Runtime. Containers "run" until the
// test makes them exit; onStart can make them exit at once.
type fakeRuntime struct {
	mu         sync.Mutex
	now        func() time.Time
	seq        int
	images     map[string]bool
	imageUsers map[string]string // the images' configured users
	pullErr    error
	pulls      int
	// pullAuths are the credentials of every pull (nil: anonymous);
	// wantAuth, if set, is the only one the "registry" accepts.
	pullAuths  []*runtime.RegistryAuth
	wantAuth   *runtime.RegistryAuth
	sandboxes  map[string]*runtime.SandboxStatus
	containers map[string]*fakeContainer
	// onStart, if set, decides whether a started container exits at once
	// and with which code.
	onStart func(cfg runtime.ContainerConfig) (exits bool, code int, reason string)
	// stopExitCode is the exit code StopContainer records (137: killed).
	stopExitCode int
	// onExec, if set, is the exit code and output of an exec.
	onExec func(container string, cmd []string) (code int, output string)
	stops  []fakeStop
	// updateErr, if set, is what UpdateContainerResources fails with.
	updateErr error
	calls     []string
	// imageVolumesErr is what ImageVolumes says (nil: supported).
	imageVolumesErr error
	// rroErr is what RecursiveReadOnlyMounts says (nil: supported).
	rroErr error
	// inSandbox, if set, runs inside RunPodSandbox (unlocked), before
	// the sandbox is made; sandboxErr, if set, is what it fails with.
	inSandbox  func()
	sandboxErr error
}

func (f *fakeRuntime) RecursiveReadOnlyMounts(context.Context) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.rroErr
}

func (f *fakeRuntime) ImageVolumes(context.Context) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.imageVolumesErr
}

type fakeContainer struct {
	status runtime.ContainerStatus
	cfg    runtime.ContainerConfig
}

type fakeStop struct {
	name  string
	grace time.Duration
}

func newFakeRuntime(now func() time.Time) *fakeRuntime {
	return &fakeRuntime{
		now: now, images: map[string]bool{}, stopExitCode: 137,
		sandboxes: map[string]*runtime.SandboxStatus{}, containers: map[string]*fakeContainer{},
	}
}

func (f *fakeRuntime) id(prefix string) string {
	f.seq++
	return fmt.Sprintf("%s%d", prefix, f.seq)
}

func (f *fakeRuntime) call(format string, args ...any) {
	f.calls = append(f.calls, fmt.Sprintf(format, args...))
}

func (f *fakeRuntime) Version(context.Context) (runtime.VersionInfo, error) {
	return runtime.VersionInfo{RuntimeName: "fake", RuntimeVersion: "1"}, nil
}

func (f *fakeRuntime) RunPodSandbox(_ context.Context, cfg runtime.SandboxConfig) (string, error) {
	if f.inSandbox != nil {
		f.inSandbox()
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := cfg.Validate(); err != nil {
		return "", err
	}
	if f.sandboxErr != nil {
		return "", f.sandboxErr
	}
	id := f.id("sb")
	f.sandboxes[id] = &runtime.SandboxStatus{ID: id, Config: cfg, State: runtime.SandboxReady, CreatedAt: f.now()}
	f.call("RunPodSandbox %s", cfg.Pod.Name)
	return id, nil
}

func (f *fakeRuntime) StopPodSandbox(_ context.Context, id string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	sb := f.sandboxes[id]
	if sb == nil {
		return nil
	}
	for _, c := range f.containers {
		if c.status.SandboxID == id && c.status.State == runtime.ContainerRunning {
			f.exitLocked(c, 137, runtime.ReasonError)
		}
	}
	sb.State = runtime.SandboxNotReady
	f.call("StopPodSandbox %s", id)
	return nil
}

func (f *fakeRuntime) RemovePodSandbox(_ context.Context, id string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.sandboxes[id] == nil {
		return nil
	}
	for cid, c := range f.containers {
		if c.status.SandboxID == id {
			delete(f.containers, cid)
		}
	}
	delete(f.sandboxes, id)
	f.call("RemovePodSandbox %s", id)
	return nil
}

func (f *fakeRuntime) PodSandboxStatus(_ context.Context, id string) (runtime.SandboxStatus, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if sb := f.sandboxes[id]; sb != nil {
		return *sb, nil
	}
	return runtime.SandboxStatus{}, runtime.ErrNotFound
}

func (f *fakeRuntime) ListPodSandbox(_ context.Context, flt runtime.SandboxFilter) ([]runtime.SandboxStatus, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []runtime.SandboxStatus
	for _, sb := range f.sandboxes {
		if (flt.PodUID == "" || sb.Config.Pod.UID == flt.PodUID) && (flt.State == "" || sb.State == flt.State) && hasLabels(sb.Config.Labels, flt.Labels) {
			out = append(out, *sb)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out, nil
}

func hasLabels(have, want map[string]string) bool {
	for k, v := range want {
		if have[k] != v {
			return false
		}
	}
	return true
}

func (f *fakeRuntime) CreateContainer(_ context.Context, sandboxID string, cfg runtime.ContainerConfig) (string, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := cfg.Validate(); err != nil {
		return "", err
	}
	sb := f.sandboxes[sandboxID]
	if sb == nil {
		return "", runtime.ErrNotFound
	}
	if sb.State != runtime.SandboxReady {
		return "", runtime.ErrSandboxNotReady
	}
	if !f.images[cfg.Image] {
		return "", fmt.Errorf("image %s: %w", cfg.Image, runtime.ErrImageNotPresent)
	}
	id := f.id("c")
	f.containers[id] = &fakeContainer{cfg: cfg, status: runtime.ContainerStatus{
		ID: id, SandboxID: sandboxID, Pod: sb.Config.Pod, Name: cfg.Name, Attempt: cfg.Attempt,
		Image: cfg.Image, ImageID: "sha256:" + cfg.Image, State: runtime.ContainerCreated, CreatedAt: f.now(),
		LogPath: cfg.LogPath, Labels: cfg.Labels,
	}}
	f.call("CreateContainer %s/%d", cfg.Name, cfg.Attempt)
	return id, nil
}

func (f *fakeRuntime) StartContainer(_ context.Context, id string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	c := f.containers[id]
	if c == nil {
		return runtime.ErrNotFound
	}
	c.status.State = runtime.ContainerRunning
	c.status.StartedAt = f.now()
	f.call("StartContainer %s/%d", c.cfg.Name, c.cfg.Attempt)
	if f.onStart != nil {
		if exits, code, reason := f.onStart(c.cfg); exits {
			f.exitLocked(c, code, reason)
		}
	}
	return nil
}

func (f *fakeRuntime) exitLocked(c *fakeContainer, code int, reason string) {
	c.status.State = runtime.ContainerExited
	c.status.ExitCode = code
	c.status.FinishedAt = f.now()
	if reason == "" {
		reason = runtime.ReasonCompleted
		if code != 0 {
			reason = runtime.ReasonError
		}
	}
	c.status.Reason = reason
}

// exit makes the running container name of the pod exit.
func (f *fakeRuntime) exit(name string, code int, reason string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, c := range f.containers {
		if c.cfg.Name == name && c.status.State == runtime.ContainerRunning {
			f.exitLocked(c, code, reason)
		}
	}
}

func (f *fakeRuntime) StopContainer(_ context.Context, id string, grace time.Duration) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	c := f.containers[id]
	if c == nil {
		return runtime.ErrNotFound
	}
	f.stops = append(f.stops, fakeStop{c.cfg.Name, grace})
	f.call("StopContainer %s/%d", c.cfg.Name, c.cfg.Attempt)
	if c.status.State == runtime.ContainerRunning {
		f.exitLocked(c, f.stopExitCode, "")
	}
	return nil
}

func (f *fakeRuntime) RemoveContainer(_ context.Context, id string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	delete(f.containers, id)
	return nil
}

func (f *fakeRuntime) ContainerStatus(_ context.Context, id string) (runtime.ContainerStatus, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if c := f.containers[id]; c != nil {
		return c.status, nil
	}
	return runtime.ContainerStatus{}, runtime.ErrNotFound
}

func (f *fakeRuntime) ListContainers(_ context.Context, flt runtime.ContainerFilter) ([]runtime.ContainerStatus, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []runtime.ContainerStatus
	for _, c := range f.containers {
		s := c.status
		if (flt.PodUID == "" || s.Pod.UID == flt.PodUID) && (flt.SandboxID == "" || s.SandboxID == flt.SandboxID) &&
			(flt.State == "" || s.State == flt.State) && hasLabels(s.Labels, flt.Labels) {
			out = append(out, s)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out, nil
}

// UpdateContainerResources records "Update <name>" and the new limits in
// the container's config.
func (f *fakeRuntime) UpdateContainerResources(_ context.Context, id string, res runtime.Resources) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	c := f.containers[id]
	if c == nil {
		return fmt.Errorf("container %s: %w", id, runtime.ErrNotFound)
	}
	if f.updateErr != nil {
		return f.updateErr
	}
	c.cfg.Resources = res
	f.calls = append(f.calls, "Update "+c.cfg.Name)
	return nil
}

func (f *fakeRuntime) ContainerStats(context.Context, string) (runtime.ContainerStats, error) {
	return runtime.ContainerStats{}, nil
}

// Exec records "Exec <name> <cmd>" and returns onExec's exit code (0
// without it).
func (f *fakeRuntime) Exec(_ context.Context, id string, req runtime.ExecRequest) (int, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	c := f.containers[id]
	if c == nil {
		return 0, runtime.ErrNotFound
	}
	if c.status.State != runtime.ContainerRunning {
		return 0, runtime.ErrNotRunning
	}
	f.call("Exec %s %s", c.cfg.Name, strings.Join(req.Cmd, " "))
	if f.onExec == nil {
		return 0, nil
	}
	code, out := f.onExec(c.cfg.Name, req.Cmd)
	if req.Stdout != nil {
		_, _ = io.WriteString(req.Stdout, out)
	}
	return code, nil
}

func (f *fakeRuntime) EnsureImage(_ context.Context, ref string, auth *runtime.RegistryAuth) (runtime.ImageStatus, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.pulls++
	f.pullAuths = append(f.pullAuths, auth)
	if f.pullErr != nil {
		return runtime.ImageStatus{}, fmt.Errorf("pull %s: %w: %w", ref, runtime.ErrImagePull, f.pullErr)
	}
	if f.wantAuth != nil && (auth == nil || *auth != *f.wantAuth) {
		return runtime.ImageStatus{}, fmt.Errorf("pull %s: %w: 401 Unauthorized", ref, runtime.ErrImagePull)
	}
	f.images[ref] = true
	return runtime.ImageStatus{Ref: ref}, nil
}

func (f *fakeRuntime) ImportImage(context.Context, io.Reader) ([]runtime.ImageStatus, error) {
	return nil, nil
}

func (f *fakeRuntime) ImageStatus(_ context.Context, ref string) (runtime.ImageStatus, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if strings.Contains(ref, " ") {
		return runtime.ImageStatus{}, runtime.ErrInvalid
	}
	if f.images[ref] {
		return runtime.ImageStatus{Ref: ref, ID: "sha256:id-of-" + ref, User: f.imageUsers[ref]}, nil
	}
	return runtime.ImageStatus{}, runtime.ErrImageNotPresent
}

func (f *fakeRuntime) ListImages(context.Context) ([]runtime.ImageStatus, error) { return nil, nil }
func (f *fakeRuntime) RemoveImage(context.Context, string) error                 { return nil }

func (f *fakeRuntime) running() []runtime.ContainerStatus {
	cs, _ := f.ListContainers(context.Background(), runtime.ContainerFilter{State: runtime.ContainerRunning})
	return cs
}

// fakeNetwork hands out addresses and remembers what it set up.
type fakeNetwork struct {
	mu       sync.Mutex
	readyErr error
	addErr   error
	netns    map[string]bool
	up       map[string]netip.Addr // sandbox ID -> IP
	next     int
	dels     []string
}

func newFakeNetwork() *fakeNetwork {
	return &fakeNetwork{netns: map[string]bool{}, up: map[string]netip.Addr{}}
}

func (n *fakeNetwork) Ready() error { n.mu.Lock(); defer n.mu.Unlock(); return n.readyErr }

func (n *fakeNetwork) CreateNetNS(name string) (string, error) {
	n.mu.Lock()
	defer n.mu.Unlock()
	p := "/fake/netns/" + name
	n.netns[p] = true
	return p, nil
}

func (n *fakeNetwork) DeleteNetNS(path string) error {
	n.mu.Lock()
	defer n.mu.Unlock()
	delete(n.netns, path)
	return nil
}

func (n *fakeNetwork) NetNSExists(path string) bool {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.netns[path]
}

func (n *fakeNetwork) SetUpPod(_ context.Context, p network.PodNetwork) (netip.Addr, error) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.addErr != nil {
		return netip.Addr{}, n.addErr
	}
	n.next++
	ip := netip.AddrFrom4([4]byte{10, 244, 1, byte(1 + n.next)})
	n.up[p.ID] = ip
	return ip, nil
}

func (n *fakeNetwork) TearDownPod(_ context.Context, p network.PodNetwork) error {
	n.mu.Lock()
	defer n.mu.Unlock()
	delete(n.up, p.ID)
	n.dels = append(n.dels, p.ID)
	return nil
}

func (n *fakeNetwork) PodIP(p network.PodNetwork) (netip.Addr, bool) {
	n.mu.Lock()
	defer n.mu.Unlock()
	ip, ok := n.up[p.ID]
	return ip, ok
}

// fakeProber returns results the test sets.
type fakeProber struct {
	mu      sync.Mutex
	results map[string]prober.Result // name/kind
	targets map[string][]prober.Target
}

func newFakeProber() *fakeProber {
	return &fakeProber{results: map[string]prober.Result{}, targets: map[string][]prober.Target{}}
}

func (p *fakeProber) UpdatePod(pod *v1.Pod, _ string, t []prober.Target) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.targets[pod.GetMetadata().GetUid()] = t
}
func (p *fakeProber) RemovePod(uid string) { p.mu.Lock(); defer p.mu.Unlock(); delete(p.targets, uid) }
func (p *fakeProber) Result(_, c string, k prober.Kind) prober.Result {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.results[c+"/"+string(k)]
}
func (p *fakeProber) set(c string, k prober.Kind, r prober.Result) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.results[c+"/"+string(k)] = r
}

// fakeRecorder keeps events as "Type Reason: message".
type fakeRecorder struct {
	mu     sync.Mutex
	events []string
}

func (r *fakeRecorder) Eventf(_ v1.Object, typ, reason, format string, args ...any) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.events = append(r.events, typ+" "+reason+": "+fmt.Sprintf(format, args...))
}

func (r *fakeRecorder) has(reason string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, e := range r.events {
		if strings.Contains(e, " "+reason+":") {
			return true
		}
	}
	return false
}

// fakeAPI stores pods by namespace/name.
type fakeAPI struct {
	mu      sync.Mutex
	pods    map[string]*v1.Pod
	deletes []string
}

func (a *fakeAPI) Get(_ context.Context, ns, name string) (*v1.Pod, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if p := a.pods[ns+"/"+name]; p != nil {
		return proto.Clone(p).(*v1.Pod), nil
	}
	return nil, apierrors.NotFound("pods", name)
}

func (a *fakeAPI) UpdateStatus(_ context.Context, pod *v1.Pod) (*v1.Pod, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	m := pod.GetMetadata()
	p := a.pods[m.Namespace+"/"+m.Name]
	if p == nil {
		return nil, apierrors.NotFound("pods", m.Name)
	}
	if m.ResourceVersion != 0 && m.ResourceVersion != p.Metadata.ResourceVersion {
		return nil, apierrors.Conflict("pods", m.Name)
	}
	p.Status = proto.Clone(pod.Status).(*v1.PodStatus)
	p.Metadata.ResourceVersion++
	return proto.Clone(p).(*v1.Pod), nil
}

func (a *fakeAPI) Delete(_ context.Context, ns, name string, _ client.DeleteOptions) (*v1.Pod, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	p := a.pods[ns+"/"+name]
	if p == nil {
		return nil, apierrors.NotFound("pods", name)
	}
	delete(a.pods, ns+"/"+name)
	a.deletes = append(a.deletes, ns+"/"+name)
	return p, nil
}

// fakeSources serves ConfigMaps and Secrets by namespace/name, and
// Services.
type fakeSources struct {
	configMaps map[string]*v1.ConfigMap
	secrets    map[string]*v1.Secret
	services   []*v1.Service
	// servicesErr is returned by Services (not read yet).
	servicesErr error
	// onRead, if set, runs at each ConfigMap and Secret read ("configmap
	// NS/NAME", "secret NS/NAME") with the read's context; an error
	// it returns is the read's.
	onRead func(ctx context.Context, what string) error
}

func (s *fakeSources) Services() ([]*v1.Service, error) { return s.services, s.servicesErr }

func (s *fakeSources) ConfigMap(ctx context.Context, ns, name string) (*v1.ConfigMap, error) {
	if s.onRead != nil {
		if err := s.onRead(ctx, "configmap "+ns+"/"+name); err != nil {
			return nil, err
		}
	}
	if c := s.configMaps[ns+"/"+name]; c != nil {
		return c, nil
	}
	return nil, apierrors.NotFound("configmaps", name)
}

func (s *fakeSources) Secret(ctx context.Context, ns, name string) (*v1.Secret, error) {
	if s.onRead != nil {
		if err := s.onRead(ctx, "secret "+ns+"/"+name); err != nil {
			return nil, err
		}
	}
	if c := s.secrets[ns+"/"+name]; c != nil {
		return c, nil
	}
	return nil, apierrors.NotFound("secrets", name)
}
