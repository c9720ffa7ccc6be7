package netlab

import (
	"crypto/rand"
	"fmt"
	"log/slog"
	"net/netip"
	"regexp"
)

// Defaults for Config.
const (
	// DefaultPrefix starts the name of every namespace and link a lab makes.
	DefaultPrefix = "tb-"
	// DefaultHosts is the number of hosts when Config.Hosts is zero.
	DefaultHosts = 3
	// hostOffset: host i (1-based) gets the subnet's address number 10+i
	// (.11, .12, ...); the root namespace gets number 1.
	hostOffset = 10
	// maxLinkName is the kernel's limit on interface names (IFNAMSIZ-1).
	maxLinkName = 15
	// rootLinkSuffix ends the one link a lab adds to the root namespace.
	rootLinkSuffix = "-rt"
)

// Config describes a lab. The zero value is valid: DefaultHosts hosts, a
// random name, the DefaultPrefix and the first free subnet.
type Config struct {
	// Name is the run id: 1-8 characters of [a-z0-9]. It becomes part of
	// every name the lab makes (tb-<Name>-h1). Empty: random, 6 characters.
	Name string
	// Prefix starts every name the lab makes; CleanupStale is given the same
	// prefix. It must match [a-z][a-z0-9]*-, and len(Prefix)+len(Name) must
	// be at most 12 (Linux interface names are at most 15 bytes). Empty:
	// DefaultPrefix.
	Prefix string
	// Hosts is the number of host namespaces, 1 or more. Zero: DefaultHosts.
	Hosts int
	// Subnet is the lab's IPv4 subnet. The root namespace gets its first
	// address (.1), host i the address 10+i (.11, .12, ...). It must not
	// overlap a route of the root namespace. Zero: the first 10.123.X.0/24
	// that overlaps no route or address of the root namespace (so that labs
	// of concurrent test processes do not collide).
	Subnet netip.Prefix
	// Logger receives the lab's own events (created, killed, removed). Nil:
	// discard.
	Logger *slog.Logger
	// LogDir, when set, receives one file per process started with
	// Host.Start whose Stdout and Stderr are both nil
	// (<host>-<seq>-<program>.log). Tests pass t.TempDir(). Empty: such
	// output is discarded.
	LogDir string
}

var (
	nameRE   = regexp.MustCompile(`^[a-z0-9]{1,8}$`)
	prefixRE = regexp.MustCompile(`^[a-z][a-z0-9]*-$`)
)

// withDefaults returns c with empty fields filled in, except Subnet, which
// New picks under the setup lock.
func (c Config) withDefaults() Config {
	if c.Prefix == "" {
		c.Prefix = DefaultPrefix
	}
	if c.Name == "" {
		c.Name = randomName(6)
	}
	if c.Hosts == 0 {
		c.Hosts = DefaultHosts
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	return c
}

// Validate reports the first field that is not valid. A zero Name, Prefix,
// Hosts or Subnet is valid: New fills in a default.
func (c Config) Validate() error {
	c = c.withDefaults()
	if !prefixRE.MatchString(c.Prefix) {
		return fmt.Errorf("netlab: Prefix %q: must match %s", c.Prefix, prefixRE)
	}
	if !nameRE.MatchString(c.Name) {
		return fmt.Errorf("netlab: Name %q: must match %s", c.Name, nameRE)
	}
	if n := len(c.Prefix) + len(c.Name) + len(rootLinkSuffix); n > maxLinkName {
		return fmt.Errorf("netlab: Prefix+Name %q: too long for an interface name (%d > %d bytes with %q)",
			c.Prefix+c.Name, n, maxLinkName, rootLinkSuffix)
	}
	if c.Hosts < 1 {
		return fmt.Errorf("netlab: Hosts %d: must be 1 or more", c.Hosts)
	}
	if c.Subnet.IsValid() {
		if !c.Subnet.Addr().Is4() {
			return fmt.Errorf("netlab: Subnet %s: must be IPv4", c.Subnet)
		}
		if c.Subnet != c.Subnet.Masked() {
			return fmt.Errorf("netlab: Subnet %s: has host bits set (want %s)", c.Subnet, c.Subnet.Masked())
		}
		// Addresses 0 (network) and size-1 (broadcast) are not usable.
		size := uint64(1) << (32 - c.Subnet.Bits())
		if need := uint64(hostOffset + c.Hosts + 2); need > size {
			return fmt.Errorf("netlab: Subnet %s: too small for %d hosts (addresses up to .%d needed)",
				c.Subnet, c.Hosts, hostOffset+c.Hosts)
		}
	}
	return nil
}

// runID is the common start of every name of one lab: Prefix+Name.
func (c Config) runID() string { return c.Prefix + c.Name }

// nthAddr returns the n-th address of p (0 is the network address).
func nthAddr(p netip.Prefix, n int) netip.Addr {
	b := p.Masked().Addr().As4()
	v := uint32(b[0])<<24 | uint32(b[1])<<16 | uint32(b[2])<<8 | uint32(b[3])
	v += uint32(n)
	return netip.AddrFrom4([4]byte{byte(v >> 24), byte(v >> 16), byte(v >> 8), byte(v)})
}

// randomName returns n characters of [a-z0-9].
func randomName(n int) string {
	const alphabet = "abcdefghijklmnopqrstuvwxyz0123456789"
	b := make([]byte, n)
	_, _ = rand.Read(b) // never fails (crypto/rand)
	for i := range b {
		b[i] = alphabet[int(b[i])%len(alphabet)]
	}
	return string(b)
}
