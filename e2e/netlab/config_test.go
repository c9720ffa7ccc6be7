package netlab

import (
	"net/netip"
	"strings"
	"testing"
)

func TestConfigValidate(t *testing.T) {
	for _, tc := range []struct {
		name string
		cfg  Config
		bad  string // field named in the error; "" for valid
	}{
		{"zero", Config{}, ""},
		{"full", Config{Name: "run1", Prefix: "tb-", Hosts: 3, Subnet: netip.MustParsePrefix("10.123.4.0/24")}, ""},
		{"longest", Config{Name: "abcdefgh", Prefix: "tbz-"}, ""},
		{"too long", Config{Name: "abcdefgh", Prefix: "tbzz-"}, "Prefix+Name"},
		{"name chars", Config{Name: "Run_1"}, "Name"},
		{"name dash", Config{Name: "a-b"}, "Name"},
		{"prefix no dash", Config{Prefix: "tb"}, "Prefix"},
		{"hosts", Config{Hosts: -1}, "Hosts"},
		{"ipv6", Config{Subnet: netip.MustParsePrefix("fd00::/64")}, "Subnet"},
		{"host bits", Config{Subnet: netip.MustParsePrefix("10.123.0.1/24")}, "Subnet"},
		{"too small", Config{Hosts: 5, Subnet: netip.MustParsePrefix("10.123.0.0/28")}, "Subnet"},
		{"just fits", Config{Hosts: 3, Subnet: netip.MustParsePrefix("10.123.0.0/28")}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.cfg.Validate()
			switch {
			case tc.bad == "" && err != nil:
				t.Errorf("unexpected error: %v", err)
			case tc.bad != "" && err == nil:
				t.Errorf("no error, want one naming %s", tc.bad)
			case tc.bad != "" && !strings.Contains(err.Error(), tc.bad+" "):
				t.Errorf("error %q does not name %s", err, tc.bad)
			}
		})
	}
}

func TestParseName(t *testing.T) {
	for _, tc := range []struct {
		name, id string
	}{
		{"tb-abc123-h1", "tb-abc123"},
		{"tb-abc123-h12", "tb-abc123"},
		{"tb-abc123-sw", "tb-abc123"},
		{"tb-abc123-rt", "tb-abc123"},
		{"tb-abc123-x", ""},
		{"tb-abc123", ""},
		{"tb-ABC-h1", ""},
		{"other-abc-h1", ""},
		{"tbx-abc-h1", ""},
	} {
		id, ok := parseName("tb-", tc.name)
		if ok != (tc.id != "") || id != tc.id {
			t.Errorf("parseName(%q) = %q, %t; want %q", tc.name, id, ok, tc.id)
		}
	}
}

func TestNthAddr(t *testing.T) {
	p := netip.MustParsePrefix("10.123.0.0/24")
	for n, want := range map[int]string{0: "10.123.0.0", 1: "10.123.0.1", 11: "10.123.0.11", 256: "10.123.1.0"} {
		if got := nthAddr(p, n).String(); got != want {
			t.Errorf("nthAddr(%s, %d) = %s, want %s", p, n, got, want)
		}
	}
}
