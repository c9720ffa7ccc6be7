package network

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/tugboat/tugboat/internal/netns"
)

// errNoPodCIDR: the network Manager is made once the pod CIDR is known.
var errNoPodCIDR = fmt.Errorf("waiting for the node's pod CIDR (Node.spec.podCIDR from the controller-manager's node IPAM controller, or --pod-cidr): %w", ErrNotReady)

// Gate is the pod network as the pod workers (pod.Network) and the node
// status see it: not ready until the pod CIDR is known (or the operator
// supplied a CNI config), then a Manager, whose config, plugins and
// masquerade rule are checked every interval (running every plugin once)
// and the verdict cached, so a pod start never waits for it.
//
// Loop: the kubelet calls Init once it knows the pod CIDR, then Run until
// its context ends. Until Init, Ready and Status say why the network is
// not ready (wrapping ErrNotReady) and the pod calls fail the same way.
type Gate struct {
	cfg      Config
	reg      prometheus.Registerer
	log      *slog.Logger
	interval time.Duration

	// onChange (set before Run) is called when the verdict changes.
	onChange func()

	mu     sync.RWMutex
	mgr    *Manager
	status error
}

// NewGate makes a Gate for cfg (its PodCIDR is set by Init), checked
// every interval.
func NewGate(cfg Config, reg prometheus.Registerer, log *slog.Logger, interval time.Duration) *Gate {
	return &Gate{cfg: cfg, reg: reg, log: log, interval: interval, status: errNoPodCIDR}
}

// OnChange makes fn be called whenever the verdict changes (the node's
// Ready condition follows it at once). Call it before Run.
func (g *Gate) OnChange(fn func()) { g.onChange = fn }

// OperatorConfig reports whether the CNI config folder holds a config the
// kubelet did not write (which needs no pod CIDR from the kubelet).
func (g *Gate) OperatorConfig() bool {
	entries, err := os.ReadDir(g.cfg.ConfDir)
	if err != nil {
		return false
	}
	for _, e := range entries {
		ext := filepath.Ext(e.Name())
		if !e.IsDir() && e.Name() != DefaultConfFile && (ext == ".conflist" || ext == ".conf" || ext == ".json") {
			return true
		}
	}
	return false
}

// Init makes the network Manager for podCIDR (may be empty with an
// operator's config) and checks it once.
func (g *Gate) Init(ctx context.Context, podCIDR string) error {
	cfg := g.cfg
	cfg.PodCIDR = podCIDR
	mgr, err := New(cfg, g.log, g.reg)
	if err != nil {
		return err
	}
	g.mu.Lock()
	g.mgr = mgr
	g.mu.Unlock()
	g.check(ctx)
	return nil
}

// Run re-checks the network every interval until ctx ends.
func (g *Gate) Run(ctx context.Context) error {
	t := time.NewTicker(g.interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
		g.check(ctx)
	}
}

// check writes the default config if it is missing (or the CIDR changed)
// and the operator has none, asks the plugins, and keeps the node's
// masquerade rule for the pod CIDR.
func (g *Gate) check(ctx context.Context) {
	g.mu.RLock()
	mgr := g.mgr
	prev := g.status
	g.mu.RUnlock()
	if mgr == nil {
		return
	}
	var err error
	if _, _, err = mgr.EnsureConfig(); err == nil {
		err = mgr.Status(ctx)
	}
	if err == nil {
		if merr := mgr.EnsureMasquerade(); merr != nil {
			err = fmt.Errorf("pod egress masquerading: %v: %w", merr, ErrNotReady)
		}
	}
	if ctx.Err() != nil {
		return
	}
	g.mu.Lock()
	g.status = err
	g.mu.Unlock()
	changed := true
	switch {
	case err != nil && (prev == nil || prev.Error() != err.Error()):
		g.log.Warn("pod network not ready", "err", err)
	case err == nil && prev != nil:
		g.log.Info("pod network ready")
	default:
		changed = false
	}
	if changed && g.onChange != nil {
		g.onChange()
	}
}

func (g *Gate) manager() (*Manager, error) {
	g.mu.RLock()
	defer g.mu.RUnlock()
	if g.mgr == nil {
		return nil, errNoPodCIDR
	}
	return g.mgr, nil
}

// Ready is nil when new pod networks can be set up, or why not (wrapping
// ErrNotReady): the cached verdict (pod.Network).
func (g *Gate) Ready() error {
	g.mu.RLock()
	defer g.mu.RUnlock()
	return g.status
}

// Status is Ready for the node status (NetworkPluginNotReady).
func (g *Gate) Status(context.Context) error {
	err := g.Ready()
	if err == nil {
		return nil
	}
	// The message goes into the Ready condition: drop the sentinel's text.
	return errors.New(strings.TrimSuffix(err.Error(), ": "+ErrNotReady.Error()))
}

func (g *Gate) CreateNetNS(name string) (string, error) {
	mgr, err := g.manager()
	if err != nil {
		return "", err
	}
	return mgr.CreateNetNS(name)
}

func (g *Gate) DeleteNetNS(path string) error { return netns.Remove(path) }

func (g *Gate) NetNSExists(path string) bool { return netns.IsPinned(path) }

func (g *Gate) SetUpPod(ctx context.Context, p PodNetwork) (netip.Addr, error) {
	mgr, err := g.manager()
	if err != nil {
		return netip.Addr{}, err
	}
	return mgr.SetUpPod(ctx, p)
}

func (g *Gate) TearDownPod(ctx context.Context, p PodNetwork) error {
	mgr, err := g.manager()
	if err != nil {
		return err
	}
	return mgr.TearDownPod(ctx, p)
}

func (g *Gate) PodIP(p PodNetwork) (netip.Addr, bool) {
	mgr, err := g.manager()
	if err != nil {
		return netip.Addr{}, false
	}
	return mgr.PodIP(p)
}
