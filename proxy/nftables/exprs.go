package nftables

import (
	"net/netip"

	"github.com/google/nftables"
	"github.com/google/nftables/binaryutil"
	"github.com/google/nftables/expr"
	"golang.org/x/sys/unix"
)

// Expression building blocks, written to match what nft(8) compiles for
// the rules shown in the package doc (compare with `nft --debug=netlink`).
// Registers: 1 is the 16-byte register, 9 and 10 the 32-bit registers that
// follow the first 4 bytes of it, as concatenations use them.

const (
	// ipsDstNAT is the conntrack status bit IPS_DST_NAT.
	ipsDstNAT = 1 << 5

	reg1  = 1
	reg9  = 9
	reg10 = 10
)

var (
	// ipPortType keys service-ips and reject-ips.
	ipPortType = nftables.MustConcatSetType(nftables.TypeIPAddr, nftables.TypeInetProto, nftables.TypeInetService)
	// portType keys service-nodeports and reject-nodeports.
	portType = nftables.MustConcatSetType(nftables.TypeInetProto, nftables.TypeInetService)
	// ipIPType keys the hairpin set (saddr . daddr).
	ipIPType = nftables.MustConcatSetType(nftables.TypeIPAddr, nftables.TypeIPAddr)
	// endpointType is the data of a numgen map: address . port.
	endpointType = nftables.MustConcatSetType(nftables.TypeIPAddr, nftables.TypeInetService)
)

func native32(v uint32) []byte { return binaryutil.NativeEndian.PutUint32(v) }

// pad4 pads b to a multiple of 4 bytes, as concatenated keys are laid out.
func pad4(b []byte) []byte {
	for len(b)%4 != 0 {
		b = append(b, 0)
	}
	return b
}

func ipPortKeyBytes(k IPPortKey) []byte {
	ip := k.IP.As4()
	out := append([]byte{}, ip[:]...)
	out = append(out, pad4([]byte{byte(k.Protocol)})...)
	return append(out, pad4(binaryutil.BigEndian.PutUint16(k.Port))...)
}

func portKeyBytes(k PortKey) []byte {
	out := pad4([]byte{byte(k.Protocol)})
	return append(out, pad4(binaryutil.BigEndian.PutUint16(k.Port))...)
}

func hairpinKeyBytes(a netip.Addr) []byte {
	ip := a.As4()
	return append(append([]byte{}, ip[:]...), ip[:]...)
}

func endpointBytes(e Endpoint) []byte {
	ip := e.IP.As4()
	return append(append([]byte{}, ip[:]...), pad4(binaryutil.BigEndian.PutUint16(e.Port))...)
}

// loadDaddrProtoPort loads ip daddr . meta l4proto . th dport.
func loadDaddrProtoPort() []expr.Any {
	return []expr.Any{
		&expr.Payload{DestRegister: reg1, Base: expr.PayloadBaseNetworkHeader, Offset: 16, Len: 4},
		&expr.Meta{Key: expr.MetaKeyL4PROTO, Register: reg9},
		&expr.Payload{DestRegister: reg10, Base: expr.PayloadBaseTransportHeader, Offset: 2, Len: 2},
	}
}

// loadProtoPort loads meta l4proto . th dport.
func loadProtoPort() []expr.Any {
	return []expr.Any{
		&expr.Meta{Key: expr.MetaKeyL4PROTO, Register: reg1},
		&expr.Payload{DestRegister: reg9, Base: expr.PayloadBaseTransportHeader, Offset: 2, Len: 2},
	}
}

// localNonLoopbackDaddr matches fib daddr type local ip daddr != 127.0.0.0/8:
// every address of the node but loopback (NodePorts).
func localNonLoopbackDaddr() []expr.Any {
	return []expr.Any{
		&expr.Fib{Register: reg1, FlagDADDR: true, ResultADDRTYPE: true},
		&expr.Cmp{Op: expr.CmpOpEq, Register: reg1, Data: native32(unix.RTN_LOCAL)},
		&expr.Payload{DestRegister: reg1, Base: expr.PayloadBaseNetworkHeader, Offset: 16, Len: 1},
		&expr.Cmp{Op: expr.CmpOpNeq, Register: reg1, Data: []byte{127}},
	}
}

// ctStateNew matches ct state new.
func ctStateNew() []expr.Any {
	return []expr.Any{
		&expr.Ct{Register: reg1, Key: expr.CtKeySTATE},
		&expr.Bitwise{SourceRegister: reg1, DestRegister: reg1, Len: 4, Mask: native32(expr.CtStateBitNEW), Xor: native32(0)},
		&expr.Cmp{Op: expr.CmpOpNeq, Register: reg1, Data: native32(0)},
	}
}

// ctStatusDNAT matches ct status dnat.
func ctStatusDNAT() []expr.Any {
	return []expr.Any{
		&expr.Ct{Register: reg1, Key: expr.CtKeySTATUS},
		&expr.Bitwise{SourceRegister: reg1, DestRegister: reg1, Len: 4, Mask: native32(ipsDstNAT), Xor: native32(0)},
		&expr.Cmp{Op: expr.CmpOpNeq, Register: reg1, Data: native32(0)},
	}
}

func l4proto(p Protocol) []expr.Any {
	return []expr.Any{
		&expr.Meta{Key: expr.MetaKeyL4PROTO, Register: reg1},
		&expr.Cmp{Op: expr.CmpOpEq, Register: reg1, Data: []byte{byte(p)}},
	}
}

// saddrNotIn matches ip saddr != prefix.
func saddrNotIn(p netip.Prefix) []expr.Any {
	mask := make([]byte, 4)
	for i := 0; i < p.Bits(); i++ {
		mask[i/8] |= 0x80 >> (i % 8)
	}
	addr := p.Masked().Addr().As4()
	return []expr.Any{
		&expr.Payload{DestRegister: reg1, Base: expr.PayloadBaseNetworkHeader, Offset: 12, Len: 4},
		&expr.Bitwise{SourceRegister: reg1, DestRegister: reg1, Len: 4, Mask: mask, Xor: []byte{0, 0, 0, 0}},
		&expr.Cmp{Op: expr.CmpOpNeq, Register: reg1, Data: addr[:]},
	}
}

// saddrIn matches ip saddr prefix.
func saddrIn(p netip.Prefix) []expr.Any {
	out := saddrNotIn(p)
	out[len(out)-1].(*expr.Cmp).Op = expr.CmpOpEq
	return out
}

// localSaddr matches fib saddr type local: packets the node itself sends.
func localSaddr() []expr.Any {
	return []expr.Any{
		&expr.Fib{Register: reg1, FlagSADDR: true, ResultADDRTYPE: true},
		&expr.Cmp{Op: expr.CmpOpEq, Register: reg1, Data: native32(unix.RTN_LOCAL)},
	}
}

// setMasqueradeMark is meta mark set meta mark | MasqueradeMark.
func setMasqueradeMark() []expr.Any {
	return []expr.Any{
		&expr.Meta{Key: expr.MetaKeyMARK, Register: reg1},
		&expr.Bitwise{SourceRegister: reg1, DestRegister: reg1, Len: 4, Mask: native32(^uint32(MasqueradeMark)), Xor: native32(MasqueradeMark)},
		&expr.Meta{Key: expr.MetaKeyMARK, SourceRegister: true, Register: reg1},
	}
}

// masqueradeMarked is meta mark & MasqueradeMark == MasqueradeMark
// meta mark set meta mark ^ MasqueradeMark masquerade fully-random.
func masqueradeMarked() []expr.Any {
	return []expr.Any{
		&expr.Meta{Key: expr.MetaKeyMARK, Register: reg1},
		&expr.Bitwise{SourceRegister: reg1, DestRegister: reg1, Len: 4, Mask: native32(MasqueradeMark), Xor: native32(0)},
		&expr.Cmp{Op: expr.CmpOpEq, Register: reg1, Data: native32(MasqueradeMark)},
		&expr.Meta{Key: expr.MetaKeyMARK, Register: reg1},
		&expr.Bitwise{SourceRegister: reg1, DestRegister: reg1, Len: 4, Mask: native32(^uint32(0)), Xor: native32(MasqueradeMark)},
		&expr.Meta{Key: expr.MetaKeyMARK, SourceRegister: true, Register: reg1},
		&expr.Masq{FullyRandom: true},
	}
}

// masqueradeHairpin is ct status dnat ip saddr . ip daddr @hairpin
// masquerade fully-random.
func masqueradeHairpin(hairpin *nftables.Set) []expr.Any {
	return append(ctStatusDNAT(),
		&expr.Payload{DestRegister: reg1, Base: expr.PayloadBaseNetworkHeader, Offset: 12, Len: 4},
		&expr.Payload{DestRegister: reg9, Base: expr.PayloadBaseNetworkHeader, Offset: 16, Len: 4},
		&expr.Lookup{SourceRegister: reg1, SetName: hairpin.Name, SetID: hairpin.ID},
		&expr.Masq{FullyRandom: true},
	)
}

func verdict(kind expr.VerdictKind, chain string) *expr.Verdict {
	return &expr.Verdict{Kind: kind, Chain: chain}
}

func vmapLookup(s *nftables.Set) *expr.Lookup {
	return &expr.Lookup{SourceRegister: reg1, SetName: s.Name, SetID: s.ID, IsDestRegSet: true, DestRegister: 0}
}

func setLookup(s *nftables.Set) *expr.Lookup {
	return &expr.Lookup{SourceRegister: reg1, SetName: s.Name, SetID: s.ID}
}

// dnatOne is meta l4proto P dnat ip to A:P.
func dnatOne(p Protocol, e Endpoint) []expr.Any {
	ip := e.IP.As4()
	return append(l4proto(p),
		&expr.Immediate{Register: reg1, Data: ip[:]},
		&expr.Immediate{Register: 2, Data: binaryutil.BigEndian.PutUint16(e.Port)},
		&expr.NAT{Type: expr.NATTypeDestNAT, Family: unix.NFPROTO_IPV4, RegAddrMin: reg1, RegProtoMin: 2, Specified: true},
	)
}

// dnatNumgen is meta l4proto P dnat ip to numgen random mod N map {...}
// given the anonymous map m already added to the batch.
func dnatNumgen(p Protocol, n int, m *nftables.Set) []expr.Any {
	return append(l4proto(p),
		&expr.Numgen{Register: reg1, Modulus: uint32(n), Type: unix.NFT_NG_RANDOM},
		// The library marks anonymous maps big-endian, so nft(8) would
		// print host-order keys as 16777216...; keys are big-endian and
		// the number is converted to match.
		&expr.Byteorder{SourceRegister: reg1, DestRegister: reg1, Op: expr.ByteorderHton, Len: 4, Size: 4},
		&expr.Lookup{SourceRegister: reg1, SetName: m.Name, SetID: m.ID, IsDestRegSet: true, DestRegister: reg1},
		&expr.NAT{Type: expr.NATTypeDestNAT, Family: unix.NFPROTO_IPV4, RegAddrMin: reg1, RegProtoMin: reg9, Specified: true},
	)
}
