package netlab

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/netip"
	"os"
	"sync"

	"github.com/vishvananda/netlink"
	vnetns "github.com/vishvananda/netns"

	"github.com/tugboat/tugboat/internal/netns"
)

// Names inside the lab's own namespaces (they cannot clash with anything
// outside them).
const (
	bridgeName    = "br0"  // the switch, in the switch namespace
	switchRootEnd = "rt"   // switch end of the root namespace's veth
	hostIface     = "eth0" // a host's interface to the switch
)

// Lab is a running network lab: a switch namespace with a bridge, host
// namespaces on it, and one veth from the root namespace. Make one with New;
// Close removes everything it made.
type Lab struct {
	// ID is the common start of every name the lab made: Prefix+Name
	// ("tb-abc123").
	ID string
	// Subnet is the lab's IPv4 subnet.
	Subnet netip.Prefix
	// RootIP is the root namespace's address on the lab (the subnet's .1).
	// Processes of the test runner that hosts must reach (the apiserver)
	// listen on it.
	RootIP netip.Addr
	// RootLink is the name of the root namespace's interface to the lab
	// (<ID>-rt).
	RootLink string
	// SwitchNetns is the name of the switch namespace (<ID>-sw).
	SwitchNetns string
	// Hosts are the lab's hosts; Hosts[0] is host 1.
	Hosts []*Host

	cfg    Config
	log    *slog.Logger
	lock   *os.File // flock held for the lab's life (see CleanupStale)
	rootNs vnetns.NsHandle
	swNs   vnetns.NsHandle
	rootNL *netlink.Handle
	swNL   *netlink.Handle
	spawn  *spawner // forks the hosts' processes (see spawner)

	// What this lab made, so that Close after a failed New removes only
	// that (never a same-named namespace of someone else).
	netnsMade    []string
	rootLinkMade bool

	closeOnce sync.Once
	closeErr  error
}

// New makes a lab as described by cfg: first it removes what stale runs with
// the same prefix left behind (CleanupStale), then it makes the switch, the
// hosts and the root namespace's link. It needs root (CAP_NET_ADMIN and
// CAP_SYS_ADMIN). On error nothing it made is left behind. The caller must
// Close the lab.
func New(ctx context.Context, cfg Config) (*Lab, error) {
	cfg = cfg.withDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	log := cfg.Logger.With("lab", cfg.runID())

	setup, err := lockSetup(ctx)
	if err != nil {
		return nil, err
	}
	defer unlockFile(setup)

	if _, err := cleanupStaleLocked(cfg.Prefix, log); err != nil {
		return nil, err
	}
	lock, err := lockRun(cfg.runID())
	if err != nil {
		return nil, err
	}
	l := &Lab{
		ID:          cfg.runID(),
		RootLink:    cfg.runID() + rootLinkSuffix,
		SwitchNetns: cfg.runID() + "-sw",
		cfg:         cfg,
		log:         log,
		lock:        lock,
		rootNs:      vnetns.None(),
		swNs:        vnetns.None(),
	}
	if err := l.build(ctx); err != nil {
		if cerr := l.Close(); cerr != nil {
			log.Warn("cleanup after failed setup", "err", cerr)
		}
		return nil, err
	}
	log.Info("lab up", "subnet", l.Subnet, "root_ip", l.RootIP, "hosts", len(l.Hosts))
	return l, nil
}

// build makes the lab's namespaces and links; Close undoes any part of it.
func (l *Lab) build(ctx context.Context) error {
	var err error
	if l.rootNs, err = vnetns.GetFromPath("/proc/self/ns/net"); err != nil {
		return fmt.Errorf("netlab: open root netns: %w", err)
	}
	if l.rootNL, err = netlink.NewHandleAt(l.rootNs); err != nil {
		return fmt.Errorf("netlab: netlink in root netns: %w", err)
	}
	if err := l.checkNameFree(); err != nil {
		return err
	}
	if l.Subnet, err = pickSubnet(l.rootNL, l.cfg.Subnet); err != nil {
		return err
	}
	l.RootIP = nthAddr(l.Subnet, 1)

	if l.spawn, err = newSpawner(); err != nil {
		return err
	}
	if err := l.buildSwitch(); err != nil {
		return err
	}
	if err := l.buildRootLink(); err != nil {
		return err
	}
	for i := 1; i <= l.cfg.Hosts; i++ {
		if err := ctx.Err(); err != nil {
			return fmt.Errorf("netlab: %w", err)
		}
		h, err := l.buildHost(i)
		if h != nil {
			l.Hosts = append(l.Hosts, h)
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// checkNameFree fails if a namespace or link of this run id exists: after
// the stale cleanup, it can only belong to a live lab or a manual one.
func (l *Lab) checkNameFree() error {
	if _, err := os.Stat(netnsPath(l.SwitchNetns)); err == nil {
		return fmt.Errorf("netlab: lab %s: netns %s exists (lab made by hack/netlab.sh? run \"hack/netlab.sh down\")", l.ID, l.SwitchNetns)
	}
	if _, err := l.rootNL.LinkByName(l.RootLink); err == nil {
		return fmt.Errorf("netlab: lab %s: link %s exists in the root netns", l.ID, l.RootLink)
	}
	return nil
}

func (l *Lab) buildSwitch() error {
	var err error
	if l.swNs, err = createNamedNetns(l.SwitchNetns); err != nil {
		return err
	}
	l.netnsMade = append(l.netnsMade, l.SwitchNetns)
	if l.swNL, err = netlink.NewHandleAt(l.swNs); err != nil {
		return fmt.Errorf("netlab: netlink in %s: %w", l.SwitchNetns, err)
	}
	la := netlink.NewLinkAttrs()
	la.Name = bridgeName
	if err := l.swNL.LinkAdd(&netlink.Bridge{LinkAttrs: la}); err != nil {
		return fmt.Errorf("netlab: %s: add bridge %s: %w", l.SwitchNetns, bridgeName, err)
	}
	if err := linkUp(l.swNL, bridgeName); err != nil {
		return fmt.Errorf("netlab: %s: %w", l.SwitchNetns, err)
	}
	return nil
}

// buildRootLink makes the veth from the root namespace into the switch and
// gives it the lab's first address. Only this link is added to the root
// namespace; forwarding and IPv6 are off on it, so the hosts can reach the
// root namespace's own addresses but never through it anything beyond.
func (l *Lab) buildRootLink() error {
	la := netlink.NewLinkAttrs()
	la.Name = l.RootLink
	veth := &netlink.Veth{LinkAttrs: la, PeerName: switchRootEnd, PeerNamespace: netlink.NsFd(l.swNs), PeerTxQLen: -1}
	if err := l.rootNL.LinkAdd(veth); err != nil {
		return fmt.Errorf("netlab: add link %s: %w", l.RootLink, err)
	}
	l.rootLinkMade = true
	l.log.Debug("root link added", "link", l.RootLink)
	if err := l.attachPort(switchRootEnd); err != nil {
		return err
	}
	for _, s := range []struct{ path, val string }{
		{"/proc/sys/net/ipv6/conf/" + l.RootLink + "/disable_ipv6", "1"},
		{"/proc/sys/net/ipv4/conf/" + l.RootLink + "/forwarding", "0"},
	} {
		if err := writeSysctl(l.rootNs, s.path, s.val); err != nil && !errors.Is(err, os.ErrNotExist) {
			return err
		}
	}
	link, err := l.rootNL.LinkByName(l.RootLink)
	if err != nil {
		return fmt.Errorf("netlab: %w", err)
	}
	addr := &netlink.Addr{IPNet: ipNet(netip.PrefixFrom(l.RootIP, l.Subnet.Bits()))}
	if err := l.rootNL.AddrAdd(link, addr); err != nil {
		return fmt.Errorf("netlab: %s: add address %s: %w", l.RootLink, addr, err)
	}
	if err := l.rootNL.LinkSetUp(link); err != nil {
		return fmt.Errorf("netlab: %s: up: %w", l.RootLink, err)
	}
	return nil
}

// attachPort makes the switch's link name a port of the bridge and sets it up.
func (l *Lab) attachPort(name string) error {
	port, err := l.swNL.LinkByName(name)
	if err != nil {
		return fmt.Errorf("netlab: %s: %w", l.SwitchNetns, err)
	}
	br, err := l.swNL.LinkByName(bridgeName)
	if err != nil {
		return fmt.Errorf("netlab: %s: %w", l.SwitchNetns, err)
	}
	if err := l.swNL.LinkSetMaster(port, br); err != nil {
		return fmt.Errorf("netlab: %s: %s master %s: %w", l.SwitchNetns, name, bridgeName, err)
	}
	if err := l.swNL.LinkSetUp(port); err != nil {
		return fmt.Errorf("netlab: %s: %s up: %w", l.SwitchNetns, name, err)
	}
	return nil
}

// RouteFromRoot adds a route in the root namespace to dst via host h, for
// tests that reach a host's pods from the test runner (dst is then the
// host's pod CIDR). The route is bound to the lab's link and goes away with
// it; it fails if the root namespace already routes dst (another lab).
func (l *Lab) RouteFromRoot(dst netip.Prefix, h *Host) error {
	link, err := l.rootNL.LinkByName(l.RootLink)
	if err != nil {
		return fmt.Errorf("netlab: %w", err)
	}
	r := &netlink.Route{LinkIndex: link.Attrs().Index, Dst: ipNet(dst.Masked()), Gw: net.IP(h.IP.AsSlice())}
	if err := l.rootNL.RouteAdd(r); err != nil {
		return fmt.Errorf("netlab: route %s via %s (%s): %w", dst, h.IP, h.Name, err)
	}
	l.log.Info("root route added", "dst", dst, "via", h.IP, "host", h.Name)
	return nil
}

// Close kills every process the lab's hosts started (and any other process
// still in one of its namespaces), deletes the root namespace's link and
// removes the namespaces. It is safe to call more than once; later calls
// return the first call's result.
func (l *Lab) Close() error {
	l.closeOnce.Do(func() { l.closeErr = l.close() })
	return l.closeErr
}

func (l *Lab) close() error {
	var errs []error
	for _, h := range l.Hosts {
		errs = append(errs, h.close())
	}
	if l.spawn != nil {
		l.spawn.stop()
	}
	names := l.netnsMade
	// Anything still in the lab's namespaces was started from inside it (a
	// daemon that left its process group, a host-network container).
	for _, n := range names {
		if key, err := nsKeyOf(netnsPath(n)); err == nil && netns.IsPinned(netnsPath(n)) {
			for _, pid := range killPIDsInNetns(key) {
				l.log.Warn("killed leftover process in lab netns", "netns", n, "pid", pid)
			}
		}
	}
	if l.rootNL != nil && l.rootLinkMade {
		if link, err := l.rootNL.LinkByName(l.RootLink); err == nil {
			if err := l.rootNL.LinkDel(link); err != nil {
				errs = append(errs, fmt.Errorf("netlab: delete link %s: %w", l.RootLink, err))
			}
		}
	}
	if l.rootNL != nil {
		l.rootNL.Close()
	}
	if l.swNL != nil {
		l.swNL.Close()
	}
	closeNs(&l.swNs)
	closeNs(&l.rootNs)
	for _, n := range names {
		if err := deleteNamedNetns(n); err != nil {
			errs = append(errs, err)
		}
	}
	if l.lock != nil {
		releaseRun(l.ID, l.lock)
		l.lock = nil
	}
	err := errors.Join(errs...)
	if err != nil {
		l.log.Warn("lab closed with errors", "err", err)
	} else {
		l.log.Info("lab closed")
	}
	return err
}

func closeNs(h *vnetns.NsHandle) {
	if h.IsOpen() {
		_ = h.Close()
	}
}

func linkUp(nl *netlink.Handle, name string) error {
	link, err := nl.LinkByName(name)
	if err != nil {
		return err
	}
	if err := nl.LinkSetUp(link); err != nil {
		return fmt.Errorf("%s up: %w", name, err)
	}
	return nil
}

// writeSysctl writes val to the sysctl file path as seen from the network
// namespace ns (files under /proc/sys/net are per namespace of the thread
// that opens them).
func writeSysctl(ns vnetns.NsHandle, path, val string) error {
	return netns.Do(int(ns), func() error {
		if err := os.WriteFile(path, []byte(val), 0o644); err != nil {
			return fmt.Errorf("netlab: sysctl: %w", err)
		}
		return nil
	})
}

func ipNet(p netip.Prefix) *net.IPNet {
	return &net.IPNet{IP: net.IP(p.Addr().AsSlice()), Mask: net.CIDRMask(p.Bits(), p.Addr().BitLen())}
}
