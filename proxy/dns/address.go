package dns

import (
	"errors"
	"fmt"
	"net"
	"net/netip"

	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netns"
	"golang.org/x/sys/unix"
)

// AddressLabel marks the cluster DNS address the proxy puts on the
// loopback link, so that --cleanup removes exactly what it added.
//
// Why loopback: the address must be local to the node's namespace so that
// a pod's query, routed to the node through the pod's default route, is
// delivered to the proxy's socket. A /32 on lo is local on every kernel
// with nothing to create (a dummy link, as NodeLocal DNSCache uses, needs
// the dummy driver, which kernels such as the test machines' lack), it is
// never the source of a route to anywhere, and the label tells it apart
// from the operator's own addresses. Addresses outside 127.0.0.0/8 on lo
// behave as ordinary local addresses (no route_localnet needed).
const AddressLabel = "lo:tbdns"

func handle(nsFd int) (*netlink.Handle, error) {
	if nsFd == 0 {
		return netlink.NewHandle(unix.NETLINK_ROUTE)
	}
	return netlink.NewHandleAt(netns.NsHandle(nsFd), unix.NETLINK_ROUTE)
}

// EnsureAddress puts ip/32, labelled AddressLabel, on lo in the namespace
// nsFd (0: the process's own), and sets lo up. It is idempotent.
func EnsureAddress(nsFd int, ip netip.Addr) error {
	if !ip.Is4() {
		return fmt.Errorf("--cluster-dns %s: want an IPv4 address", ip)
	}
	h, err := handle(nsFd)
	if err != nil {
		return err
	}
	defer h.Close()
	lo, err := h.LinkByName("lo")
	if err != nil {
		return fmt.Errorf("link lo: %w", err)
	}
	if err := h.LinkSetUp(lo); err != nil {
		return fmt.Errorf("setting lo up: %w", err)
	}
	addr := &netlink.Addr{IPNet: &net.IPNet{IP: ip.AsSlice(), Mask: net.CIDRMask(32, 32)}, Label: AddressLabel}
	if err := h.AddrReplace(lo, addr); err != nil {
		return fmt.Errorf("adding %s/32 to lo: %w", ip, err)
	}
	return nil
}

// RemoveAddresses deletes every address labelled AddressLabel from lo. It
// returns the addresses it removed.
func RemoveAddresses(nsFd int) ([]netip.Addr, error) {
	h, err := handle(nsFd)
	if err != nil {
		return nil, err
	}
	defer h.Close()
	lo, err := h.LinkByName("lo")
	if err != nil {
		return nil, fmt.Errorf("link lo: %w", err)
	}
	addrs, err := h.AddrList(lo, unix.AF_INET)
	if err != nil {
		return nil, fmt.Errorf("addresses of lo: %w", err)
	}
	var removed []netip.Addr
	var errs []error
	for _, a := range addrs {
		if a.Label != AddressLabel {
			continue
		}
		if err := h.AddrDel(lo, &a); err != nil {
			errs = append(errs, fmt.Errorf("deleting %s from lo: %w", a.IPNet, err))
			continue
		}
		if ip, ok := netip.AddrFromSlice(a.IP.To4()); ok {
			removed = append(removed, ip)
		}
	}
	return removed, errors.Join(errs...)
}
