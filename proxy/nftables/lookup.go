package nftables

import (
	"errors"
	"fmt"
	"net/netip"
	"strings"
	"syscall"

	"github.com/google/nftables"
	"github.com/google/nftables/expr"
	"github.com/mdlayher/netlink"
	"golang.org/x/sys/unix"
)

// Verdicts of Lookup.
const (
	VerdictForward = "forward" // DNAT to the service chain's endpoints
	VerdictReject  = "reject"  // no ready endpoint: connections are refused
	VerdictMissing = "missing" // the table has no rule for the key
)

// ErrNoTable: the table does not exist in the namespace (no proxy ever
// programmed it, or `proxy --cleanup` removed it).
var ErrNoTable = errors.New("no nftables table")

// Rule is what the table does with traffic to one ClusterIP port.
type Rule struct {
	Key     IPPortKey
	Verdict string
	// Chain is the service chain (VerdictForward); Endpoints how many
	// endpoints it balances over.
	Chain     string
	Endpoints int
}

// Lookup reads, from the kernel, what table tableName in the network
// namespace netnsFd (0: the caller's) does with traffic to each key. It
// reads the table as the packets meet it, not any proxy's memory, so it
// answers "does this node have rules for this ClusterIP" (the proxy's
// tests read the kernel back with it; tugctl trace service no longer does:
// the kubelet probes the path instead, see kubelet/server). It is read-only
// and safe to call while a proxy updates the table: each read is one
// netlink dump.
func Lookup(tableName string, netnsFd int, keys []IPPortKey) ([]Rule, error) {
	if tableName == "" {
		tableName = DefaultTable
	}
	var opts []nftables.ConnOption
	if netnsFd != 0 {
		opts = append(opts, nftables.WithNetNSFd(netnsFd))
	}
	c, err := nftables.New(opts...)
	if err != nil {
		return nil, err
	}
	t := &table{Handle{Name: tableName}}
	tbl := t.Table()
	svcMap, err := c.GetSetByName(tbl, setServiceIPs)
	if err != nil {
		if errors.Is(err, syscall.ENOENT) {
			return nil, fmt.Errorf("%w %q in the node's network namespace (is the proxy running on it?)", ErrNoTable, tableName)
		}
		return nil, fmt.Errorf("reading map %s of table %s: %w", setServiceIPs, tableName, err)
	}
	forward, err := c.GetSetElements(svcMap)
	if err != nil {
		return nil, fmt.Errorf("reading map %s of table %s: %w", setServiceIPs, tableName, err)
	}
	rejectSet, err := c.GetSetByName(tbl, setRejectIPs)
	if err != nil {
		return nil, fmt.Errorf("reading set %s of table %s: %w", setRejectIPs, tableName, err)
	}
	reject, err := c.GetSetElements(rejectSet)
	if err != nil {
		return nil, fmt.Errorf("reading set %s of table %s: %w", setRejectIPs, tableName, err)
	}
	chains := map[IPPortKey]string{}
	for _, e := range forward {
		k, ok := parseIPPortKey(e.Key)
		if !ok {
			continue
		}
		switch {
		case e.VerdictData != nil:
			chains[k] = e.VerdictData.Chain
		default:
			chains[k] = verdictChain(e.Val)
		}
	}
	rejected := map[IPPortKey]bool{}
	for _, e := range reject {
		if k, ok := parseIPPortKey(e.Key); ok {
			rejected[k] = true
		}
	}
	out := make([]Rule, 0, len(keys))
	for _, k := range keys {
		r := Rule{Key: k, Verdict: VerdictMissing}
		switch ch, ok := chains[k]; {
		case ok:
			r.Verdict, r.Chain = VerdictForward, ch
			rules, err := c.GetRules(tbl, t.chain(ch))
			if err != nil {
				return nil, fmt.Errorf("reading chain %s of table %s: %w", ch, tableName, err)
			}
			r.Endpoints = endpointCount(rules)
		case rejected[k]:
			r.Verdict = VerdictReject
		}
		out = append(out, r)
	}
	return out, nil
}

// parseIPPortKey decodes a service-ips or reject-ips key: address (4
// bytes), protocol (1 byte padded to 4), port (big-endian, padded to 4).
func parseIPPortKey(b []byte) (IPPortKey, bool) {
	if len(b) < 12 {
		return IPPortKey{}, false
	}
	return IPPortKey{
		IP:       netip.AddrFrom4([4]byte(b[0:4])),
		Protocol: Protocol(b[4]),
		Port:     uint16(b[8])<<8 | uint16(b[9]),
	}, true
}

// verdictChain decodes the chain of a verdict map element's data, which
// the library leaves as the nested verdict attributes (code, chain).
func verdictChain(b []byte) string {
	ad, err := netlink.NewAttributeDecoder(b)
	if err != nil {
		return ""
	}
	for ad.Next() {
		if ad.Type() == unix.NFTA_VERDICT_CHAIN {
			return strings.TrimRight(ad.String(), "\x00")
		}
	}
	return ""
}

// endpointCount is N of a service chain's "numgen random mod N" rule, or
// 1 for a chain that DNATs to a single endpoint.
func endpointCount(rules []*nftables.Rule) int {
	n := 0
	for _, r := range rules {
		for _, e := range r.Exprs {
			switch e := e.(type) {
			case *expr.Numgen:
				return int(e.Modulus)
			case *expr.NAT:
				n = 1
			}
		}
	}
	return n
}
