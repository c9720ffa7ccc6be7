package network_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"io"
	"net"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/containernetworking/cni/libcni"

	"github.com/tugboat/tugboat/api/wait"
	"github.com/tugboat/tugboat/internal/netns"
	"github.com/tugboat/tugboat/kubelet/network"
	"github.com/tugboat/tugboat/kubelet/network/networktest"
)

// testCIDR is this package's pod CIDR; other packages' tests use others.
const testCIDR = "10.244.201.0/24"

func newPod(t *testing.T, n *networktest.Network) network.PodNetwork {
	t.Helper()
	b := make([]byte, 8)
	_, _ = rand.Read(b)
	id := hex.EncodeToString(b)
	path, err := n.CreateNetNS("tugboat-test-" + id)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = netns.Remove(path) })
	return network.PodNetwork{ID: id, NetNSPath: path, Namespace: "default", Name: "pod-" + id[:6], UID: "uid-" + id}
}

// TestPodNetwork sets a pod network up, reaches a listener inside it from
// the host at the pod IP, and tears it down to nothing.
func TestPodNetwork(t *testing.T) {
	n := networktest.New(t, testCIDR)
	ctx := context.Background()
	if err := n.Status(ctx); err != nil {
		t.Fatalf("Status with the default config and Debian's plugins: %v", err)
	}
	pod := newPod(t, n)
	pod.PortMappings = []network.PortMapping{{HostPort: 38080, ContainerPort: 80}}

	ip, err := n.SetUpPod(ctx, pod)
	if err != nil {
		t.Fatal(err)
	}
	if !netip.MustParsePrefix(testCIDR).Contains(ip) {
		t.Fatalf("pod IP %s not in %s", ip, testCIDR)
	}
	if cached, ok := n.PodIP(pod); !ok || cached != ip {
		t.Errorf("PodIP from cache = %v %v, want %s", cached, ok, ip)
	}
	if !hasRule(n, "DNAT", "38080") {
		t.Error("no hostPort DNAT rule for 38080 after ADD")
	}

	// A listener inside the pod's namespace, reached from the host.
	var l net.Listener
	if err := netns.DoPath(pod.NetNSPath, func() (err error) {
		l, err = net.Listen("tcp", net.JoinHostPort(ip.String(), "8080"))
		return err
	}); err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			fmt.Fprint(c, "hello from the pod")
			c.Close()
		}
	}()
	conn, err := net.DialTimeout("tcp", net.JoinHostPort(ip.String(), "8080"), 5*time.Second)
	if err != nil {
		t.Fatalf("host -> pod %s: %v", ip, err)
	}
	got, _ := io.ReadAll(conn)
	conn.Close()
	if string(got) != "hello from the pod" {
		t.Fatalf("read %q", got)
	}
	l.Close()

	if err := n.TearDownPod(ctx, pod); err != nil {
		t.Fatal(err)
	}
	if err := n.TearDownPod(ctx, pod); err != nil {
		t.Fatalf("second TearDownPod: %v", err)
	}
	if err := n.DeleteNetNS(pod.NetNSPath); err != nil {
		t.Fatal(err)
	}
	if err := n.TearDownPod(ctx, pod); err != nil {
		t.Fatalf("TearDownPod after the netns is gone: %v", err)
	}
	if _, err := os.Stat(pod.NetNSPath); !os.IsNotExist(err) {
		t.Errorf("netns %s still there: %v", pod.NetNSPath, err)
	}
	if left := n.Leftovers(); len(left) > 0 {
		t.Errorf("left behind: %v", left)
	}
	counts := map[string]uint64{}
	mfs, err := n.Registry.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != "tugboat_kubelet_cni_duration_seconds" {
			continue
		}
		for _, m := range mf.GetMetric() {
			counts[m.GetLabel()[0].GetValue()] = m.GetHistogram().GetSampleCount()
		}
	}
	if counts["add"] != 1 || counts["del"] != 3 || counts["status"] != 1 {
		t.Errorf("tugboat_kubelet_cni_duration_seconds counts %v, want add 1, del 3, status 1", counts)
	}
}

// TestTearDownAfterNetNSGone is the crash path: the namespace disappeared
// before CNI DEL ran. The IP and the masquerade rules must still go.
func TestTearDownAfterNetNSGone(t *testing.T) {
	n := networktest.New(t, testCIDR)
	ctx := context.Background()
	pod := newPod(t, n)
	if _, err := n.SetUpPod(ctx, pod); err != nil {
		t.Fatal(err)
	}
	if len(n.Leftovers()) == 0 {
		t.Fatal("a set-up pod should show up in Leftovers")
	}
	if err := n.DeleteNetNS(pod.NetNSPath); err != nil {
		t.Fatal(err)
	}
	if err := n.TearDownPod(ctx, pod); err != nil {
		t.Fatal(err)
	}
	wait.Eventually(t, 10*time.Second, "nothing left behind", func() error {
		if left := n.Leftovers(); len(left) > 0 {
			return fmt.Errorf("left behind: %v", left)
		}
		return nil
	})
}

// TestPodWithoutHostPorts: with the default config a pod without
// hostPorts runs the bridge alone (no portmap, no loopback), and still has
// a working lo and a reachable IP. A restarted Manager tears it down to
// nothing with the chain ADD ran, read from libcni's cache.
func TestPodWithoutHostPorts(t *testing.T) {
	n := networktest.New(t, testCIDR)
	ctx := context.Background()
	pod := newPod(t, n)
	ip, err := n.SetUpPod(ctx, pod)
	if err != nil {
		t.Fatal(err)
	}
	if got := cachedChain(t, n, pod.ID); got != "bridge" {
		t.Errorf("cached chain %q, want bridge alone", got)
	}

	// lo is up (CreateNetNS did it): a listener on 127.0.0.1 answers
	// inside the pod, and the pod IP answers from the host.
	err = netns.DoPath(pod.NetNSPath, func() error {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return err
		}
		defer l.Close()
		go func() {
			if c, err := l.Accept(); err == nil {
				c.Close()
			}
		}()
		c, err := net.DialTimeout("tcp", l.Addr().String(), 5*time.Second)
		if err != nil {
			return fmt.Errorf("127.0.0.1 inside the pod: %w", err)
		}
		return c.Close()
	})
	if err != nil {
		t.Fatal(err)
	}
	var l net.Listener
	if err := netns.DoPath(pod.NetNSPath, func() (err error) {
		l, err = net.Listen("tcp", net.JoinHostPort(ip.String(), "8080"))
		return err
	}); err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	go func() {
		if c, err := l.Accept(); err == nil {
			c.Close()
		}
	}()
	c, err := net.DialTimeout("tcp", net.JoinHostPort(ip.String(), "8080"), 5*time.Second)
	if err != nil {
		t.Fatalf("host -> pod %s: %v", ip, err)
	}
	c.Close()

	restarted := restartManager(t, n)
	if err := restarted.TearDownPod(ctx, pod); err != nil {
		t.Fatal(err)
	}
	if err := restarted.DeleteNetNS(pod.NetNSPath); err != nil {
		t.Fatal(err)
	}
	if left := n.Leftovers(); len(left) > 0 {
		t.Errorf("left behind: %v", left)
	}
}

// TestHostPortPodTornDownAfterRestart: a pod with hostPorts runs bridge and
// portmap; a restarted Manager's DEL removes its DNAT rule.
func TestHostPortPodTornDownAfterRestart(t *testing.T) {
	n := networktest.New(t, testCIDR)
	ctx := context.Background()
	pod := newPod(t, n)
	pod.PortMappings = []network.PortMapping{{HostPort: 38081, ContainerPort: 80}}
	if _, err := n.SetUpPod(ctx, pod); err != nil {
		t.Fatal(err)
	}
	if got := cachedChain(t, n, pod.ID); got != "bridge,portmap" {
		t.Errorf("cached chain %q, want bridge,portmap", got)
	}
	if !hasRule(n, "DNAT", "38081") {
		t.Fatal("no hostPort DNAT rule for 38081 after ADD")
	}
	restarted := restartManager(t, n)
	if err := restarted.TearDownPod(ctx, pod); err != nil {
		t.Fatal(err)
	}
	if hasRule(n, "DNAT", "38081") {
		t.Error("hostPort DNAT rule for 38081 still there after DEL by a restarted manager")
	}
	if err := restarted.DeleteNetNS(pod.NetNSPath); err != nil {
		t.Fatal(err)
	}
	if left := n.Leftovers(); len(left) > 0 {
		t.Errorf("left behind: %v", left)
	}
}

// restartManager is a new Manager on n's config and state, as a restarted
// kubelet makes.
func restartManager(t *testing.T, n *networktest.Network) *network.Manager {
	t.Helper()
	m, err := network.New(n.Config(), nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// cachedChain is the plugin chain libcni cached for the pod's ADD.
func cachedChain(t *testing.T, n *networktest.Network, id string) string {
	t.Helper()
	cni := libcni.NewCNIConfigWithCacheDir(nil, filepath.Join(n.Config().StateDir, "cache"), nil)
	atts, err := cni.GetCachedAttachments(id)
	if err != nil || len(atts) != 1 {
		t.Fatalf("cached attachments of %s: %v %v", id, atts, err)
	}
	list, err := libcni.NetworkConfFromBytes(atts[0].Config)
	if err != nil {
		t.Fatal(err)
	}
	var types []string
	for _, p := range list.Plugins {
		types = append(types, p.Network.Type)
	}
	return strings.Join(types, ",")
}

func hasRule(n *networktest.Network, words ...string) bool {
	out, _ := exec.Command("iptables-save", "-t", "nat").Output()
	for _, line := range strings.Split(string(out), "\n") {
		all := true
		for _, w := range words {
			all = all && strings.Contains(line, w)
		}
		if all && strings.Contains(line, n.Name) {
			return true
		}
	}
	return false
}

// TestMasquerade: with the default config the node has one masquerade rule
// for its pod CIDR (the bridge's ipMasq is off); it is rewritten when
// changed behind the kubelet's back and removed when an operator's config
// takes over.
func TestMasquerade(t *testing.T) {
	n := networktest.New(t, testCIDR)
	table := n.Config().MasqueradeTable()
	list := func() string {
		out, err := exec.Command("nft", "list", "table", "ip", table).CombinedOutput()
		if err != nil {
			return ""
		}
		return string(out)
	}
	want := "ip saddr " + testCIDR + " ip daddr != " + testCIDR + " ip daddr != 224.0.0.0/4 masquerade"
	if got := list(); !strings.Contains(got, want) || !strings.Contains(got, "type nat hook postrouting priority srcnat") {
		t.Fatalf("table %s:\n%s\nwant a rule %q", table, got, want)
	}
	b, err := os.ReadFile(filepath.Join(n.Config().ConfDir, network.DefaultConfFile))
	if err != nil || !strings.Contains(string(b), `"ipMasq": false`) {
		t.Errorf("default config keeps the bridge's ipMasq on: %s %v", b, err)
	}

	// Flushed by someone else: the next check puts the rule back.
	if out, err := exec.Command("nft", "flush", "chain", "ip", table, "postrouting").CombinedOutput(); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	if err := n.EnsureMasquerade(); err != nil {
		t.Fatal(err)
	}
	if got := list(); strings.Count(got, "masquerade comment") != 1 {
		t.Fatalf("after a flush and EnsureMasquerade:\n%s", got)
	}
	if err := n.EnsureMasquerade(); err != nil {
		t.Fatal(err)
	}
	if got := list(); strings.Count(got, "masquerade comment") != 1 {
		t.Fatalf("a second EnsureMasquerade changed the table:\n%s", got)
	}

	// With the cluster's pod range, traffic to any pod keeps its source.
	cfg := n.Config()
	cfg.ClusterCIDR = "10.244.0.0/16"
	withCluster, err := network.New(cfg, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := withCluster.EnsureMasquerade(); err != nil {
		t.Fatal(err)
	}
	want = "ip saddr " + testCIDR + " ip daddr != " + testCIDR + " ip daddr != 10.244.0.0/16 ip daddr != 224.0.0.0/4 masquerade"
	if got := list(); !strings.Contains(got, want) || strings.Count(got, "masquerade comment") != 1 {
		t.Fatalf("with a cluster CIDR:\n%s\nwant the one rule %q", got, want)
	}
	cfg.ClusterCIDR = "10.244.0.0/33"
	if _, err := network.New(cfg, nil, nil); err == nil || !strings.Contains(err.Error(), "clusterCIDR") {
		t.Errorf("a bad cluster CIDR: %v, want an error naming clusterCIDR", err)
	}

	// An operator's config takes over: the rule goes.
	op := filepath.Join(n.Config().ConfDir, "05-operator.conflist")
	if err := os.WriteFile(op, []byte(`{"cniVersion":"1.0.0","name":"op","plugins":[{"type":"bridge"}]}`), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := n.EnsureMasquerade(); err != nil {
		t.Fatal(err)
	}
	if got := list(); got != "" {
		t.Errorf("table still there with an operator's config:\n%s", got)
	}
}
