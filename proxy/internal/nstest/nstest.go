// Package nstest makes network namespaces for the proxy's tests, so no
// test ever programs the host's own namespace: a named namespace per test
// (visible to `ip netns exec` and nsenter), links between them, and
// processes and sockets inside them. Everything a test makes is removed
// when it ends; deleting a namespace removes its links, routes and
// nftables tables with it.
package nstest

import (
	"bufio"
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/vishvananda/netlink"
	vnetns "github.com/vishvananda/netns"

	"github.com/tugboat/tugboat/internal/netns"
)

// Prefix starts the name of every namespace the tests make:
// tbpx-<test process id>-<label>-<random>.
const Prefix = "tbpx-"

var staleOnce sync.Once

// removeStale deletes the namespaces of test processes that are gone (a
// test binary killed by its timeout runs no cleanup).
func removeStale() {
	entries, _ := os.ReadDir(netns.DefaultDir)
	for _, e := range entries {
		rest, ok := strings.CutPrefix(e.Name(), Prefix)
		if !ok {
			continue
		}
		pid, _, _ := strings.Cut(rest, "-")
		if _, err := strconv.Atoi(pid); err != nil {
			continue
		}
		if _, err := os.Stat("/proc/" + pid); err == nil {
			continue // still running
		}
		_ = netns.Remove(filepath.Join(netns.DefaultDir, e.Name()))
	}
}

// RequireRoot skips the test unless it runs as root (namespaces need
// CAP_SYS_ADMIN and CAP_NET_ADMIN).
func RequireRoot(t testing.TB) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("needs root: makes network namespaces")
	}
}

// NS is a named network namespace owned by one test.
type NS struct {
	t      testing.TB
	Name   string
	Handle vnetns.NsHandle
	NL     *netlink.Handle
}

// New makes a namespace with loopback up (netns.Create), removed when
// the test ends.
func New(t testing.TB, label string) *NS {
	t.Helper()
	RequireRoot(t)
	staleOnce.Do(removeStale)
	b := make([]byte, 3)
	_, _ = rand.Read(b)
	name := fmt.Sprintf("%s%d-%s-%s", Prefix, os.Getpid(), label, hex.EncodeToString(b))
	path, err := netns.Create(netns.DefaultDir, name)
	if err != nil {
		t.Fatalf("creating network namespace %s: %v", name, err)
	}
	h, err := vnetns.GetFromPath(path)
	if err != nil {
		_ = netns.Remove(path)
		t.Fatalf("opening network namespace %s: %v", name, err)
	}
	nl, err := netlink.NewHandleAt(h)
	if err != nil {
		h.Close()
		_ = netns.Remove(path)
		t.Fatalf("netlink in %s: %v", name, err)
	}
	ns := &NS{t: t, Name: name, Handle: h, NL: nl}
	t.Cleanup(func() {
		nl.Close()
		h.Close()
		if err := netns.Remove(path); err != nil {
			t.Errorf("deleting network namespace %s: %v", name, err)
		}
	})
	return ns
}

// Fd is the namespace's file descriptor.
func (n *NS) Fd() int { return int(n.Handle) }

// Do runs fn inside the namespace.
func (n *NS) Do(fn func() error) error { return netns.Do(n.Fd(), fn) }

// Sysctl writes a /proc/sys/net value inside the namespace
// ("net/ipv4/ip_forward").
func (n *NS) Sysctl(path, value string) {
	n.t.Helper()
	err := n.Do(func() error { return os.WriteFile(filepath.Join("/proc/sys", path), []byte(value), 0o644) })
	if err != nil {
		n.t.Fatalf("%s: sysctl %s=%s: %v", n.Name, path, value, err)
	}
}

// Exec runs a command inside the namespace and returns its combined
// output.
func (n *NS) Exec(ctx context.Context, name string, args ...string) (string, error) {
	var out bytes.Buffer
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Stdout, cmd.Stderr = &out, &out
	// Forked from a thread inside the namespace, the child starts there.
	err := n.Do(cmd.Start)
	if err == nil {
		err = cmd.Wait()
	}
	if err != nil {
		return out.String(), fmt.Errorf("%s %s in %s: %w: %s", name, strings.Join(args, " "), n.Name, err, out.String())
	}
	return out.String(), nil
}

// Start starts a long-running command inside the namespace, killed when
// the test ends.
func (n *NS) Start(name string, args ...string) *exec.Cmd {
	n.t.Helper()
	cmd := exec.Command(name, args...)
	if err := n.Do(cmd.Start); err != nil {
		n.t.Fatalf("starting %s in %s: %v", name, n.Name, err)
	}
	n.t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	})
	return cmd
}

// Listen opens a listener inside the namespace.
func (n *NS) Listen(network, addr string) net.Listener {
	n.t.Helper()
	var l net.Listener
	err := n.Do(func() (err error) { l, err = net.Listen(network, addr); return err })
	if err != nil {
		n.t.Fatalf("listening on %s %s in %s: %v", network, addr, n.Name, err)
	}
	n.t.Cleanup(func() { _ = l.Close() })
	return l
}

// Dial connects from inside the namespace.
func (n *NS) Dial(network, addr string, timeout time.Duration) (net.Conn, error) {
	var c net.Conn
	err := n.Do(func() (err error) { c, err = net.DialTimeout(network, addr, timeout); return err })
	return c, err
}

// AddAddr puts cidr on the link.
func (n *NS) AddAddr(link, cidr string) {
	n.t.Helper()
	l, err := n.NL.LinkByName(link)
	if err != nil {
		n.t.Fatalf("%s: %s: %v", n.Name, link, err)
	}
	a, err := netlink.ParseAddr(cidr)
	if err != nil {
		n.t.Fatal(err)
	}
	if err := n.NL.AddrAdd(l, a); err != nil {
		n.t.Fatalf("%s: addr add %s dev %s: %v", n.Name, cidr, link, err)
	}
}

// Up sets a link up.
func (n *NS) Up(link string) {
	n.t.Helper()
	l, err := n.NL.LinkByName(link)
	if err == nil {
		err = n.NL.LinkSetUp(l)
	}
	if err != nil {
		n.t.Fatalf("%s: %s up: %v", n.Name, link, err)
	}
}

// DefaultVia adds a default route through gw.
func (n *NS) DefaultVia(gw string) {
	n.t.Helper()
	if err := n.NL.RouteAdd(&netlink.Route{Gw: net.ParseIP(gw)}); err != nil {
		n.t.Fatalf("%s: default via %s: %v", n.Name, gw, err)
	}
}

// Veth links n (end name here) and peer (end peerName there), both up.
func (n *NS) Veth(name string, peer *NS, peerName string) {
	n.t.Helper()
	v := &netlink.Veth{LinkAttrs: netlink.LinkAttrs{Name: name}, PeerName: peerName, PeerNamespace: netlink.NsFd(peer.Fd())}
	if err := n.NL.LinkAdd(v); err != nil {
		n.t.Fatalf("veth %s/%s -- %s/%s: %v", n.Name, name, peer.Name, peerName, err)
	}
	n.Up(name)
	peer.Up(peerName)
}

// Bridge makes a bridge with address cidr, up.
func (n *NS) Bridge(name, cidr string) {
	n.t.Helper()
	if err := n.NL.LinkAdd(&netlink.Bridge{LinkAttrs: netlink.LinkAttrs{Name: name}}); err != nil {
		n.t.Fatalf("%s: bridge %s: %v", n.Name, name, err)
	}
	n.AddAddr(name, cidr)
	n.Up(name)
}

// Enslave attaches link to bridge, in hairpin mode (as the CNI bridge
// plugin's hairpinMode does: with br_netfilter, a pod's packet DNATed
// back to the pod itself is bridged out of the port it came in by).
func (n *NS) Enslave(link, bridge string) {
	n.t.Helper()
	l, err := n.NL.LinkByName(link)
	if err != nil {
		n.t.Fatal(err)
	}
	br, err := n.NL.LinkByName(bridge)
	if err != nil {
		n.t.Fatal(err)
	}
	if err := n.NL.LinkSetMaster(l, br); err != nil {
		n.t.Fatalf("%s: %s master %s: %v", n.Name, link, bridge, err)
	}
	if err := n.NL.LinkSetHairpin(l, true); err != nil {
		n.t.Fatalf("%s: %s hairpin on: %v", n.Name, link, err)
	}
}

// Lab is one node with a pod bridge and pods on it, plus a peer host on
// the node's "eth0" subnet, all in namespaces of the test's own:
//
//	Peer (192.168.77.2) --- Node eth0 192.168.77.1
//	                        Node cni0 10.244.1.1/24 --- Pods[i] 10.244.1.(i+2), default via 10.244.1.1
type Lab struct {
	Node, Peer *NS
	Pods       []*NS
}

// Lab addresses.
const (
	NodeIP    = "192.168.77.1"
	PeerIP    = "192.168.77.2"
	BridgeIP  = "10.244.1.1"
	PodCIDR   = "10.244.1.0/24"
	LabSubnet = "192.168.77.0/24"
)

// PodIP is the address of Lab.Pods[i].
func PodIP(i int) string { return fmt.Sprintf("10.244.1.%d", i+2) }

// NewLab builds a Lab with n pods.
func NewLab(t testing.TB, n int) *Lab {
	t.Helper()
	l := &Lab{Node: New(t, "node"), Peer: New(t, "peer")}
	l.Node.Sysctl("net/ipv4/ip_forward", "1")
	l.Node.Veth("eth0", l.Peer, "eth0")
	l.Node.AddAddr("eth0", NodeIP+"/24")
	l.Peer.AddAddr("eth0", PeerIP+"/24")
	l.Peer.DefaultVia(NodeIP)
	l.Node.Bridge("cni0", BridgeIP+"/24")
	for i := 0; i < n; i++ {
		pod := New(t, fmt.Sprintf("pod%d", i+1))
		hostEnd := fmt.Sprintf("veth%d", i+1)
		l.Node.Veth(hostEnd, pod, "eth0")
		l.Node.Enslave(hostEnd, "cni0")
		pod.AddAddr("eth0", PodIP(i)+"/24")
		pod.DefaultVia(BridgeIP)
		l.Pods = append(l.Pods, pod)
	}
	return l
}

// Serve answers every TCP connection on addr inside ns with "<name>
// <client address as seen>\n", so tests see which endpoint answered and
// whether the client was masqueraded.
func Serve(t testing.TB, ns *NS, name, addr string) {
	t.Helper()
	ln := ns.Listen("tcp", addr)
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			host, _, _ := net.SplitHostPort(c.RemoteAddr().String())
			fmt.Fprintf(c, "%s %s\n", name, host)
			c.Close()
		}
	}()
}

// Ask connects from ns to addr and returns the line Serve wrote.
func Ask(ns *NS, addr string) (string, error) {
	c, err := ns.Dial("tcp", addr, 3*time.Second)
	if err != nil {
		return "", err
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(3 * time.Second))
	line, err := bufio.NewReader(c).ReadString('\n')
	if err != nil && err != io.EOF {
		return "", err
	}
	return strings.TrimSpace(line), nil
}
