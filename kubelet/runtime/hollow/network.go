package hollow

import (
	"context"
	"errors"
	"fmt"
	"net/netip"

	v1 "github.com/tugboat/tugboat/api/v1"
)

// addressPool hands out the addresses of a pod CIDR, round-robin from the
// last one given (as host-local IPAM does, so a released address is not
// reused at once). The zero pool has no range.
type addressPool struct {
	cidr netip.Prefix
	last netip.Addr
	used map[netip.Addr]struct{}
}

var errNoPodCIDR = errors.New("the node has no pod CIDR yet")

func (p *addressPool) setRange(cidr netip.Prefix) {
	p.cidr = cidr
	p.last = cidr.Addr().Next() // the gateway: the first address handed out is the one after
	if p.used == nil {
		p.used = map[netip.Addr]struct{}{}
	}
}

// allocate returns a free address of the range, other than the network,
// first (gateway) and broadcast addresses.
func (p *addressPool) allocate() (netip.Addr, error) {
	if !p.cidr.IsValid() {
		return netip.Addr{}, errNoPodCIDR
	}
	gateway := p.cidr.Addr().Next()
	a := p.last
	for range 1 << (32 - p.cidr.Bits()) {
		a = a.Next()
		if !p.cidr.Contains(a) || isBroadcast(p.cidr, a) {
			a = gateway
			continue
		}
		if _, taken := p.used[a]; !taken {
			p.used[a] = struct{}{}
			p.last = a
			return a, nil
		}
	}
	return netip.Addr{}, fmt.Errorf("no free address in the pod CIDR %s", p.cidr)
}

func isBroadcast(cidr netip.Prefix, a netip.Addr) bool {
	n := a.Next()
	return !n.IsValid() || !cidr.Contains(n)
}

func (p *addressPool) release(a netip.Addr) { delete(p.used, a) }

// NetworkProbe answers a pod's httpGet, tcpSocket and grpc probes as a
// hollow pod does: successfully, without sending a packet (it listens on
// every port). The kubelet's prober calls it in place of the network on a
// hollow node (prober.Config.NetworkProbe).
func NetworkProbe(_ context.Context, podIP string, _ *v1.Container, p *v1.Probe) (bool, string) {
	if podIP == "" {
		return false, "the pod has no IP yet"
	}
	if p.GetHttpGet() == nil && p.GetTcpSocket() == nil && p.GetGrpc() == nil {
		return false, "probe has no network handler (httpGet, tcpSocket or grpc)"
	}
	return true, ""
}
