package server

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/miekg/dns"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	v1 "github.com/tugboat/tugboat/api/v1"
	"github.com/tugboat/tugboat/internal/netns"
	"github.com/tugboat/tugboat/kubelet/runtime"
)

// startDNS answers web.default.svc.cluster.local. with 10.96.0.20 and
// everything else with NXDOMAIN, on a loopback port.
func startDNS(t *testing.T) string {
	t.Helper()
	pc, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &dns.Server{PacketConn: pc, Handler: dns.HandlerFunc(func(w dns.ResponseWriter, r *dns.Msg) {
		m := new(dns.Msg)
		m.SetReply(r)
		if r.Question[0].Name == "web.default.svc.cluster.local." {
			rr, _ := dns.NewRR("web.default.svc.cluster.local. 5 IN A 10.96.0.20")
			m.Answer = append(m.Answer, rr)
		} else {
			m.Rcode = dns.RcodeNameError
		}
		_ = w.WriteMsg(m)
	})}
	go func() { _ = srv.ActivateAndServe() }()
	t.Cleanup(func() { _ = srv.Shutdown() })
	return pc.LocalAddr().String()
}

// listenTCP accepts connections on a loopback port until the test ends.
func listenTCP(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			c.Close()
		}
	}()
	return l.Addr().String()
}

// listenUDP answers every datagram on a loopback port when echo is set,
// and otherwise reads them in silence.
func listenUDP(t *testing.T, echo bool) string {
	t.Helper()
	pc, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { pc.Close() })
	go func() {
		buf := make([]byte, 512)
		for {
			n, from, err := pc.ReadFrom(buf)
			if err != nil {
				return
			}
			if echo {
				_, _ = pc.WriteTo(buf[:n], from)
			}
		}
	}()
	return pc.LocalAddr().String()
}

// closedPort is a loopback address:port nothing listens on (proto "tcp"
// or "udp").
func closedPort(t *testing.T, proto string) string {
	t.Helper()
	var addr string
	if proto == "tcp" {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		addr = l.Addr().String()
		l.Close()
	} else {
		pc, err := net.ListenPacket("udp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		addr = pc.LocalAddr().String()
		pc.Close()
	}
	return addr
}

func port(t *testing.T, addr string) int32 {
	t.Helper()
	ap, err := netip.ParseAddrPort(addr)
	if err != nil {
		t.Fatal(err)
	}
	return int32(ap.Port())
}

// TestCheckService probes real sockets on loopback (standing in for a
// ClusterIP and its endpoints): a TCP port that accepts, one that
// refuses, UDP ports that answer, refuse and stay silent, SCTP (not
// probed), and the DNS name.
func TestCheckService(t *testing.T) {
	addr := startDNS(t)
	s := New(Config{NodeName: "n1", ClusterDNS: addr, ConnectTimeout: 300 * time.Millisecond})
	ctx := context.Background()

	open, shut := listenTCP(t), closedPort(t, "tcp")
	echo, silent, shutUDP := listenUDP(t, true), listenUDP(t, false), closedPort(t, "udp")
	resp, err := s.CheckService(ctx, &v1.CheckServiceRequest{DnsName: "web.default.svc.cluster.local", ClusterIp: "127.0.0.1",
		Ports: []*v1.ServicePortRef{
			{Protocol: "TCP", Port: port(t, open), Endpoints: []string{open, shut}},
			{Port: port(t, shut)},
			{Protocol: "udp", Port: port(t, echo)},
			{Protocol: "UDP", Port: port(t, silent)},
			{Protocol: "UDP", Port: port(t, shutUDP)},
			{Protocol: "SCTP", Port: 9},
		}})
	if err != nil {
		t.Fatal(err)
	}
	if d := resp.Dns; d.Rcode != "NOERROR" || fmt.Sprint(d.Addresses) != "[10.96.0.20]" || d.Server != addr {
		t.Errorf("dns: %v", d)
	}
	var got []string
	for _, p := range resp.Ports {
		g := fmt.Sprintf("%s/%d=%s", p.Protocol, p.Port, p.ClusterIp.Result)
		for _, e := range p.Endpoints {
			g += fmt.Sprintf(" %s=%s", e.Address, e.Result)
		}
		got = append(got, g)
	}
	want := []string{
		fmt.Sprintf("TCP/%d=connected %s=connected %s=refused", port(t, open), open, shut),
		fmt.Sprintf("TCP/%d=refused", port(t, shut)),
		fmt.Sprintf("UDP/%d=connected", port(t, echo)),
		fmt.Sprintf("UDP/%d=no-reply", port(t, silent)),
		fmt.Sprintf("UDP/%d=refused", port(t, shutUDP)),
		"SCTP/9=not-probed",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("ports:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if c := resp.Ports[1].ClusterIp; c.Address != shut || !strings.Contains(c.Error, "connection refused") {
		t.Errorf("refused port: %v", c)
	}

	// A typo: NXDOMAIN, reported, not an error. No ClusterIP: no ports.
	resp, err = s.CheckService(ctx, &v1.CheckServiceRequest{DnsName: "wbe.default.svc.cluster.local"})
	if err != nil || resp.Dns.Rcode != "NXDOMAIN" || len(resp.Dns.Addresses) != 0 || resp.Ports != nil {
		t.Errorf("typo: %v, %v", resp, err)
	}

	// Bad input names the field; an unconfigured DNS is reported.
	for _, bad := range []struct {
		req  *v1.CheckServiceRequest
		want string
	}{
		{&v1.CheckServiceRequest{ClusterIp: "nope"}, `clusterIp "nope"`},
		{&v1.CheckServiceRequest{ClusterIp: "10.96.0.20", Ports: []*v1.ServicePortRef{{Port: 70000}}}, "ports[0].port 70000"},
		{&v1.CheckServiceRequest{ClusterIp: "10.96.0.20", Ports: []*v1.ServicePortRef{{Port: 80, Protocol: "ICMP"}}}, `ports[0].protocol "ICMP"`},
		{&v1.CheckServiceRequest{ClusterIp: "10.96.0.20", Ports: []*v1.ServicePortRef{{Port: 80, Endpoints: []string{"10.244.1.5"}}}}, `ports[0].endpoints[0] "10.244.1.5": want ip:port`},
		{&v1.CheckServiceRequest{ClusterIp: "10.96.0.20", Ports: []*v1.ServicePortRef{{Port: 80, Endpoints: make([]string, MaxProbedEndpoints+1)}}}, "ports[0].endpoints: 9 given, at most 8"},
	} {
		if _, err := s.CheckService(ctx, bad.req); err == nil || !strings.Contains(err.Error(), bad.want) {
			t.Errorf("CheckService(%v) = %v, want an error naming %s", bad.req, err, bad.want)
		}
	}
	s = New(Config{NodeName: "n1"})
	resp, _ = s.CheckService(ctx, &v1.CheckServiceRequest{DnsName: "web"})
	if resp.Dns.Error == "" {
		t.Errorf("unconfigured: %v", resp)
	}
}

func TestConnectResult(t *testing.T) {
	for _, c := range []struct {
		err  error
		want string
	}{
		{nil, ConnectConnected},
		{&net.OpError{Op: "dial", Err: os.NewSyscallError("connect", syscall.ECONNREFUSED)}, ConnectRefused},
		{&net.OpError{Op: "read", Err: os.NewSyscallError("read", syscall.ECONNREFUSED)}, ConnectRefused},
		{&net.OpError{Op: "dial", Err: os.NewSyscallError("connect", syscall.EHOSTUNREACH)}, ConnectUnreachable},
		{&net.OpError{Op: "dial", Err: os.NewSyscallError("connect", syscall.ENETUNREACH)}, ConnectUnreachable},
		{&net.OpError{Op: "dial", Err: context.DeadlineExceeded}, ConnectTimeout},
		{&net.OpError{Op: "dial", Err: os.NewSyscallError("connect", syscall.ETIMEDOUT)}, ConnectTimeout},
		{fmt.Errorf("%w within 2s", errNoReply), ConnectNoReply},
		{errors.New("something else"), ConnectError},
	} {
		if got := connectResult(c.err); got != c.want {
			t.Errorf("connectResult(%v) = %s, want %s", c.err, got, c.want)
		}
	}
}

// TestCheckServiceFromAPod: the probe is made from the network namespace of
// the oldest running pod that has one of its own (hostNetwork pods and
// vanished namespaces are passed over), and the answer names the pod. The
// listener lives only inside that namespace, so connecting proves where
// the connection came from. Needs root (it makes a network namespace).
func TestCheckServiceFromAPod(t *testing.T) {
	if os.Geteuid() != 0 {
		if os.Getenv("CI") == "true" {
			t.Fatal("needs root")
		}
		t.Skip("needs root (makes a network namespace)")
	}
	dir := filepath.Join(t.TempDir(), "netns")
	nsPath, err := netns.Create(dir, "client")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := netns.Remove(nsPath); err != nil {
			t.Error(err)
		}
		if err := netns.ReleaseDir(dir); err != nil {
			t.Error(err)
		}
	})
	var inside string
	if err := netns.DoPath(nsPath, func() error {
		inside = listenTCP(t)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	pod := func(name string, age time.Duration, hostNet bool, ns string) runtime.SandboxStatus {
		return runtime.SandboxStatus{ID: name, State: runtime.SandboxReady, CreatedAt: now.Add(-age), Config: runtime.SandboxConfig{
			Pod: runtime.PodRef{Namespace: "default", Name: name}, HostNetwork: hostNet, NetNSPath: ns}}
	}
	rt := &fakeRuntime{sandboxes: []runtime.SandboxStatus{
		pod("young", time.Minute, false, nsPath),
		pod("hostnet", time.Hour, true, ""),
		pod("gone", time.Hour, false, filepath.Join(t.TempDir(), "no-such-netns")),
		pod("client", 10*time.Minute, false, nsPath),
	}}
	s := New(Config{NodeName: "n1", Runtime: rt, ConnectTimeout: time.Second})
	resp, err := s.CheckService(context.Background(), &v1.CheckServiceRequest{ClusterIp: "127.0.0.1",
		Ports: []*v1.ServicePortRef{{Port: port(t, inside)}}})
	if err != nil {
		t.Fatal(err)
	}
	if resp.SourcePod != "default/client" || resp.Ports[0].ClusterIp.Result != ConnectConnected {
		t.Fatalf("from %q: %v; want a connection from default/client's namespace", resp.SourcePod, resp.Ports)
	}
	// From a named pod (trace service --from): that pod's namespace, even
	// when an older one runs; a hostNetwork pod's is the node's; a pod
	// without a ready sandbox here is NotFound.
	resp, err = s.CheckService(context.Background(), &v1.CheckServiceRequest{FromPod: "default/young", ClusterIp: "127.0.0.1",
		Ports: []*v1.ServicePortRef{{Port: port(t, inside)}}})
	if err != nil || resp.SourcePod != "default/young" || resp.Ports[0].ClusterIp.Result != ConnectConnected {
		t.Fatalf("from young: %v, %v", resp, err)
	}
	resp, err = s.CheckService(context.Background(), &v1.CheckServiceRequest{FromPod: "default/hostnet", ClusterIp: "127.0.0.1",
		Ports: []*v1.ServicePortRef{{Port: port(t, inside)}}})
	if err != nil || resp.SourcePod != "" || resp.Ports[0].ClusterIp.Result != ConnectRefused {
		t.Fatalf("from hostnet: %v, %v; want the node's namespace", resp, err)
	}
	for pod, want := range map[string]string{"default/nope": "fromPod default/nope: no ready sandbox on node n1",
		"default/gone": "fromPod default/gone: its network namespace on node n1 is gone"} {
		if _, err := s.CheckService(context.Background(), &v1.CheckServiceRequest{FromPod: pod, ClusterIp: "127.0.0.1",
			Ports: []*v1.ServicePortRef{{Port: port(t, inside)}}}); status.Code(err) != codes.NotFound || !strings.Contains(err.Error(), want) {
			t.Errorf("from %s: %v, want NotFound %q", pod, err, want)
		}
	}
	// No pod of its own: from the node's namespace, where nothing listens.
	rt.sandboxes = rt.sandboxes[1:3]
	resp, err = s.CheckService(context.Background(), &v1.CheckServiceRequest{ClusterIp: "127.0.0.1",
		Ports: []*v1.ServicePortRef{{Port: port(t, inside)}}})
	if err != nil || resp.SourcePod != "" || resp.Ports[0].ClusterIp.Result != ConnectRefused {
		t.Fatalf("from %q: %v, %v; want a refused connection from the node's namespace", resp.GetSourcePod(), resp.GetPorts(), err)
	}
}
