package nodeipam

import (
	"errors"
	"fmt"
	"math/bits"
	"net/netip"
)

// ErrFull means every subnet of the cluster CIDR is in use.
var ErrFull = errors.New("no pod CIDR left in the cluster CIDR")

// maxSubnetBits bounds the subnets of one cluster CIDR to 65,536 (as
// Kubernetes does), which keeps the bitmap at 8 KiB.
const maxSubnetBits = 16

// CIDRSet allocates equal subnets of a cluster CIDR. Allocation walks
// forward from the last subnet handed out, so a released subnet is reused
// only after every never-used one (a node deleted and a new one created
// rarely get the same range, which keeps stale routes harmless).
// It is not safe for concurrent use.
type CIDRSet struct {
	cluster  netip.Prefix
	maskSize int
	shift    int // address bits below a subnet
	size     int // number of subnets
	used     []uint64
	inUse    int
	next     int
}

// NewCIDRSet splits cluster into /maskSize subnets.
func NewCIDRSet(cluster netip.Prefix, maskSize int) (*CIDRSet, error) {
	if !cluster.IsValid() || cluster != cluster.Masked() {
		return nil, fmt.Errorf("cluster CIDR %s: not a network address (want %s)", cluster, cluster.Masked())
	}
	addrBits := cluster.Addr().BitLen()
	if maskSize <= cluster.Bits() || maskSize > addrBits {
		return nil, fmt.Errorf("node CIDR mask size %d: must be longer than the cluster CIDR's /%d and at most /%d", maskSize, cluster.Bits(), addrBits)
	}
	if maskSize-cluster.Bits() > maxSubnetBits {
		return nil, fmt.Errorf("node CIDR mask size %d: at most %d bits longer than the cluster CIDR's /%d (%d subnets)", maskSize, maxSubnetBits, cluster.Bits(), 1<<maxSubnetBits)
	}
	n := 1 << (maskSize - cluster.Bits())
	return &CIDRSet{cluster: cluster, maskSize: maskSize, shift: addrBits - maskSize, size: n, used: make([]uint64, (n+63)/64)}, nil
}

// Size is the number of subnets; InUse how many are allocated.
func (s *CIDRSet) Size() int  { return s.size }
func (s *CIDRSet) InUse() int { return s.inUse }

func (s *CIDRSet) isUsed(i int) bool { return s.used[i/64]&(1<<(i%64)) != 0 }

func (s *CIDRSet) set(i int, v bool) {
	if s.isUsed(i) == v {
		return
	}
	if v {
		s.used[i/64] |= 1 << (i % 64)
		s.inUse++
	} else {
		s.used[i/64] &^= 1 << (i % 64)
		s.inUse--
	}
}

// AllocateNext returns a free subnet and marks it used.
func (s *CIDRSet) AllocateNext() (netip.Prefix, error) {
	if s.inUse >= s.size {
		return netip.Prefix{}, ErrFull
	}
	for j := 0; j < s.size; j++ {
		i := (s.next + j) % s.size
		if !s.isUsed(i) {
			s.set(i, true)
			s.next = (i + 1) % s.size
			return s.subnet(i), nil
		}
	}
	return netip.Prefix{}, ErrFull
}

// Occupy marks p used; it must be one of the set's subnets.
func (s *CIDRSet) Occupy(p netip.Prefix) error {
	i, err := s.index(p)
	if err != nil {
		return err
	}
	s.set(i, true)
	return nil
}

// Release frees p (freeing a free subnet is a no-op).
func (s *CIDRSet) Release(p netip.Prefix) error {
	i, err := s.index(p)
	if err != nil {
		return err
	}
	s.set(i, false)
	return nil
}

// Contains reports whether p is one of the set's subnets.
func (s *CIDRSet) Contains(p netip.Prefix) bool {
	_, err := s.index(p)
	return err == nil
}

// index is p's position among the subnets.
func (s *CIDRSet) index(p netip.Prefix) (int, error) {
	if p.Bits() != s.maskSize || p != p.Masked() || !s.cluster.Contains(p.Addr()) || p.Addr().Is4() != s.cluster.Addr().Is4() {
		return 0, fmt.Errorf("%s is not a /%d subnet of %s", p, s.maskSize, s.cluster)
	}
	hi, lo := u128(p.Addr())
	chi, clo := u128(s.cluster.Addr())
	// offset = (addr - cluster) >> shift; it fits in 16 bits.
	dlo, borrow := bits.Sub64(lo, clo, 0)
	dhi, _ := bits.Sub64(hi, chi, borrow)
	var off uint64
	if s.shift >= 64 {
		off = dhi >> (s.shift - 64)
	} else {
		off = dlo>>s.shift | dhi<<(64-s.shift)
	}
	return int(off), nil
}

// subnet is the i-th subnet.
func (s *CIDRSet) subnet(i int) netip.Prefix {
	hi, lo := u128(s.cluster.Addr())
	var ahi, alo uint64
	if s.shift >= 64 {
		ahi = uint64(i) << (s.shift - 64)
	} else {
		alo = uint64(i) << s.shift
		if s.shift > 0 {
			ahi = uint64(i) >> (64 - s.shift)
		}
	}
	lo, carry := bits.Add64(lo, alo, 0)
	hi, _ = bits.Add64(hi, ahi, carry)
	var b [16]byte
	for k := 0; k < 8; k++ {
		b[k] = byte(hi >> (56 - 8*k))
		b[8+k] = byte(lo >> (56 - 8*k))
	}
	addr := netip.AddrFrom16(b)
	if s.cluster.Addr().Is4() {
		addr = addr.Unmap()
	}
	return netip.PrefixFrom(addr, s.maskSize)
}

// u128 is an address as a 128-bit number (IPv4 as IPv4-mapped IPv6).
func u128(a netip.Addr) (hi, lo uint64) {
	b := a.As16()
	for k := 0; k < 8; k++ {
		hi = hi<<8 | uint64(b[k])
		lo = lo<<8 | uint64(b[8+k])
	}
	return hi, lo
}
