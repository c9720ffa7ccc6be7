package kubelet

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

	"github.com/tugboat/tugboat/kubelet/network"

	"github.com/tugboat/tugboat/internal/netns"
)

// errNotInitialised: the pod network manager is made once the pod CIDR is
// known.
var errNotInitialised = fmt.Errorf("waiting for the node's pod CIDR (Node.spec.podCIDR from the controller-manager's node IPAM controller, or --pod-cidr): %w", network.ErrNotReady)

// netGate is the pod network as the pod workers and the node status see
// it: not ready until the pod CIDR is known (or the operator supplied a CNI
// config), then the network.Manager, whose Status is checked periodically
// (running every plugin once) and cached, so a pod start never waits for
// it.
type netGate struct {
	cfg      network.Config
	reg      prometheus.Registerer
	log      *slog.Logger
	interval time.Duration

	// onChange (if set before run) is called when the status changes.
	onChange func()

	mu     sync.RWMutex
	mgr    *network.Manager
	status error
}

func newNetGate(cfg network.Config, reg prometheus.Registerer, log *slog.Logger, interval time.Duration) *netGate {
	return &netGate{cfg: cfg, reg: reg, log: log, interval: interval, status: errNotInitialised}
}

// operatorConfig reports whether the CNI config folder holds a config the
// kubelet did not write (which needs no pod CIDR from the kubelet).
func (g *netGate) operatorConfig() bool {
	entries, err := os.ReadDir(g.cfg.ConfDir)
	if err != nil {
		return false
	}
	for _, e := range entries {
		ext := filepath.Ext(e.Name())
		if !e.IsDir() && e.Name() != network.DefaultConfFile && (ext == ".conflist" || ext == ".conf" || ext == ".json") {
			return true
		}
	}
	return false
}

// init makes the network manager for podCIDR (may be empty with an
// operator's config) and checks it once.
func (g *netGate) init(ctx context.Context, podCIDR string) error {
	cfg := g.cfg
	cfg.PodCIDR = podCIDR
	mgr, err := network.New(cfg, g.log, g.reg)
	if err != nil {
		return err
	}
	g.mu.Lock()
	g.mgr = mgr
	g.mu.Unlock()
	g.check(ctx)
	return nil
}

// run re-checks the network every interval until ctx ends.
func (g *netGate) run(ctx context.Context) {
	t := time.NewTicker(g.interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		g.check(ctx)
	}
}

// check writes the default config if it is missing (or the CIDR changed)
// and the operator has none, asks the plugins, and keeps the node's
// masquerade rule for the pod CIDR.
func (g *netGate) check(ctx context.Context) {
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
			err = fmt.Errorf("pod egress masquerading: %v: %w", merr, network.ErrNotReady)
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

func (g *netGate) manager() (*network.Manager, error) {
	g.mu.RLock()
	defer g.mu.RUnlock()
	if g.mgr == nil {
		return nil, errNotInitialised
	}
	return g.mgr, nil
}

// Ready implements pod.Network.
func (g *netGate) Ready() error {
	g.mu.RLock()
	defer g.mu.RUnlock()
	return g.status
}

// Status is Ready for the node status (NetworkPluginNotReady).
func (g *netGate) Status(context.Context) error {
	err := g.Ready()
	if err == nil {
		return nil
	}
	// The message goes into the Ready condition: drop the sentinel's text.
	return errors.New(strings.TrimSuffix(err.Error(), ": "+network.ErrNotReady.Error()))
}

func (g *netGate) CreateNetNS(name string) (string, error) {
	mgr, err := g.manager()
	if err != nil {
		return "", err
	}
	return mgr.CreateNetNS(name)
}

func (g *netGate) DeleteNetNS(path string) error { return netns.Remove(path) }

func (g *netGate) NetNSExists(path string) bool { return netns.IsPinned(path) }

func (g *netGate) SetUpPod(ctx context.Context, p network.PodNetwork) (netip.Addr, error) {
	mgr, err := g.manager()
	if err != nil {
		return netip.Addr{}, err
	}
	return mgr.SetUpPod(ctx, p)
}

func (g *netGate) TearDownPod(ctx context.Context, p network.PodNetwork) error {
	mgr, err := g.manager()
	if err != nil {
		return err
	}
	return mgr.TearDownPod(ctx, p)
}

func (g *netGate) PodIP(p network.PodNetwork) (netip.Addr, bool) {
	mgr, err := g.manager()
	if err != nil {
		return netip.Addr{}, false
	}
	return mgr.PodIP(p)
}
