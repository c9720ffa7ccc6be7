package nftables

import (
	"net"

	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netns"
	"golang.org/x/sys/unix"
)

// clearStaleUDP deletes the conntrack entries of UDP flows to endpoints
// that left their service port: a UDP client that keeps sending (DNS
// resolvers, syslog) would otherwise keep reaching the removed endpoint
// for as long as the flow stays alive. TCP needs nothing: a new connection
// is balanced afresh. Failures are logged; the flow then times out.
func (d *Datapath) clearStaleUDP(flows []StaleFlow) {
	if len(flows) == 0 {
		return
	}
	h, err := d.netlinkHandle()
	if err != nil {
		d.log.Warn("clearing stale UDP flows", "err", err)
		return
	}
	defer h.Close()
	var filters []netlink.CustomConntrackFilter
	for _, f := range flows {
		ct := &netlink.ConntrackFilter{}
		_ = ct.AddProtocol(unix.IPPROTO_UDP)
		if f.Dst.IsValid() {
			_ = ct.AddIP(netlink.ConntrackOrigDstIP, net.IP(f.Dst.AsSlice()))
		}
		_ = ct.AddPort(netlink.ConntrackOrigDstPort, f.DstPort)
		_ = ct.AddIP(netlink.ConntrackReplySrcIP, net.IP(f.Endpoint.AsSlice()))
		filters = append(filters, ct)
	}
	n, err := h.ConntrackDeleteFilters(netlink.ConntrackTable, unix.AF_INET, filters...)
	if err != nil {
		d.log.Warn("clearing stale UDP flows", "err", err)
	}
	d.metrics.staleFlows.Add(float64(n))
}

func (d *Datapath) netlinkHandle() (*netlink.Handle, error) {
	if d.cfg.NetNS == 0 {
		return netlink.NewHandle(unix.NETLINK_NETFILTER)
	}
	return netlink.NewHandleAt(netns.NsHandle(d.cfg.NetNS), unix.NETLINK_NETFILTER)
}
