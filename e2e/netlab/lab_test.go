package netlab

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/vishvananda/netlink"

	"github.com/tugboat/tugboat/api/wait"
	"github.com/tugboat/tugboat/internal/netns"
	"github.com/tugboat/tugboat/internal/syncbuf"
)

const waitFor = 10 * time.Second

// pingOnce sends one echo request; for checking that a host is cut off.
func pingOnce(ctx context.Context, bb string, from *Host, to netip.Addr) error {
	return from.Run(ctx, exec.Command(bb, "ping", "-c1", "-W1", to.String()))
}

// ping succeeds once one echo is answered within waitFor: on a loaded
// machine the first packet (neighbour resolution) may take over a second.
func ping(ctx context.Context, bb string, from *Host, to netip.Addr) error {
	return wait.Until(ctx, waitFor, func(ctx context.Context) error {
		return pingOnce(ctx, bb, from, to)
	})
}

func TestHostsPingEachOther(t *testing.T) {
	t.Parallel()
	bb := busybox(t)
	lab := NewForTest(t, Config{Hosts: 3})
	ctx := t.Context()

	if len(lab.Hosts) != 3 {
		t.Fatalf("got %d hosts, want 3", len(lab.Hosts))
	}
	for _, from := range lab.Hosts {
		for _, to := range lab.Hosts {
			if err := ping(ctx, bb, from, to.IP); err != nil {
				t.Errorf("%s -> %s: %v", from.Name, to.Name, err)
			}
		}
		if err := ping(ctx, bb, from, lab.RootIP); err != nil {
			t.Errorf("%s -> root %s: %v", from.Name, lab.RootIP, err)
		}
	}
}

func TestHostLayout(t *testing.T) {
	t.Parallel()
	lab := NewForTest(t, Config{Hosts: 2, Name: "lay" + randomName(3)})

	if !lab.Subnet.Contains(lab.RootIP) || lab.RootIP != nthAddr(lab.Subnet, 1) {
		t.Errorf("RootIP %s, subnet %s", lab.RootIP, lab.Subnet)
	}
	for i, h := range lab.Hosts {
		if want := fmt.Sprintf("%s-h%d", lab.ID, i+1); h.Name != want {
			t.Errorf("host name %q, want %q", h.Name, want)
		}
		if want := nthAddr(lab.Subnet, 11+i); h.IP != want {
			t.Errorf("%s: IP %s, want %s", h.Name, h.IP, want)
		}
		if h.NetnsPath != "/run/netns/"+h.Name || !netns.IsPinned(h.NetnsPath) {
			t.Errorf("%s: NetnsPath %s is not a mounted netns", h.Name, h.NetnsPath)
		}
		err := h.Do(func() error {
			fwd, err := os.ReadFile("/proc/sys/net/ipv4/ip_forward")
			if err != nil {
				return err
			}
			if strings.TrimSpace(string(fwd)) != "1" {
				return fmt.Errorf("ip_forward = %q", fwd)
			}
			for _, name := range []string{"lo", "eth0"} {
				link, err := netlink.LinkByName(name)
				if err != nil {
					return err
				}
				if link.Attrs().Flags&net.FlagUp == 0 {
					return fmt.Errorf("%s is down", name)
				}
			}
			routes, err := netlink.RouteList(nil, netlink.FAMILY_V4)
			if err != nil {
				return err
			}
			for _, r := range routes {
				if r.Dst == nil || r.Dst.IP.IsUnspecified() {
					return fmt.Errorf("host has a default route: %v", r)
				}
			}
			return nil
		})
		if err != nil {
			t.Errorf("%s: %v", h.Name, err)
		}
	}
	// The root namespace's link: lab address, no forwarding.
	link, err := netlink.LinkByName(lab.RootLink)
	if err != nil {
		t.Fatal(err)
	}
	addrs, err := netlink.AddrList(link, netlink.FAMILY_V4)
	if err != nil || len(addrs) != 1 || !addrs[0].IP.Equal(lab.RootIP.AsSlice()) {
		t.Errorf("%s addresses %v (%v), want %s", lab.RootLink, addrs, err, lab.RootIP)
	}
	fwd, err := os.ReadFile("/proc/sys/net/ipv4/conf/" + lab.RootLink + "/forwarding")
	if err != nil || strings.TrimSpace(string(fwd)) != "0" {
		t.Errorf("%s forwarding = %q (%v), want 0", lab.RootLink, fwd, err)
	}
}

func TestRootReachesServerInHost(t *testing.T) {
	t.Parallel()
	bb := busybox(t)
	lab := NewForTest(t, Config{Hosts: 3})
	ctx := t.Context()
	h2 := lab.Hosts[1]

	docroot := t.TempDir()
	if err := os.WriteFile(filepath.Join(docroot, "index.html"), []byte("hello from "+h2.Name), 0o644); err != nil {
		t.Fatal(err)
	}
	addr := net.JoinHostPort(h2.IP.String(), "8080")
	p, err := h2.Start(ctx, exec.Command(bb, "httpd", "-f", "-v", "-p", addr, "-h", docroot))
	if err != nil {
		t.Fatal(err)
	}
	client := &http.Client{Timeout: time.Second}
	var body string
	err = wait.Until(ctx, waitFor, func(ctx context.Context) error {
		resp, err := client.Get("http://" + addr + "/")
		if err != nil {
			return err
		}
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		body = string(b)
		return err
	})
	if err != nil {
		t.Fatalf("GET http://%s/ from the root netns: %v", addr, err)
	}
	if body != "hello from "+h2.Name {
		t.Errorf("body %q", body)
	}
	// The server listens in host 2 only: its address is not the root's.
	if _, err := os.Stat(p.LogPath()); err != nil {
		t.Errorf("process log: %v", err)
	}
	if p.Exited() {
		t.Fatalf("httpd exited: %v", p.Wait(ctx))
	}
}

// listenIn opens a TCP listener in h on its lab IP and serves "ok\n" to
// every connection until the test ends.
func listenIn(t *testing.T, h *Host, ip netip.Addr) string {
	t.Helper()
	var ln net.Listener
	err := h.Do(func() error {
		var err error
		ln, err = net.Listen("tcp", net.JoinHostPort(ip.String(), "0"))
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			_, _ = io.WriteString(c, "ok\n")
			c.Close()
		}
	}()
	return ln.Addr().String()
}

func dialOK(ctx context.Context, addr string) error {
	d := net.Dialer{Timeout: 300 * time.Millisecond}
	c, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return err
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(time.Second))
	b, err := io.ReadAll(c)
	if err != nil {
		return err
	}
	if string(b) != "ok\n" {
		return fmt.Errorf("read %q", b)
	}
	return nil
}

func TestDisconnectReconnect(t *testing.T) {
	t.Parallel()
	bb := busybox(t)
	lab := NewForTest(t, Config{Hosts: 2})
	ctx := t.Context()
	h1, h2 := lab.Hosts[0], lab.Hosts[1]
	addr := listenIn(t, h2, h2.IP)

	if err := wait.Until(ctx, waitFor, func(ctx context.Context) error { return dialOK(ctx, addr) }); err != nil {
		t.Fatalf("before Disconnect: root -> %s: %v", addr, err)
	}
	if err := ping(ctx, bb, h1, h2.IP); err != nil {
		t.Fatalf("before Disconnect: %v", err)
	}

	if err := h2.Disconnect(); err != nil {
		t.Fatal(err)
	}
	if err := dialOK(ctx, addr); err == nil {
		t.Errorf("root reached %s of a disconnected host", addr)
	}
	if err := pingOnce(ctx, bb, h1, h2.IP); err == nil {
		t.Errorf("%s pinged disconnected %s", h1.Name, h2.Name)
	}
	if err := pingOnce(ctx, bb, h2, h1.IP); err == nil {
		t.Errorf("disconnected %s pinged %s", h2.Name, h1.Name)
	}

	if err := h2.Reconnect(); err != nil {
		t.Fatal(err)
	}
	if err := wait.Until(ctx, waitFor, func(ctx context.Context) error { return dialOK(ctx, addr) }); err != nil {
		t.Errorf("after Reconnect: root -> %s: %v", addr, err)
	}
	if err := wait.Until(ctx, waitFor, func(ctx context.Context) error { return ping(ctx, bb, h1, h2.IP) }); err != nil {
		t.Errorf("after Reconnect: %v", err)
	}
}

func TestStopKillsProcesses(t *testing.T) {
	t.Parallel()
	bb := busybox(t)
	lab := NewForTest(t, Config{Hosts: 1})
	ctx := t.Context()
	h := lab.Hosts[0]

	sleeper, err := h.Start(ctx, exec.Command(bb, "sleep", "600"))
	if err != nil {
		t.Fatal(err)
	}
	// A shell whose child stays in its process group, as a kubelet's CNI
	// plugins do.
	var out syncbuf.Buffer
	sh := exec.Command(bb, "sh", "-c", bb+" sleep 600 & echo $!; wait")
	sh.Stdout = &out
	shell, err := h.Start(ctx, sh)
	if err != nil {
		t.Fatal(err)
	}
	var child int
	err = wait.Until(ctx, waitFor, func(context.Context) error {
		child, err = strconv.Atoi(strings.TrimSpace(out.String()))
		return err
	})
	if err != nil {
		t.Fatalf("child pid: %v", err)
	}
	if processGone(child) == nil {
		t.Fatalf("child %d not running", child)
	}

	// Churn threads: locked goroutines that exit without unlocking make the
	// runtime end their threads; that must not kill our processes.
	for range 20 {
		done := make(chan struct{})
		go func() {
			runtime.LockOSThread()
			close(done)
		}()
		<-done
	}
	// A negative check has nothing to poll for: give a wrongly sent
	// SIGKILL a bounded moment to show.
	wctx, cancel := context.WithTimeout(ctx, 100*time.Millisecond)
	defer cancel()
	for _, p := range []*Proc{sleeper, shell} {
		if err := p.Wait(wctx); !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("pid %d exited before Stop: %v", p.PID(), err)
		}
	}

	if err := h.Stop(); err != nil {
		t.Fatal(err)
	}
	for _, p := range []*Proc{sleeper, shell} {
		if !p.Exited() {
			t.Errorf("pid %d still running after Stop", p.PID())
		}
		var ee *exec.ExitError
		if err := p.Wait(ctx); !errors.As(err, &ee) || ee.ProcessState.String() != "signal: killed" {
			t.Errorf("pid %d: exit %v, want signal: killed", p.PID(), err)
		}
	}
	if err := wait.Until(ctx, waitFor, func(context.Context) error { return processGone(child) }); err != nil {
		t.Errorf("grandchild: %v", err)
	}

	// The host can run processes again, as a rebooted node.
	if err := h.Run(ctx, exec.Command(bb, "true")); err != nil {
		t.Errorf("run after Stop: %v", err)
	}
}

func TestRunReportsOutputAndContext(t *testing.T) {
	t.Parallel()
	bb := busybox(t)
	lab := NewForTest(t, Config{Hosts: 1})
	h := lab.Hosts[0]

	out, err := h.Output(t.Context(), exec.Command(bb, "ip", "-4", "-o", "addr", "show", "dev", "eth0"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(out), h.Addr.String()) {
		t.Errorf("ip addr in host: %q, want %s", out, h.Addr)
	}
	err = h.Run(t.Context(), exec.Command(bb, "sh", "-c", "echo boom; exit 3"))
	if err == nil || !strings.Contains(err.Error(), "boom") || !strings.Contains(err.Error(), "exit status 3") {
		t.Errorf("failing Run: %v", err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 200*time.Millisecond)
	defer cancel()
	if err := h.Run(ctx, exec.Command(bb, "sleep", "600")); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("Run of sleep 600 with a 200ms context: %v, want DeadlineExceeded", err)
	}
}

func TestRouteFromRoot(t *testing.T) {
	t.Parallel()
	lab := NewForTest(t, Config{Hosts: 2})
	h2 := lab.Hosts[1]

	// A "pod" address inside host 2 (on its loopback), outside the lab
	// subnet, on a /24 next to it that the root netns does not route.
	podNet := netip.PrefixFrom(nthAddr(lab.Subnet, 256*100), 24) // 10.123.X+100.0/24
	pod := nthAddr(podNet, 5)
	err := h2.Do(func() error {
		lo, err := netlink.LinkByName("lo")
		if err != nil {
			return err
		}
		return netlink.AddrAdd(lo, &netlink.Addr{IPNet: ipNet(netip.PrefixFrom(pod, 32))})
	})
	if err != nil {
		t.Fatal(err)
	}
	addr := listenIn(t, h2, pod)
	if err := lab.RouteFromRoot(podNet, h2); err != nil {
		t.Fatal(err)
	}
	if err := wait.Until(t.Context(), waitFor, func(ctx context.Context) error { return dialOK(ctx, addr) }); err != nil {
		t.Errorf("root -> pod %s via %s: %v", addr, h2.IP, err)
	}
}

func TestCloseLeavesNothing(t *testing.T) {
	t.Parallel()
	RequireRoot(t)
	bb := busybox(t)
	ctx := t.Context()
	lab, err := New(ctx, Config{Hosts: 2, LogDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	made := leftovers(t, lab.ID)
	for _, want := range []string{"netns " + lab.ID + "-sw", "netns " + lab.ID + "-h1", "netns " + lab.ID + "-h2", "link " + lab.RootLink, "lock " + runLockPath(lab.ID)} {
		if !slices.Contains(made, want) {
			t.Errorf("lab made %v, want %s among them", made, want)
		}
	}
	p, err := lab.Hosts[1].Start(ctx, exec.Command(bb, "sleep", "600"))
	if err != nil {
		t.Fatal(err)
	}
	if err := lab.Close(); err != nil {
		t.Fatal(err)
	}
	if got := leftovers(t, lab.ID); len(got) > 0 {
		t.Errorf("after Close: %v", got)
	}
	if !p.Exited() {
		t.Errorf("process %d survived Close", p.PID())
	}
	if err := lab.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
	if _, err := lab.Hosts[0].Start(ctx, exec.Command(bb, "true")); err == nil {
		t.Error("Start after Close succeeded")
	}
}
