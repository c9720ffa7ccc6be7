package kubelet_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/containerd/containerd/v2/core/snapshots"
	"github.com/containerd/containerd/v2/pkg/namespaces"
	"github.com/vishvananda/netlink"
	"google.golang.org/protobuf/proto"

	"github.com/tugboat/tugboat/api/client"
	v1 "github.com/tugboat/tugboat/api/v1"
	"github.com/tugboat/tugboat/api/wait"
	"github.com/tugboat/tugboat/e2e/cluster"
	"github.com/tugboat/tugboat/kubelet/runtime"
)

// leftovers lists what pods left on node: veths on its bridge, pinned
// network namespaces, host-local IP reservations, per-pod iptables chains,
// sandboxes and containers, active snapshots, pod directories.
func leftovers(t *testing.T, n *cluster.Node) []string {
	t.Helper()
	var out []string
	if err := n.Host.Do(func() error {
		br, err := netlink.LinkByName("cni0")
		if err != nil {
			return nil // no bridge: no veths
		}
		links, err := netlink.LinkList()
		if err != nil {
			return err
		}
		for _, l := range links {
			if l.Attrs().MasterIndex == br.Attrs().Index {
				out = append(out, "veth "+l.Attrs().Name)
			}
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	for _, p := range n.NetNSPins() {
		out = append(out, "netns "+filepath.Base(p))
	}
	if ents, err := os.ReadDir(filepath.Join(n.RootDir, "network", "ipam", "tugboat")); err == nil {
		for _, e := range ents {
			if e.Name() != "lock" && !strings.HasPrefix(e.Name(), "last_reserved_ip") {
				out = append(out, "host-local reservation "+e.Name())
			}
		}
	}
	if ents, err := os.ReadDir(filepath.Join(n.RootDir, "pods")); err == nil {
		for _, e := range ents {
			out = append(out, "pod dir "+e.Name())
		}
	}
	iptables, err := n.Host.Output(context.Background(), exec.Command("iptables-save", "-t", "nat"))
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(iptables), "\n") {
		if strings.HasPrefix(line, "-A CNI-") && !strings.HasPrefix(line, "-A CNI-HOSTPORT") {
			out = append(out, "iptables "+line)
		}
	}
	rt, err := n.Runtime()
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Close()
	ctx := context.Background()
	sbs, err := rt.ListPodSandbox(ctx, runtime.SandboxFilter{})
	if err != nil {
		t.Fatal(err)
	}
	for _, sb := range sbs {
		out = append(out, "sandbox "+sb.ID+" of "+sb.Config.Pod.String())
	}
	cs, err := rt.ListContainers(ctx, runtime.ContainerFilter{})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range cs {
		out = append(out, "container "+c.ID+" of "+c.Pod.String())
	}
	cl, err := n.Containerd.Client(n.Namespace)
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	nsCtx := namespaces.WithNamespace(ctx, n.Namespace)
	if err := cl.SnapshotService("overlayfs").Walk(nsCtx, func(_ context.Context, info snapshots.Info) error {
		if info.Kind == snapshots.KindActive {
			out = append(out, "snapshot "+info.Name)
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	return out
}

func waitNoLeftovers(t *testing.T, n *cluster.Node, timeout time.Duration) {
	t.Helper()
	wait.Eventually(t, timeout, "nothing left behind on "+n.Name, func() error {
		if left := leftovers(t, n); len(left) > 0 {
			return fmt.Errorf("left behind (%d):\n%s", len(left), strings.Join(left, "\n"))
		}
		return nil
	})
}

// TestDeleting50PodsLeavesNothing starts 50 pods on one node, deletes
// them, and checks that no veth, netns, IP reservation, iptables chain,
// container, snapshot or pod directory is left.
func TestDeleting50PodsLeavesNothing(t *testing.T) {
	t.Parallel()
	c := cluster.NewForTest(t, cluster.Options{Binaries: bins, NoScheduler: true, NoControllerManager: true})
	n := c.Nodes[0]
	const count = 50
	ns := "many"
	ensureNamespace(t, c.Client, ns)
	pods := client.For[*v1.Pod](c.Client)
	var wg sync.WaitGroup
	errs := make(chan error, count)
	for i := 0; i < count; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			p := busyboxPod(ns, fmt.Sprintf("p%02d", i), n.Name, "exec sleep 3600")
			p.Spec.TerminationGracePeriodSeconds = proto.Int64(1)
			if _, err := pods.Create(context.Background(), p); err != nil {
				errs <- err
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	wait.Eventually(t, 3*time.Minute, fmt.Sprintf("%d pods running", count), func() error {
		list, _, err := pods.List(context.Background(), client.ListOptions{Namespace: ns})
		if err != nil {
			return err
		}
		up := 0
		for _, p := range list {
			if running(p) {
				up++
			}
		}
		if up != count {
			return fmt.Errorf("%d of %d pods running", up, count)
		}
		return nil
	})
	if left := leftovers(t, n); len(left) < 4*count {
		t.Fatalf("only %d pod resources found before deleting; the leftover check looks in the wrong places: %v", len(left), left)
	}
	for i := 0; i < count; i++ {
		if _, err := pods.Delete(context.Background(), ns, fmt.Sprintf("p%02d", i), client.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	for i := 0; i < count; i++ {
		waitGone(t, c.Client, ns, fmt.Sprintf("p%02d", i), 2*time.Minute)
	}
	waitNoLeftovers(t, n, 30*time.Second)
}
