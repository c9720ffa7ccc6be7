package kubelet

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"sync"

	"github.com/tugboat/tugboat/kubelet/network"
	"github.com/tugboat/tugboat/kubelet/runtime/hollow"
)

// hollowNetwork is the pod network of a hollow node (--runtime hollow):
// there is none to set up. The runtime hands out the pods' addresses from
// the node's pod CIDR, which Init gives it (as a CRI runtime's CNI
// plugins would), so there is no namespace, no conflist, no plugin and no
// masquerade rule; the network is ready once the pod CIDR is known.
type hollowNetwork struct {
	rt *hollow.Runtime

	mu       sync.Mutex
	onChange func()
}

// errNoPodCIDR: the pod network waits for the node's pod CIDR.
var errNoPodCIDR = fmt.Errorf("the node has no pod CIDR yet: %w", network.ErrNotReady)

func (n *hollowNetwork) Ready() error {
	if !n.rt.PodCIDR().IsValid() {
		return errNoPodCIDR
	}
	return nil
}

// Status is Ready for the node status (NetworkPluginNotReady).
func (n *hollowNetwork) Status(context.Context) error {
	if err := n.Ready(); err != nil {
		return errors.New("the node has no pod CIDR yet")
	}
	return nil
}

func (n *hollowNetwork) OnChange(fn func()) {
	n.mu.Lock()
	n.onChange = fn
	n.mu.Unlock()
}

// OperatorConfig: a hollow node has no CNI config of anyone's.
func (n *hollowNetwork) OperatorConfig() bool { return false }

// Init gives the runtime the pod CIDR.
func (n *hollowNetwork) Init(_ context.Context, podCIDR string) error {
	p, err := netip.ParsePrefix(podCIDR)
	if err != nil {
		return fmt.Errorf("pod CIDR %q: %w", podCIDR, err)
	}
	if err := n.rt.SetPodCIDR(p); err != nil {
		return err
	}
	n.mu.Lock()
	fn := n.onChange
	n.mu.Unlock()
	if fn != nil {
		fn()
	}
	return nil
}

// Run has nothing to watch.
func (n *hollowNetwork) Run(context.Context) error { return nil }

func (n *hollowNetwork) CreateNetNS(string) (string, error) { return "", nil }
func (n *hollowNetwork) DeleteNetNS(string) error           { return nil }
func (n *hollowNetwork) NetNSExists(path string) bool       { return path == "" }

// SetUpPod returns the address the runtime gave the sandbox.
func (n *hollowNetwork) SetUpPod(ctx context.Context, p network.PodNetwork) (netip.Addr, error) {
	st, err := n.rt.PodSandboxStatus(ctx, p.ID)
	if err != nil {
		return netip.Addr{}, fmt.Errorf("sandbox status: %w", err)
	}
	return netip.ParseAddr(st.IP)
}

// TearDownPod has nothing to do: StopPodSandbox released the address.
func (n *hollowNetwork) TearDownPod(context.Context, network.PodNetwork) error { return nil }

func (n *hollowNetwork) PodIP(p network.PodNetwork) (netip.Addr, bool) {
	ip, err := n.SetUpPod(context.Background(), p)
	return ip, err == nil
}
