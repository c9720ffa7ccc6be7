package pod

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"time"

	v1 "github.com/tugboat/tugboat/api/v1"
	"github.com/tugboat/tugboat/kubelet/runtime"
)

// Deps are the Manager's collaborators.
type Deps struct {
	Runtime  runtime.Runtime
	Network  Network
	Prober   Prober
	Recorder Recorder
	API      PodAPI
	Sources  Sources
	// Now is the clock; default time.Now (tests drive back-offs with it).
	Now func() time.Time
}

// Manager runs one worker per pod bound to this node, notices containers
// that change state (relist), and removes what pods no longer on the node
// left behind (housekeeping).
type Manager struct {
	cfg            Config
	rt             runtime.Runtime
	net            Network
	prober         Prober
	rec            Recorder
	src            Sources
	images         *imagePuller
	crashBackoff   *backoff
	sandboxBackoff *backoff
	status         *statusManager
	metrics        *metrics
	now            func() time.Time
	log            *slog.Logger

	mu            sync.Mutex
	ctx           context.Context
	workers       map[string]*worker
	pending       []podEvent
	sandboxErrors map[string]string
	wg            sync.WaitGroup
	userns        *usernsAllocator

	// known is the state of each container as last seen by its worker or
	// the relist; the relist wakes a worker only for changes it has not
	// seen (an exit), not for the containers it just started.
	known map[string]containerSeen
	// allocs are the resources admitted for each pod on the node, by UID
	// (resize.go).
	allocs map[string]allocEntry
}

type podEvent struct {
	pod     *v1.Pod
	deleted bool
}

type containerSeen struct {
	uid   string
	state runtime.ContainerState
}

// NewManager checks cfg and wires a Manager; call Run.
func NewManager(cfg Config, d Deps) (*Manager, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	cfg.setDefaults()
	if d.Runtime == nil || d.Network == nil || d.Prober == nil || d.Recorder == nil || d.API == nil || d.Sources == nil {
		return nil, errors.New("pod manager: every dependency (runtime, network, prober, recorder, API, sources) is required")
	}
	now := d.Now
	if now == nil {
		now = time.Now
	}
	met, err := newMetrics(cfg.Registry)
	if err != nil {
		return nil, fmt.Errorf("pod metrics: %w", err)
	}
	usernsFirst, usernsBlocks, err := systemSubIDFiles.usernsRange(cfg.MaxPods)
	if err != nil {
		return nil, fmt.Errorf("user namespaces: %w", err)
	}
	m := &Manager{
		cfg: cfg, rt: d.Runtime, net: d.Network, prober: d.Prober, rec: d.Recorder, src: d.Sources,
		crashBackoff:   newBackoff(cfg.CrashBackoffInitial, cfg.CrashBackoffMax, now),
		sandboxBackoff: newBackoff(min(time.Second, cfg.CrashBackoffInitial), min(30*time.Second, cfg.CrashBackoffMax), now),
		status:         newStatusManager(d.API, cfg.Logger, cfg.StatusWriters, 2*cfg.MaxPods), // room for pods going and their replacements,
		metrics:        met,
		now:            now,
		log:            cfg.Logger,
		workers:        map[string]*worker{},
		allocs:         map[string]allocEntry{},
		sandboxErrors:  map[string]string{},
		userns:         &usernsAllocator{podsDir: cfg.PodsDir(), first: usernsFirst, blocks: usernsBlocks},
		known:          map[string]containerSeen{},
	}
	m.images = newImagePuller(cfg, d.Runtime, d.Sources, d.Recorder, met, now)
	return m, nil
}

// UpdatePod tells the Manager about a pod bound to this node (added or
// changed). It never blocks: informer handlers call it.
func (m *Manager) UpdatePod(pod *v1.Pod) { m.dispatch(podEvent{pod: pod}) }

// DeletePod tells the Manager the API no longer has pod.
func (m *Manager) DeletePod(pod *v1.Pod) { m.dispatch(podEvent{pod: pod, deleted: true}) }

func (m *Manager) dispatch(ev podEvent) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.ctx == nil {
		m.pending = append(m.pending, ev)
		return
	}
	m.dispatchLocked(ev)
}

func (m *Manager) dispatchLocked(ev podEvent) {
	if m.ctx.Err() != nil {
		return
	}
	uid := ev.pod.GetMetadata().GetUid()
	w := m.workers[uid]
	switch {
	case w == nil && ev.deleted:
		// Nothing runs for it here; housekeeping removes any leftovers.
	case w == nil:
		w = newWorker(m, ev.pod)
		m.workers[uid] = w
		m.metrics.workers.Set(float64(len(m.workers)))
		m.wg.Add(1)
		go func() {
			defer m.wg.Done()
			w.run(m.ctx)
			m.workerDone(w)
		}()
	case ev.deleted:
		w.markDeleted(ev.pod)
	default:
		w.update(ev.pod)
	}
}

func (m *Manager) workerDone(w *worker) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.workers[w.uid] == w {
		delete(m.workers, w.uid)
		m.metrics.workers.Set(float64(len(m.workers)))
	}
}

// Wake makes the pod's worker sync now (a probe result changed).
func (m *Manager) Wake(uid string) {
	m.mu.Lock()
	w := m.workers[uid]
	m.mu.Unlock()
	if w != nil {
		w.wake()
	}
}

// WakeAll makes every worker sync now (an image was imported).
func (m *Manager) WakeAll() {
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, w := range m.workers {
		w.wake()
	}
}

func (m *Manager) active(uid string) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	_, ok := m.workers[uid]
	return ok
}

// forget drops the per-pod state of the shared parts.
func (m *Manager) forget(uid string) {
	m.crashBackoff.forgetPrefix(uid + "/")
	m.sandboxBackoff.forgetPrefix(uid + "/")
	m.images.forget(uid)
	m.mu.Lock()
	delete(m.sandboxErrors, uid)
	delete(m.allocs, uid)
	m.mu.Unlock()
}

// Run starts the workers of the pods handed in so far, then relists and
// does housekeeping until ctx ends; it waits for the workers to stop.
// Call it once the pod informer has synced, so that housekeeping knows
// every pod bound to the node: anything in the runtime for another pod
// UID is removed (a restarted kubelet adopts the rest).
func (m *Manager) Run(ctx context.Context) error {
	m.mu.Lock()
	m.ctx = ctx
	for _, ev := range m.pending {
		m.dispatchLocked(ev)
	}
	m.pending = nil
	m.mu.Unlock()

	statusDone := make(chan struct{})
	go func() {
		m.status.run(ctx)
		close(statusDone)
	}()
	if err := m.housekeeping(ctx); err != nil && ctx.Err() == nil {
		m.log.Warn("housekeeping", "err", err)
	}
	relist := time.NewTicker(m.cfg.RelistInterval)
	defer relist.Stop()
	house := time.NewTicker(m.cfg.HousekeepingInterval)
	defer house.Stop()
	for {
		select {
		case <-ctx.Done():
			m.wg.Wait()
			<-statusDone
			return nil
		case <-relist.C:
			if err := m.relist(ctx); err != nil && ctx.Err() == nil {
				m.log.Debug("relist", "err", err)
			}
		case <-house.C:
			if err := m.housekeeping(ctx); err != nil && ctx.Err() == nil {
				m.log.Warn("housekeeping", "err", err)
			}
		}
	}
}

// relist lists the node's containers and wakes the workers of pods whose
// containers changed state (Kubernetes' PLEG). Listing also makes the
// runtime record exits promptly.
func (m *Manager) relist(ctx context.Context) error {
	cs, err := m.rt.ListContainers(ctx, runtime.ContainerFilter{Labels: map[string]string{LabelNode: m.cfg.NodeName}})
	if err != nil {
		return err
	}
	seen := make(map[string]containerSeen, len(cs))
	changed := map[string]bool{}
	running, pods := 0, map[string]bool{}
	m.mu.Lock()
	for _, c := range cs {
		seen[c.ID] = containerSeen{uid: c.Pod.UID, state: c.State}
		if prev, ok := m.known[c.ID]; !ok || prev.state != c.State {
			changed[c.Pod.UID] = true
		}
		if c.State == runtime.ContainerRunning {
			running++
			pods[c.Pod.UID] = true
		}
	}
	for id, prev := range m.known {
		if _, ok := seen[id]; !ok {
			changed[prev.uid] = true
		}
	}
	m.known = seen
	m.mu.Unlock()
	m.metrics.runningContainers.Set(float64(running))
	m.metrics.runningPods.Set(float64(len(pods)))
	for uid := range changed {
		m.Wake(uid)
	}
	return nil
}

// seen records the containers of pod uid as its worker just saw them.
func (m *Manager) seen(uid string, st *podState) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for id, c := range m.known {
		if c.uid == uid {
			delete(m.known, id)
		}
	}
	for _, c := range st.containers {
		m.known[c.ID] = containerSeen{uid: uid, state: c.State}
	}
}

// housekeeping removes what belongs to no pod this kubelet runs: sandboxes
// (with CNI DEL), containers whose sandbox is gone, pinned network
// namespaces no sandbox names, and pod directories.
func (m *Manager) housekeeping(ctx context.Context) error {
	mine := map[string]string{LabelNode: m.cfg.NodeName}
	sbs, err := m.rt.ListPodSandbox(ctx, runtime.SandboxFilter{Labels: mine})
	if err != nil {
		return err
	}
	var errs []error
	sandboxes := map[string]bool{}
	netns := map[string]bool{}
	hasSandbox := map[string]bool{}
	for _, sb := range sbs {
		sandboxes[sb.ID] = true
		netns[sb.Config.NetNSPath] = true
		uid := sb.Config.Pod.UID
		if m.active(uid) {
			hasSandbox[uid] = true
			continue
		}
		m.log.Info("removing the sandbox of a pod no longer on this node", "pod", sb.Config.Pod.String(), "uid", uid, "sandbox", sb.ID)
		if err := teardownSandbox(ctx, m.rt, m.net, sb); err != nil {
			errs = append(errs, err)
			hasSandbox[uid] = true
			continue
		}
		m.metrics.orphans.Inc()
	}
	cs, err := m.rt.ListContainers(ctx, runtime.ContainerFilter{Labels: mine})
	if err != nil {
		return err
	}
	for _, c := range cs {
		if sandboxes[c.SandboxID] || m.active(c.Pod.UID) {
			continue
		}
		if err := m.rt.RemoveContainer(ctx, c.ID); err != nil {
			errs = append(errs, err)
			continue
		}
		m.metrics.orphans.Inc()
	}
	if entries, err := os.ReadDir(m.cfg.NetNSDir()); err == nil {
		for _, e := range entries {
			p := filepath.Join(m.cfg.NetNSDir(), e.Name())
			if netns[p] || m.active(uidOfNetNS(e.Name())) {
				continue
			}
			if err := m.net.DeleteNetNS(p); err != nil {
				errs = append(errs, err)
				continue
			}
			m.metrics.orphans.Inc()
		}
	}
	if entries, err := os.ReadDir(m.cfg.PodsDir()); err == nil {
		for _, e := range entries {
			uid := e.Name()
			if hasSandbox[uid] || m.active(uid) {
				continue
			}
			if err := removePodDir(m.cfg.PodDir(uid)); err != nil {
				errs = append(errs, err)
				continue
			}
			m.metrics.orphans.Inc()
		}
	}
	return errors.Join(errs...)
}
