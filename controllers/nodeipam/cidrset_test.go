package nodeipam

import (
	"net/netip"
	"strings"
	"testing"
)

func TestCIDRSetIPv4(t *testing.T) {
	s, err := NewCIDRSet(netip.MustParsePrefix("10.244.0.0/16"), 24)
	if err != nil {
		t.Fatal(err)
	}
	if s.Size() != 256 {
		t.Fatalf("size %d", s.Size())
	}
	seen := map[netip.Prefix]bool{}
	for i := 0; i < 256; i++ {
		p, err := s.AllocateNext()
		if err != nil {
			t.Fatalf("allocation %d: %v", i, err)
		}
		if seen[p] || !p.Addr().Is4() || p.Bits() != 24 {
			t.Fatalf("allocation %d: %s (duplicate or malformed)", i, p)
		}
		if j, err := s.index(p); err != nil || j != i {
			t.Fatalf("index(%s) = %d, %v; want %d", p, j, err, i)
		}
		seen[p] = true
	}
	if first := s.subnet(0); first.String() != "10.244.0.0/24" || s.subnet(255).String() != "10.244.255.0/24" {
		t.Fatalf("first %s last %s", first, s.subnet(255))
	}
	if _, err := s.AllocateNext(); err != ErrFull {
		t.Fatalf("full set: %v", err)
	}
	if err := s.Release(netip.MustParsePrefix("10.244.7.0/24")); err != nil {
		t.Fatal(err)
	}
	if p, err := s.AllocateNext(); err != nil || p.String() != "10.244.7.0/24" {
		t.Fatalf("after release: %s %v", p, err)
	}
	for _, bad := range []string{"10.245.0.0/24", "10.244.1.0/25", "10.244.1.1/24", "fd00::/24"} {
		if err := s.Occupy(netip.MustParsePrefix(bad)); err == nil {
			t.Errorf("Occupy(%s) accepted", bad)
		}
	}
}

func TestCIDRSetReusesReleasedLast(t *testing.T) {
	s, _ := NewCIDRSet(netip.MustParsePrefix("10.0.0.0/29"), 30)
	a, _ := s.AllocateNext()
	_ = s.Release(a)
	b, _ := s.AllocateNext()
	if a == b {
		t.Fatalf("released %s handed out again before the never-used ones", a)
	}
}

func TestCIDRSetIPv6(t *testing.T) {
	s, err := NewCIDRSet(netip.MustParsePrefix("fd00:10:244::/56"), 64)
	if err != nil {
		t.Fatal(err)
	}
	if s.Size() != 256 {
		t.Fatalf("size %d", s.Size())
	}
	if got := s.subnet(1).String(); got != "fd00:10:244:1::/64" {
		t.Fatalf("subnet 1: %s", got)
	}
	if got := s.subnet(255).String(); got != "fd00:10:244:ff::/64" {
		t.Fatalf("subnet 255: %s", got)
	}
	if i, err := s.index(netip.MustParsePrefix("fd00:10:244:2a::/64")); err != nil || i != 42 {
		t.Fatalf("index: %d %v", i, err)
	}
	s2, err := NewCIDRSet(netip.MustParsePrefix("fd00::/104"), 120)
	if err != nil {
		t.Fatal(err)
	}
	if got := s2.subnet(3).String(); got != "fd00::300/120" {
		t.Fatalf("low subnet: %s", got)
	}
}

func TestConfigValidate(t *testing.T) {
	cases := []struct {
		cfg  Config
		want string // "" valid; else a substring of the error
	}{
		{Config{}, ""},
		{Config{ClusterCIDR: "10.244.0.0/16", NodeCIDRMaskSize: 24}, ""},
		{Config{ClusterCIDR: "10.244.0.0/16", NodeCIDRMaskSize: 16}, "--node-cidr-mask-size"},
		{Config{ClusterCIDR: "10.244.0.0/16", NodeCIDRMaskSize: 33}, "--node-cidr-mask-size"},
		{Config{ClusterCIDR: "10.0.0.0/8", NodeCIDRMaskSize: 28}, "at most 16 bits"},
		{Config{ClusterCIDR: "10.244.1.0/16"}, "not a network address"},
		{Config{ClusterCIDR: "10.244.0.0"}, "--cluster-cidr"},
	}
	for _, c := range cases {
		err := c.cfg.Validate()
		switch {
		case c.want == "" && err != nil:
			t.Errorf("%+v: %v", c.cfg, err)
		case c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)):
			t.Errorf("%+v: error %v, want it to mention %q", c.cfg, err, c.want)
		}
	}
}
