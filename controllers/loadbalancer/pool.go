package loadbalancer

import (
	"fmt"
	"net/netip"
	"strings"
	"sync"
)

// addrRange is an inclusive IPv4 range.
type addrRange struct{ first, last netip.Addr }

func (r addrRange) String() string {
	if r.first == r.last {
		return r.first.String()
	}
	return r.first.String() + "-" + r.last.String()
}

// parsePool reads --lb-pool entries: CIDRs or first-last ranges.
func parsePool(entries []string) ([]addrRange, error) {
	var out []addrRange
	for _, e := range entries {
		e = strings.TrimSpace(e)
		if e == "" {
			continue
		}
		var r addrRange
		if first, last, ok := strings.Cut(e, "-"); ok {
			a, err1 := netip.ParseAddr(strings.TrimSpace(first))
			b, err2 := netip.ParseAddr(strings.TrimSpace(last))
			if err1 != nil || err2 != nil || !a.Is4() || !b.Is4() || b.Less(a) {
				return nil, fmt.Errorf("--lb-pool %q: want an IPv4 CIDR (192.168.100.240/29) or a range first-last (10.0.0.50-10.0.0.60)", e)
			}
			r = addrRange{a, b}
		} else {
			p, err := netip.ParsePrefix(e)
			if err != nil || !p.Addr().Is4() || p.Masked() != p {
				return nil, fmt.Errorf("--lb-pool %q: want an IPv4 CIDR with its network address (192.168.100.240/29) or a range first-last", e)
			}
			r = addrRange{p.Addr(), lastOf(p)}
			if p.Bits() < 31 { // network and broadcast addresses are no hosts
				r = addrRange{r.first.Next(), r.last.Prev()}
			}
		}
		for _, o := range out {
			if !(r.last.Less(o.first) || o.last.Less(r.first)) {
				return nil, fmt.Errorf("--lb-pool: %s overlaps %s", r, o)
			}
		}
		out = append(out, r)
	}
	return out, nil
}

func lastOf(p netip.Prefix) netip.Addr {
	b := p.Addr().As4()
	host := 32 - p.Bits()
	v := uint32(b[0])<<24 | uint32(b[1])<<16 | uint32(b[2])<<8 | uint32(b[3])
	v |= uint32(uint64(1)<<host - 1)
	return netip.AddrFrom4([4]byte{byte(v >> 24), byte(v >> 16), byte(v >> 8), byte(v)})
}

// pool hands out addresses, one per Service key.
type pool struct {
	ranges []addrRange

	mu      sync.Mutex
	byIP    map[netip.Addr]string // ip -> service key
	byKey   map[string]netip.Addr
	waiting map[string]bool // Services refused for want of an address
}

func newPool(ranges []addrRange) *pool {
	return &pool{ranges: ranges, byIP: map[netip.Addr]string{}, byKey: map[string]netip.Addr{}, waiting: map[string]bool{}}
}

func (p *pool) contains(ip netip.Addr) bool {
	for _, r := range p.ranges {
		if !ip.Less(r.first) && !r.last.Less(ip) {
			return true
		}
	}
	return false
}

func (p *pool) String() string {
	s := make([]string, len(p.ranges))
	for i, r := range p.ranges {
		s[i] = r.String()
	}
	return strings.Join(s, ",")
}

// take records that key holds ip.
func (p *pool) take(key string, ip netip.Addr) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if holder, ok := p.byIP[ip]; ok && holder != key {
		return fmt.Errorf("%s is held by %s", ip, holder)
	}
	p.byIP[ip] = key
	p.byKey[key] = ip
	return nil
}

// allocate returns key's address: the one it holds, the requested one
// (spec.loadBalancerIP) or the lowest free one.
func (p *pool) allocate(key, requested string) (netip.Addr, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if requested != "" {
		ip, err := netip.ParseAddr(requested)
		if err != nil || !p.contains(ip) {
			return netip.Addr{}, fmt.Errorf("spec.loadBalancerIP %s is not in the pool %s", requested, p)
		}
		if holder, ok := p.byIP[ip]; ok && holder != key {
			p.waiting[key] = true
			return netip.Addr{}, fmt.Errorf("spec.loadBalancerIP %s is already used by Service %s", requested, holder)
		}
		if old, ok := p.byKey[key]; ok && old != ip {
			delete(p.byIP, old)
		}
		p.byIP[ip], p.byKey[key] = key, ip
		delete(p.waiting, key)
		return ip, nil
	}
	if ip, ok := p.byKey[key]; ok {
		return ip, nil
	}
	for _, r := range p.ranges {
		for a := r.first; ; a = a.Next() {
			if _, used := p.byIP[a]; !used {
				p.byIP[a], p.byKey[key] = key, a
				delete(p.waiting, key)
				return a, nil
			}
			if a == r.last {
				break
			}
		}
	}
	p.waiting[key] = true
	return netip.Addr{}, fmt.Errorf("no addresses left in the pool %s (--lb-pool): all %d are in use", p, len(p.byIP))
}

// release frees key's address; it reports whether there was one.
func (p *pool) release(key string) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	delete(p.waiting, key)
	ip, ok := p.byKey[key]
	if ok {
		delete(p.byKey, key)
		delete(p.byIP, ip)
	}
	return ok
}

// takeWaiting returns (and forgets) the Services waiting for an address.
func (p *pool) takeWaiting() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	out := make([]string, 0, len(p.waiting))
	for k := range p.waiting {
		out = append(out, k)
	}
	p.waiting = map[string]bool{}
	return out
}
