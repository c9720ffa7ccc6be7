package netlab

import (
	"errors"
	"fmt"
	"log/slog"
	"net/netip"
	"strconv"
	"sync"

	"github.com/vishvananda/netlink"
	vnetns "github.com/vishvananda/netns"

	"github.com/tugboat/tugboat/internal/netns"
)

// Host is one "machine" of the lab: a network namespace with loopback, one
// interface (eth0) on the lab's switch and IP forwarding on.
type Host struct {
	// Index is the host's number, from 1.
	Index int
	// Name is the host's network namespace name (<lab ID>-h<Index>), usable
	// as a node name and with "ip netns exec".
	Name string
	// IP is the host's address on the lab subnet (the subnet's 10+Index).
	IP netip.Addr
	// Addr is IP with the lab subnet's prefix length (10.123.0.11/24).
	Addr netip.Prefix
	// Iface is the host's interface to the switch ("eth0").
	Iface string
	// NetnsPath is the bind mount of the host's network namespace
	// (/run/netns/<Name>), as CNI and containerd take it.
	NetnsPath string

	lab  *Lab
	log  *slog.Logger
	port string // the host's port on the switch bridge (h<Index>)
	ns   vnetns.NsHandle
	nl   *netlink.Handle

	mu     sync.Mutex
	procs  []*Proc
	seq    int
	closed bool
}

// buildHost makes host i. It returns the host as soon as its namespace
// exists, also with an error, so that Close removes it.
func (l *Lab) buildHost(i int) (*Host, error) {
	ip := nthAddr(l.Subnet, hostOffset+i)
	name := l.ID + "-h" + strconv.Itoa(i)
	ns, err := createNamedNetns(name)
	if err != nil {
		return nil, err
	}
	l.netnsMade = append(l.netnsMade, name)
	h := &Host{
		Index:     i,
		Name:      name,
		IP:        ip,
		Addr:      netip.PrefixFrom(ip, l.Subnet.Bits()),
		Iface:     hostIface,
		NetnsPath: netnsPath(name),
		lab:       l,
		log:       l.log.With("host", name),
		port:      "h" + strconv.Itoa(i),
		ns:        ns,
	}
	if h.nl, err = netlink.NewHandleAt(ns); err != nil {
		return h, fmt.Errorf("netlab: netlink in %s: %w", name, err)
	}
	la := netlink.NewLinkAttrs()
	la.Name = h.port
	veth := &netlink.Veth{LinkAttrs: la, PeerName: hostIface, PeerNamespace: netlink.NsFd(ns), PeerTxQLen: -1}
	if err := l.swNL.LinkAdd(veth); err != nil {
		return h, fmt.Errorf("netlab: %s: add veth %s/%s: %w", name, h.port, hostIface, err)
	}
	if err := l.attachPort(h.port); err != nil {
		return h, err
	}
	eth, err := h.nl.LinkByName(hostIface)
	if err != nil {
		return h, fmt.Errorf("netlab: %s: %w", name, err)
	}
	if err := h.nl.AddrAdd(eth, &netlink.Addr{IPNet: ipNet(h.Addr)}); err != nil {
		return h, fmt.Errorf("netlab: %s: add address %s: %w", name, h.Addr, err)
	}
	if err := h.nl.LinkSetUp(eth); err != nil {
		return h, fmt.Errorf("netlab: %s: %s up: %w", name, hostIface, err)
	}
	if err := writeSysctl(ns, "/proc/sys/net/ipv4/ip_forward", "1"); err != nil {
		return h, fmt.Errorf("netlab: %s: %w", name, err)
	}
	h.log.Debug("host up", "ip", h.Addr)
	return h, nil
}

// String returns the host's name.
func (h *Host) String() string { return h.Name }

// Do runs fn on an OS thread that is inside the host's network namespace
// and returns its error. Sockets fn opens (net.Listen, net.Dial) belong to
// the host and stay usable from any goroutine after fn returns; goroutines
// fn starts do not run in the host's namespace.
func (h *Host) Do(fn func() error) error {
	h.mu.Lock()
	closed := h.closed
	h.mu.Unlock()
	if closed {
		return fmt.Errorf("netlab: %s: lab closed", h.Name)
	}
	return netns.Do(int(h.ns), fn)
}

// Disconnect simulates a network partition of the host: its port on the
// switch goes down, so it neither reaches nor is reached by any other host
// or the root namespace. The host's own interface keeps its address and
// routes (it only sees its carrier go away, as with a pulled cable), and
// its processes keep running. Reconnect undoes it.
func (h *Host) Disconnect() error {
	return h.setPort(false)
}

// Reconnect brings the host's switch port back up after Disconnect.
func (h *Host) Reconnect() error {
	return h.setPort(true)
}

func (h *Host) setPort(up bool) error {
	nl := h.lab.swNL
	port, err := nl.LinkByName(h.port)
	if err != nil {
		return fmt.Errorf("netlab: %s: switch port %s: %w", h.Name, h.port, err)
	}
	if up {
		err = nl.LinkSetUp(port)
	} else {
		err = nl.LinkSetDown(port)
	}
	if err != nil {
		return fmt.Errorf("netlab: %s: switch port %s up=%t: %w", h.Name, h.port, up, err)
	}
	h.log.Info("switch port set", "up", up)
	return nil
}

// close stops the host's processes, refuses new ones and releases its
// handles. Its namespace is removed by the lab.
func (h *Host) close() error {
	h.mu.Lock()
	h.closed = true
	h.mu.Unlock()
	err := h.Stop()
	if h.nl != nil {
		h.nl.Close()
	}
	closeNs(&h.ns)
	return err
}

// errClosed is returned when a host of a closed lab is asked to start a
// process.
var errClosed = errors.New("lab closed")
