package kubelet

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"strings"
	"sync"
	"time"

	"github.com/tugboat/tugboat/internal/netns"
	"github.com/tugboat/tugboat/kubelet/network"
	"github.com/tugboat/tugboat/kubelet/runtime"
	"github.com/tugboat/tugboat/kubelet/runtime/cri"
)

// criNetwork is the pod network under the CRI backend, as the pod workers
// (pod.Network) and the node status see it. The runtime makes each
// sandbox's network namespace and runs the CNI plugins in RunPodSandbox
// (CNI DEL in StopPodSandbox), so there is no namespace to make and no
// plugin to run here: the pod's address is the sandbox status's. The
// kubelet still owns the node's pod network configuration: the Gate
// writes the conflist for the pod CIDR into the runtime's CNI folder,
// checks its plugins and keeps the masquerade rule. The network is ready
// when the Gate is and the runtime reports NetworkReady.
type criNetwork struct {
	*network.Gate
	rt       *cri.Runtime
	interval time.Duration

	mu       sync.Mutex
	ips      map[string]netip.Addr // by sandbox ID
	runtime  error                 // the runtime's NetworkReady, last read
	onChange func()
}

// errRuntimeNetworkUnknown: the runtime's network status was not read yet.
var errRuntimeNetworkUnknown = fmt.Errorf("the container runtime's network status is not known yet: %w", network.ErrNotReady)

func newCRINetwork(g *network.Gate, rt *cri.Runtime, interval time.Duration) *criNetwork {
	n := &criNetwork{Gate: g, rt: rt, interval: interval, ips: map[string]netip.Addr{}, runtime: errRuntimeNetworkUnknown}
	g.OnChange(n.changed)
	return n
}

// OnChange makes fn be called when the Gate's or the runtime's verdict
// changes.
func (n *criNetwork) OnChange(fn func()) { n.onChange = fn }

func (n *criNetwork) changed() {
	if n.onChange != nil {
		n.onChange()
	}
}

// Run re-checks the Gate and the runtime's network status every interval.
func (n *criNetwork) Run(ctx context.Context) error {
	go n.Gate.Run(ctx)
	t := time.NewTicker(n.interval)
	defer t.Stop()
	for {
		n.refresh(ctx)
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
	}
}

// refresh reads the runtime's NetworkReady and reports a change.
func (n *criNetwork) refresh(ctx context.Context) error {
	err := n.rt.NetworkStatus(ctx)
	if ctx.Err() != nil {
		return err
	}
	if err != nil {
		msg := strings.TrimPrefix(err.Error(), cri.ErrNetworkNotReady.Error()+": ")
		err = fmt.Errorf("%s: %w", msg, network.ErrNotReady)
	}
	n.mu.Lock()
	prev := n.runtime
	n.runtime = err
	n.mu.Unlock()
	if (prev == nil) != (err == nil) || prev != nil && prev.Error() != err.Error() {
		n.changed()
	}
	return err
}

// Ready is nil when the Gate (config, plugins, masquerade) and the
// runtime's network are ready, else why not (wrapping network.ErrNotReady).
func (n *criNetwork) Ready() error {
	if err := n.Gate.Ready(); err != nil {
		return err
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.runtime
}

// Status is Ready for the node status (NetworkPluginNotReady), with the
// runtime's status read now.
func (n *criNetwork) Status(ctx context.Context) error {
	if err := n.Gate.Status(ctx); err != nil {
		return err
	}
	if err := n.refresh(ctx); err != nil {
		return errors.New(strings.TrimSuffix(err.Error(), ": "+network.ErrNotReady.Error()))
	}
	return nil
}

// CreateNetNS makes nothing: the runtime makes the namespace in
// RunPodSandbox.
func (n *criNetwork) CreateNetNS(string) (string, error) { return "", nil }

// DeleteNetNS removes a namespace pinned by the native backend; the
// runtime's are its own.
func (n *criNetwork) DeleteNetNS(path string) error {
	if path == "" {
		return nil
	}
	return netns.Remove(path)
}

// NetNSExists: a CRI sandbox's namespace is the runtime's (a sandbox whose
// network is gone is NotReady in its status).
func (n *criNetwork) NetNSExists(path string) bool { return path == "" || netns.IsPinned(path) }

// SetUpPod returns the pod's address as the runtime reports it: the
// runtime ran CNI ADD in RunPodSandbox.
func (n *criNetwork) SetUpPod(ctx context.Context, p network.PodNetwork) (netip.Addr, error) {
	st, err := n.rt.PodSandboxStatus(ctx, p.ID)
	if err != nil {
		return netip.Addr{}, fmt.Errorf("sandbox status: %w", err)
	}
	ip, err := netip.ParseAddr(st.IP)
	if err != nil {
		return netip.Addr{}, fmt.Errorf("the runtime reports no pod address for sandbox %s (%q): %w", p.ID, st.IP, runtime.ErrNetworkSetup)
	}
	n.mu.Lock()
	n.ips[p.ID] = ip
	n.mu.Unlock()
	return ip, nil
}

// TearDownPod forgets the address: the runtime ran CNI DEL in
// StopPodSandbox.
func (n *criNetwork) TearDownPod(_ context.Context, p network.PodNetwork) error {
	n.mu.Lock()
	delete(n.ips, p.ID)
	n.mu.Unlock()
	return nil
}

// PodIP is the sandbox's address: remembered, else from its status (a
// restarted kubelet).
func (n *criNetwork) PodIP(p network.PodNetwork) (netip.Addr, bool) {
	n.mu.Lock()
	ip, ok := n.ips[p.ID]
	n.mu.Unlock()
	if ok {
		return ip, true
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	ip, err := n.SetUpPod(ctx, p)
	return ip, err == nil
}
