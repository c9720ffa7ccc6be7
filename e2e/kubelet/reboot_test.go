package kubelet_test

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/google/nftables"
	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"

	"github.com/tugboat/tugboat/api/client"
	v1 "github.com/tugboat/tugboat/api/v1"
	"github.com/tugboat/tugboat/api/wait"
	"github.com/tugboat/tugboat/e2e/cluster"
	"github.com/tugboat/tugboat/kubelet/network"
)

// TestContainerdRestart restarts containerd under a running kubelet: while
// it is down the node is NotReady with ContainerRuntimeNotReady; once it is
// back the node is Ready again and the pod's container, which its shim
// kept running, is the same one (same ID, no restart) and still serves.
func TestContainerdRestart(t *testing.T) {
	t.Parallel()
	c := cluster.NewForTest(t, cluster.Options{Binaries: bins, NoScheduler: true, NoControllerManager: true,
		KubeletArgs: []string{"--node-status-interval", "1s"}})
	n := c.Nodes[0]
	ns := "ctrd-restart"
	createPod(t, c.Client, busyboxPod(ns, "web", n.Name, "mkdir -p /www && echo up > /www/index.html && exec httpd -f -p 80 -h /www"))
	before := waitPod(t, c.Client, ns, "web", 60*time.Second, "Running", running)

	err := n.Containerd.Restart(context.Background(), func() error {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if err := n.WaitReadyCondition(ctx, "False", "container runtime is down"); err != nil {
			return err
		}
		node, err := client.For[*v1.Node](c.Client).Get(ctx, "", n.Name)
		if err != nil {
			return err
		}
		for _, cond := range node.GetStatus().GetConditions() {
			if cond.Type == "Ready" && cond.Reason != "ContainerRuntimeNotReady" {
				t.Errorf("Ready condition with containerd down: %v, want reason ContainerRuntimeNotReady", cond)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := n.WaitReady(ctx); err != nil {
		t.Fatal(err)
	}
	after := waitPod(t, c.Client, ns, "web", 30*time.Second, "Running", running)
	b, a := containerStatus(before, "main"), containerStatus(after, "main")
	if a.ContainerId != b.ContainerId || a.RestartCount != 0 {
		t.Errorf("container after the containerd restart: %v, before: %v", a, b)
	}
	if err := n.RouteFromRoot(); err != nil {
		t.Fatal(err)
	}
	if body := fetch(t, "http://"+after.Status.PodIp+"/"); body != "up\n" {
		t.Errorf("GET = %q", body)
	}
}

// TestNodeReboot simulates a power cut and boot of a node: the kubelet,
// containerd, every shim and container process die; the pinned network
// namespaces, the bridge and the masquerade table go as they do with the
// kernel's state, and the pin files stay, as on a disk-backed root dir.
// containerd's records and the kubelet's files survive. After containerd
// and the kubelet start again, the pod runs again (a new container, restart
// count 1) in a new sandbox with a working network, and the old sandbox's
// IP reservation and pin are cleaned up.
func TestNodeReboot(t *testing.T) {
	t.Parallel()
	c := cluster.NewForTest(t, cluster.Options{Binaries: bins, NoScheduler: true, NoControllerManager: true})
	n := c.Nodes[0]
	ns := "reboot"
	createPod(t, c.Client, busyboxPod(ns, "web", n.Name, "mkdir -p /www && echo booted > /www/index.html && exec httpd -f -p 80 -h /www"))
	before := waitPod(t, c.Client, ns, "web", 60*time.Second, "Running", running)
	pins := n.NetNSPins()
	if len(pins) != 1 {
		t.Fatalf("pinned netns files before the reboot: %v", pins)
	}

	if err := n.Kill(); err != nil {
		t.Fatal(err)
	}
	err := n.Containerd.Restart(context.Background(), func() error {
		shims := n.Containerd.ShimPIDs()
		if len(shims) == 0 {
			return errors.New("no shim of the pod's container found")
		}
		killShimsAndContainers(shims)
		for _, p := range pins {
			if err := unix.Unmount(p, unix.MNT_DETACH); err != nil {
				return err
			}
		}
		return n.Host.Do(func() error {
			if br, err := netlink.LinkByName("cni0"); err == nil {
				if err := netlink.LinkDel(br); err != nil {
					return err
				}
			}
			conn, err := nftables.New()
			if err != nil {
				return err
			}
			conn.DelTable(&nftables.Table{Name: network.Config{NetworkName: network.DefaultNetworkName}.MasqueradeTable(), Family: nftables.TableFamilyIPv4})
			return conn.Flush()
		})
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := n.Start(); err != nil {
		t.Fatal(err)
	}

	after := waitPod(t, c.Client, ns, "web", 90*time.Second, "Running again", func(p *v1.Pod) bool {
		return running(p) && containerStatus(p, "main").GetRestartCount() >= 1
	})
	b, a := containerStatus(before, "main"), containerStatus(after, "main")
	if a.ContainerId == b.ContainerId {
		t.Errorf("same container ID %s after the reboot", a.ContainerId)
	}
	if a.GetLastState().GetTerminated() == nil {
		t.Errorf("lastState after the reboot: %v, want the lost container as terminated", a.GetLastState())
	}
	if err := n.RouteFromRoot(); err != nil {
		t.Fatal(err)
	}
	if body := fetch(t, "http://"+after.Status.PodIp+"/"); body != "booted\n" {
		t.Errorf("GET = %q", body)
	}
	// Egress works again: the masquerade table is back.
	if err := n.Host.Do(func() error {
		conn, err := nftables.New()
		if err != nil {
			return err
		}
		_, err = conn.ListTableOfFamily(network.Config{NetworkName: network.DefaultNetworkName}.MasqueradeTable(), nftables.TableFamilyIPv4)
		return err
	}); err != nil {
		t.Errorf("masquerade table after the reboot: %v", err)
	}

	// The old sandbox is cleaned up: its pin file and, unless host-local
	// handed the same address out again, its IP reservation.
	wait.Eventually(t, 30*time.Second, "the old sandbox cleaned up after the reboot", func() error {
		var problems []string
		if _, err := os.Stat(pins[0]); !errors.Is(err, fs.ErrNotExist) {
			problems = append(problems, "old pin file "+pins[0]+" still there")
		}
		if before.Status.PodIp != after.Status.PodIp && reserved(n, before.Status.PodIp) {
			problems = append(problems, "old IP "+before.Status.PodIp+" still reserved")
		}
		if len(problems) > 0 {
			return errors.New(strings.Join(problems, "; "))
		}
		return nil
	})
}

// killShimsAndContainers SIGKILLs the shims' children (each container's
// init process: the kernel then kills the rest of its PID namespace), then
// the shims.
func killShimsAndContainers(shims []int) {
	isShim := map[int]bool{}
	for _, pid := range shims {
		isShim[pid] = true
	}
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if err != nil {
			continue
		}
		// pid (comm) state ppid ...: comm may hold spaces, so split after ")".
		rest := string(b[strings.LastIndexByte(string(b), ')')+1:])
		if f := strings.Fields(rest); len(f) > 1 {
			if ppid, _ := strconv.Atoi(f[1]); isShim[ppid] {
				_ = syscall.Kill(pid, syscall.SIGKILL)
			}
		}
	}
	for _, pid := range shims {
		_ = syscall.Kill(pid, syscall.SIGKILL)
	}
}
