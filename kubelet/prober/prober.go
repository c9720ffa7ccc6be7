// Package prober runs the liveness, readiness and startup probes of the
// containers on a node, with Kubernetes' semantics and timing fields.
//
// Loop: the pod workers tell the Manager which containers of a pod run
// now (UpdatePod, idempotent). For each probe of each running container
// the Manager keeps one goroutine that waits initialDelaySeconds after the
// container started, then probes every periodSeconds with timeoutSeconds,
// and turns successThreshold consecutive successes into Success and
// failureThreshold consecutive failures into Failure. Results are kept per
// container ID, so a restarted container starts over; when a result
// changes the Manager calls Config.OnChange with the pod's UID so its
// worker re-syncs. Each failed probe is an Unhealthy Event on the pod.
//
// Contract, as in Kubernetes: liveness starts as Success, readiness and
// startup as Unknown; while a startup probe has not succeeded, liveness and
// readiness are not run; a startup probe stops once it has succeeded.
// The Manager never kills containers: acting on a liveness or startup
// Failure is the pod worker's job.
package prober

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	v1 "github.com/tugboat/tugboat/api/v1"
	"github.com/tugboat/tugboat/kubelet/runtime"
)

// Kind is a probe's kind.
type Kind string

const (
	Liveness  Kind = "Liveness"
	Readiness Kind = "Readiness"
	Startup   Kind = "Startup"
)

// State is a probe's current verdict.
type State int

const (
	Unknown State = iota
	Success
	Failure
)

func (s State) String() string {
	switch s {
	case Success:
		return "success"
	case Failure:
		return "failure"
	}
	return "unknown"
}

// Result is a probe's verdict for one container.
type Result struct {
	State State
	// ContainerID is the container the verdict is about.
	ContainerID string
	// Message says why the last probe failed.
	Message string
}

// Target is a running container to probe.
type Target struct {
	Name        string
	ContainerID string
	// StartedAt is when the container started; initialDelaySeconds counts
	// from it (so a kubelet that restarts does not wait again).
	StartedAt time.Time
}

// Execer runs exec probes; runtime.Runtime satisfies it.
type Execer interface {
	Exec(ctx context.Context, containerID string, req runtime.ExecRequest) (int, error)
}

// Recorder records Events; record.Recorder satisfies it.
type Recorder interface {
	Eventf(obj v1.Object, typ, reason, format string, args ...any)
}

// Config wires a Manager.
type Config struct {
	Exec     Execer
	Recorder Recorder
	// OnChange is called (from a probe goroutine; it must not block) when
	// a container's result changes.
	OnChange func(podUID string)
	Logger   *slog.Logger
	// NetworkProbe, if set, runs the httpGet, tcpSocket and grpc probes
	// in place of the network: a simulated node's pods
	// (kubelet/runtime/hollow.NetworkProbe) have no address packets may
	// be sent to. Nil probes over the network.
	NetworkProbe func(ctx context.Context, podIP string, c *v1.Container, p *v1.Probe) (ok bool, msg string)
	// Registry, if set, gets the probe counters.
	Registry prometheus.Registerer
}

// Manager runs every probe of the node.
type Manager struct {
	cfg     Config
	log     *slog.Logger
	results *prometheus.CounterVec

	mu      sync.Mutex
	ctx     context.Context
	pods    map[string]*podProbes // by pod UID
	stopped bool
}

type podProbes struct {
	pod     *v1.Pod
	podIP   string
	workers map[workerKey]*worker
}

type workerKey struct {
	container string
	kind      Kind
}

// New makes a Manager; call Run.
func New(cfg Config) *Manager {
	log := cfg.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	m := &Manager{
		cfg:  cfg,
		log:  log,
		pods: map[string]*podProbes{},
		results: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "tugboat_kubelet_probe_results_total",
			Help: "Probe executions by kind and result.",
		}, []string{"kind", "result"}),
	}
	if cfg.Registry != nil {
		cfg.Registry.MustRegister(m.results)
	}
	return m
}

// Run keeps the probe goroutines' context until ctx ends, then stops them.
func (m *Manager) Run(ctx context.Context) error {
	m.mu.Lock()
	m.ctx = ctx
	m.mu.Unlock()
	<-ctx.Done()
	m.mu.Lock()
	m.stopped = true
	for uid, p := range m.pods {
		for _, w := range p.workers {
			w.stop()
		}
		delete(m.pods, uid)
	}
	m.mu.Unlock()
	return nil
}

// UpdatePod sets the running containers of pod to probe. Containers not
// in targets stop being probed; a target whose container ID changed starts
// over. Probes start only once Run has been called.
func (m *Manager) UpdatePod(pod *v1.Pod, podIP string, targets []Target) {
	uid := pod.GetMetadata().GetUid()
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.stopped {
		return
	}
	p := m.pods[uid]
	if p == nil {
		p = &podProbes{workers: map[workerKey]*worker{}}
		m.pods[uid] = p
	}
	p.pod, p.podIP = pod, podIP
	want := map[workerKey]bool{}
	for _, t := range targets {
		c := findContainer(pod, t.Name)
		if c == nil {
			continue
		}
		for kind, pr := range map[Kind]*v1.Probe{Liveness: c.LivenessProbe, Readiness: c.ReadinessProbe, Startup: c.StartupProbe} {
			if pr == nil {
				continue
			}
			k := workerKey{t.Name, kind}
			want[k] = true
			if w := p.workers[k]; w != nil {
				if w.target.ContainerID == t.ContainerID {
					w.setPod(pod, podIP)
					continue
				}
				w.stop()
			}
			if m.ctx == nil {
				continue
			}
			w := newWorker(m, pod, podIP, c, pr, kind, t)
			p.workers[k] = w
			go w.run(m.ctx)
		}
	}
	for k, w := range p.workers {
		if !want[k] {
			w.stop()
			delete(p.workers, k)
		}
	}
}

// RemovePod stops every probe of the pod.
func (m *Manager) RemovePod(uid string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if p := m.pods[uid]; p != nil {
		for _, w := range p.workers {
			w.stop()
		}
		delete(m.pods, uid)
	}
}

// Result returns the verdict of a container's probe of that kind: its
// initial value (Success for liveness, Unknown otherwise) until the probe
// has decided, or Unknown for a container that has no such probe.
func (m *Manager) Result(podUID, container string, kind Kind) Result {
	m.mu.Lock()
	p := m.pods[podUID]
	var w *worker
	if p != nil {
		w = p.workers[workerKey{container, kind}]
	}
	m.mu.Unlock()
	if w == nil {
		return Result{}
	}
	return w.result()
}

// startupDone reports whether container's startup probe (if any) has
// succeeded; liveness and readiness wait for it.
func (m *Manager) startupDone(podUID, container, containerID string) bool {
	m.mu.Lock()
	p := m.pods[podUID]
	var w *worker
	if p != nil {
		w = p.workers[workerKey{container, Startup}]
	}
	m.mu.Unlock()
	if w == nil {
		return true
	}
	r := w.result()
	return r.State == Success && r.ContainerID == containerID
}

// findContainer is the app container or init container (a sidecar may
// have probes) named name.
func findContainer(pod *v1.Pod, name string) *v1.Container {
	for _, c := range append(append([]*v1.Container{}, pod.GetSpec().GetInitContainers()...), pod.GetSpec().GetContainers()...) {
		if c.Name == name {
			return c
		}
	}
	return nil
}
