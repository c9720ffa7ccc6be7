package netlab

import (
	"fmt"
	"net/netip"

	"github.com/vishvananda/netlink"
)

// autoSubnetBase is where New looks for a free /24 when Config.Subnet is
// zero: 10.123.0.0/24, 10.123.1.0/24, ... 10.123.255.0/24.
var autoSubnetBase = netip.MustParsePrefix("10.123.0.0/16")

// pickSubnet returns want if it overlaps nothing the root namespace routes
// or has as an address, or, when want is zero, the first such /24 in
// autoSubnetBase. It runs under the setup lock, so two labs never pick the
// same one.
func pickSubnet(rootNL *netlink.Handle, want netip.Prefix) (netip.Prefix, error) {
	used, err := usedPrefixes(rootNL)
	if err != nil {
		return netip.Prefix{}, err
	}
	if want.IsValid() {
		for _, u := range used {
			if u.Overlaps(want) {
				return netip.Prefix{}, fmt.Errorf("netlab: Subnet %s overlaps %s, already used in the root netns (another lab? pick another subnet or leave Subnet empty)", want, u)
			}
		}
		return want, nil
	}
	for i := range 256 {
		cand := netip.PrefixFrom(nthAddr(autoSubnetBase, i<<8), 24)
		free := true
		for _, u := range used {
			if u.Overlaps(cand) {
				free = false
				break
			}
		}
		if free {
			return cand, nil
		}
	}
	return netip.Prefix{}, fmt.Errorf("netlab: no free /24 in %s", autoSubnetBase)
}

// usedPrefixes returns the destinations of the root namespace's IPv4 routes
// in all tables (but default routes, which overlap everything) and its IPv4
// addresses with their prefixes.
func usedPrefixes(rootNL *netlink.Handle) ([]netip.Prefix, error) {
	var used []netip.Prefix
	routes, err := rootNL.RouteListFiltered(netlink.FAMILY_V4, &netlink.Route{Table: 0}, netlink.RT_FILTER_TABLE)
	if err != nil {
		return nil, fmt.Errorf("netlab: list routes: %w", err)
	}
	for _, r := range routes {
		if r.Dst == nil {
			continue
		}
		if p, ok := prefixOf(r.Dst.IP, r.Dst.Mask); ok && p.Bits() > 0 {
			used = append(used, p)
		}
	}
	addrs, err := rootNL.AddrList(nil, netlink.FAMILY_V4)
	if err != nil {
		return nil, fmt.Errorf("netlab: list addresses: %w", err)
	}
	for _, a := range addrs {
		if p, ok := prefixOf(a.IP, a.Mask); ok {
			used = append(used, p.Masked())
		}
	}
	return used, nil
}

func prefixOf(ip []byte, mask []byte) (netip.Prefix, bool) {
	addr, ok := netip.AddrFromSlice(ip)
	if !ok {
		return netip.Prefix{}, false
	}
	addr = addr.Unmap()
	ones := 0
	for _, b := range mask {
		for ; b&0x80 != 0; b <<= 1 {
			ones++
		}
	}
	if len(mask) == 16 && addr.Is4() {
		ones -= 96
	}
	return netip.PrefixFrom(addr, ones), true
}
