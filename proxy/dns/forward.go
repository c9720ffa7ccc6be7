package dns

import (
	"bufio"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/netip"
	"os"
	"strings"
	"sync/atomic"
	"time"

	"github.com/miekg/dns"

	"github.com/tugboat/tugboat/internal/netns"
)

// forwarder sends queries outside the zone to the upstreams. It starts
// with the upstream that answered last, tries the others in order and
// gives up when each has failed (a refused port fails at once: ICMP port
// unreachable) or the budget is spent, so the client gets SERVFAIL within
// the budget instead of timing out itself.
type forwarder struct {
	netns     int // namespace the upstream sockets are made in (0: the process's)
	upstreams []string
	budget    time.Duration
	preferred atomic.Int32 // index of the upstream that answered last
	metrics   *metrics
	log       *slog.Logger
}

func newForwarder(netns int, upstreams []string, budget time.Duration, m *metrics, log *slog.Logger) *forwarder {
	return &forwarder{netns: netns, upstreams: upstreams, budget: budget, metrics: m, log: log}
}

var errNoUpstream = errors.New("no upstream DNS server configured")

// exchange forwards r over network ("udp" or "tcp").
func (f *forwarder) exchange(r *dns.Msg, network string) (*dns.Msg, error) {
	n := len(f.upstreams)
	if n == 0 {
		return nil, errNoUpstream
	}
	deadline := time.Now().Add(f.budget)
	perTry := f.budget / time.Duration(n)
	first := int(f.preferred.Load())
	var errs []error
	for i := 0; i < n; i++ {
		idx := (first + i) % n
		left := time.Until(deadline)
		if left <= 0 {
			break
		}
		up := f.upstreams[idx]
		resp, err := f.exchangeOne(r, network, up, min(max(perTry, left/time.Duration(n-i)), left))
		if err == nil {
			if idx != first {
				f.preferred.Store(int32(idx))
			}
			return resp, nil
		}
		f.metrics.upstreamErrors.WithLabelValues(up).Inc()
		errs = append(errs, fmt.Errorf("%s: %w", up, err))
	}
	return nil, errors.Join(errs...)
}

// exchangeOne asks one upstream, from a socket made in the forwarder's
// namespace.
func (f *forwarder) exchangeOne(r *dns.Msg, network, upstream string, timeout time.Duration) (*dns.Msg, error) {
	c := &dns.Client{Net: network, Timeout: timeout}
	if f.netns == 0 {
		resp, _, err := c.Exchange(r, upstream)
		return resp, err
	}
	var conn net.Conn
	err := netns.Do(f.netns, func() (err error) {
		conn, err = net.DialTimeout(network, upstream, timeout)
		return err
	})
	if err != nil {
		return nil, err
	}
	defer conn.Close()
	resp, _, err := c.ExchangeWithConn(r, &dns.Conn{Conn: conn})
	return resp, err
}

// ReadResolvConf returns the nameservers of a resolv.conf as "ip:53",
// leaving out the addresses in skip (the cluster DNS address itself: a
// node whose resolv.conf points at the cluster DNS would loop) and
// loopback addresses (a stub resolver on 127.0.0.53 lives in the host's
// namespace, not necessarily in the proxy's). Reasons for what was left
// out are returned for the log.
func ReadResolvConf(path string, skip ...netip.Addr) (servers []string, dropped []string, err error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, nil, fmt.Errorf("--resolv-conf: %w", err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) < 2 || fields[0] != "nameserver" {
			continue
		}
		ip, err := netip.ParseAddr(fields[1])
		switch {
		case err != nil:
			dropped = append(dropped, fields[1]+": not an IP address")
		case ip.Zone() != "":
			dropped = append(dropped, fields[1]+": scoped address")
		case ip.IsLoopback():
			dropped = append(dropped, fields[1]+": loopback (the proxy may run in another network namespace)")
		case containsAddr(skip, ip):
			dropped = append(dropped, fields[1]+": the cluster DNS address itself")
		default:
			servers = append(servers, net.JoinHostPort(ip.String(), "53"))
		}
	}
	return servers, dropped, sc.Err()
}

func containsAddr(list []netip.Addr, a netip.Addr) bool {
	for _, b := range list {
		if a == b {
			return true
		}
	}
	return false
}
