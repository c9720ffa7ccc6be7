// Package eviction is the kubelet's node-pressure eviction: it watches the
// node's memory and file systems against hard eviction thresholds
// (--eviction-hard, Kubernetes' syntax and defaults:
// memory.available<100Mi,nodefs.available<10%,imagefs.available<15%),
// reports MemoryPressure and DiskPressure for the Node's conditions, and,
// while a threshold is crossed, evicts pods one at a time, best-effort
// pods first.
//
// Loop: every Interval, Run observes the signals (memory.available from
// /proc/meminfo MemAvailable; nodefs.available from statfs of the
// kubelet's root dir, which holds pod directories, emptyDir volumes and
// container logs; imagefs.available from statfs of the runtime's image
// store), records which thresholds are crossed (the pressure the node
// status reports), and if any is, picks one pod (rank: QoS class
// BestEffort, then Burstable, then Guaranteed; then lower priority; then,
// for memory, more memory used above its request — the pod-level request
// where spec.resources sets one; then the newest) and
// has it evicted (Evictor: the pod manager fails it with reason Evicted
// and a Warning Evicted event). One pod per interval, so the next
// observation sees what the eviction freed before another goes.
//
// Each round also enforces the pods' emptyDir sizeLimits first
// (local_storage.go): a pod whose emptyDir uses more than its limit is
// evicted whatever the node's pressure.
package eviction

import (
	"context"
	"errors"
	"log/slog"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	v1 "github.com/tugboat/tugboat/api/v1"
)

// DefaultInterval is how often the signals are observed.
const DefaultInterval = 5 * time.Second

// Evictor evicts one pod by UID with a message; false: it has no such
// live pod (gone, or already finished).
type Evictor interface {
	Evict(uid, message string) bool
}

// Recorder records events (the node's EvictionThresholdMet).
type Recorder interface {
	Eventf(obj v1.Object, typ, reason, format string, args ...any)
}

// Config wires a Manager.
type Config struct {
	// Thresholds are the hard eviction thresholds (ParseThresholds).
	Thresholds []Threshold
	// RootDir is the kubelet's root dir (nodefs); ImageFSDir the runtime's
	// image store (imagefs). A path that does not exist is measured at its
	// nearest existing parent.
	RootDir, ImageFSDir string
	// Interval between observations (DefaultInterval).
	Interval time.Duration
	// Pods lists the pods bound to the node (the kubelet's pod informer).
	Pods func() []*v1.Pod
	// MemoryUsage returns each pod's memory working set by UID (nil: not
	// used for ranking).
	MemoryUsage func(ctx context.Context) map[string]int64
	Evictor     Evictor
	// EmptyDirPath is the host directory of a pod's emptyDir volume (nil:
	// sizeLimits are not enforced).
	EmptyDirPath func(uid, volume string) string
	// LocalStorage returns the running containers' local ephemeral
	// storage use by pod UID and container name (nil: containers'
	// limits.ephemeral-storage are not enforced). Asked only when a pod
	// has such a limit.
	LocalStorage func(ctx context.Context) map[string]map[string]ContainerStorage
	// Recorder and Node, if set, get an EvictionThresholdMet event on the
	// Node when a threshold is first crossed.
	Recorder Recorder
	Node     func() *v1.Node
	Registry prometheus.Registerer
	Logger   *slog.Logger
	// Observe overrides how signals are read (tests); nil: the machine's.
	Observe func() map[string]Observation
}

// Validate names the first bad field.
func (c Config) Validate() error {
	switch {
	case c.Pods == nil || c.Evictor == nil:
		return errors.New("eviction: Pods and Evictor are required")
	case c.Interval < 0:
		return errors.New("eviction: Interval must not be negative")
	}
	return nil
}

// Manager observes the signals and evicts under pressure.
type Manager struct {
	cfg       Config
	log       *slog.Logger
	evictions *prometheus.CounterVec
	pressure  *prometheus.GaugeVec

	mu      sync.Mutex
	crossed []crossed
	asked   map[string]time.Time // pod UID -> when its eviction was asked
}

// New makes a Manager; call Run.
func New(cfg Config) (*Manager, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if cfg.Interval == 0 {
		cfg.Interval = DefaultInterval
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.Observe == nil {
		cfg.Observe = func() map[string]Observation { return observe(cfg.RootDir, cfg.ImageFSDir) }
	}
	m := &Manager{
		cfg: cfg, log: cfg.Logger, asked: map[string]time.Time{},
		evictions: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "tugboat_kubelet_pressure_evictions_total",
			Help: "Pods the eviction manager evicted, by the signal whose threshold was crossed (emptydirfs.limit: an emptyDir over its sizeLimit).",
		}, []string{"signal"}),
		pressure: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "tugboat_kubelet_eviction_threshold_crossed",
			Help: "1 while the signal's hard eviction threshold is crossed.",
		}, []string{"signal"}),
	}
	if cfg.Registry != nil {
		for _, c := range []prometheus.Collector{m.evictions, m.pressure} {
			if err := cfg.Registry.Register(c); err != nil {
				return nil, err
			}
		}
	}
	return m, nil
}

// Run observes and evicts every Interval until ctx ends.
func (m *Manager) Run(ctx context.Context) error {
	t := time.NewTicker(m.cfg.Interval)
	defer t.Stop()
	for {
		m.Synchronize(ctx)
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
	}
}

// Synchronize is one round: observe, record the pressure, evict at most
// one pod.
func (m *Manager) Synchronize(ctx context.Context) {
	cr := evaluate(m.cfg.Thresholds, m.cfg.Observe())
	m.mu.Lock()
	before := signals(m.crossed)
	m.crossed = cr
	m.mu.Unlock()
	for _, t := range m.cfg.Thresholds {
		v := 0.0
		if strings.Contains(signals(cr), t.Signal) {
			v = 1
		}
		m.pressure.WithLabelValues(t.Signal).Set(v)
	}
	if m.localStorageEviction(ctx) {
		return
	}
	if len(cr) == 0 {
		return
	}
	c := cr[0]
	if !strings.Contains(before, c.Signal) {
		m.log.Warn("eviction threshold crossed", "threshold", c.Threshold.String(), "available", c.obs.Available, "path", c.obs.Path)
		if m.cfg.Recorder != nil && m.cfg.Node != nil {
			if n := m.cfg.Node(); n != nil {
				m.cfg.Recorder.Eventf(n, "Warning", "EvictionThresholdMet", "Attempting to reclaim %s", strings.TrimSuffix(c.Signal, ".available"))
			}
		}
	}
	var usage map[string]int64
	if c.Signal == MemoryAvailable && m.cfg.MemoryUsage != nil {
		usage = m.cfg.MemoryUsage(ctx)
	}
	for _, p := range rank(m.cfg.Pods(), usage) {
		if m.evict(p, c.message(), c.Signal) {
			m.log.Warn("evicting a pod", "pod", p.GetMetadata().GetNamespace()+"/"+p.GetMetadata().GetName(),
				"qos", qosClass(p), "threshold", c.Threshold.String())
			return
		}
	}
}

// localStorageEviction evicts every running pod with an emptyDir over its
// sizeLimit, then every other one over its containers' ephemeral-storage
// limits (local_storage_limits.go); true if it evicted any. Pods without
// a sizeLimit cost a look at their volumes, nothing more (no ranking:
// every pod over goes).
func (m *Manager) localStorageEviction(ctx context.Context) bool {
	evicted := false
	var rest []*v1.Pod
	for _, p := range m.cfg.Pods() {
		if ph := p.GetStatus().GetPhase(); ph == "Succeeded" || ph == "Failed" || p.GetMetadata().GetDeletionTimestamp() != nil {
			continue
		}
		vol, size := "", ""
		if m.cfg.EmptyDirPath != nil {
			vol, size = overLimit(p, m.cfg.EmptyDirPath)
		}
		if vol == "" {
			rest = append(rest, p)
		}
		if vol == "" || !m.evict(p, emptyDirMessage(vol, size), SignalEmptyDirFsLimit) {
			continue
		}
		evicted = true
		m.log.Warn("evicting a pod", "pod", p.GetMetadata().GetNamespace()+"/"+p.GetMetadata().GetName(),
			"volume", vol, "sizeLimit", size)
	}
	return m.storageLimitEviction(ctx, rest) || evicted
}

// evict asks the Evictor to evict p, unless it was asked less than two
// minutes ago (still stopping); true if it was asked now.
func (m *Manager) evict(p *v1.Pod, message, signal string) bool {
	uid := p.GetMetadata().GetUid()
	now := time.Now()
	m.mu.Lock()
	at, asked := m.asked[uid]
	m.mu.Unlock()
	if asked && now.Sub(at) < 2*time.Minute {
		return false
	}
	if !m.cfg.Evictor.Evict(uid, message) {
		return false
	}
	m.mu.Lock()
	m.asked[uid] = now
	for k, t := range m.asked {
		if now.Sub(t) > 10*time.Minute {
			delete(m.asked, k)
		}
	}
	m.mu.Unlock()
	m.evictions.WithLabelValues(signal).Inc()
	return true
}

func signals(cr []crossed) string {
	var s []string
	for _, c := range cr {
		s = append(s, c.Signal)
	}
	return strings.Join(s, ",")
}

// MemoryPressure reports whether memory.available is below its threshold,
// and a message for the node condition.
func (m *Manager) MemoryPressure() (bool, string) {
	return m.pressureOf(func(s string) bool { return s == MemoryAvailable })
}

// DiskPressure reports whether nodefs or imagefs is below its threshold.
func (m *Manager) DiskPressure() (bool, string) {
	return m.pressureOf(func(s string) bool { return s == NodeFSAvailable || s == ImageFSAvailable })
}

func (m *Manager) pressureOf(match func(string) bool) (bool, string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	var msgs []string
	for _, c := range m.crossed {
		if match(c.Signal) {
			msg := c.Signal + " " + memString(c.obs.Available) + " < " + memString(c.limit(c.obs.Capacity)) + " (" + c.Threshold.String() + ")"
			if c.obs.Path != "" {
				msg += " on the file system of " + c.obs.Path
			}
			msgs = append(msgs, msg)
		}
	}
	return len(msgs) > 0, strings.Join(msgs, "; ")
}
