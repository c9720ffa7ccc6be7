package kubelet_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/tugboat/tugboat/api/client"
	v1 "github.com/tugboat/tugboat/api/v1"
	"github.com/tugboat/tugboat/api/wait"
	"github.com/tugboat/tugboat/e2e/cluster"
	"github.com/tugboat/tugboat/kubelet/runtime"
)

// TestKubeletRestartKeepsContainers kills the kubelet with SIGKILL while
// pods run, changes things while it is down, and starts it again: running
// containers are adopted (same container IDs, not restarted, status
// unchanged), the pod deleted meanwhile is torn down with CNI DEL, and the
// pod created meanwhile starts. The node joined with a join token, so the
// restarted kubelet also finds its certificate again.
func TestKubeletRestartKeepsContainers(t *testing.T) {
	t.Parallel()
	c := cluster.NewForTest(t, cluster.Options{Binaries: bins, NoScheduler: true, NoControllerManager: true, Join: true})
	n := c.Nodes[0]
	ns := "adopt"
	keep := busyboxPod(ns, "keep", n.Name, "mkdir -p /www && echo kept > /www/index.html && exec httpd -f -p 80 -h /www")
	keep.Spec.Containers[0].ReadinessProbe = &v1.Probe{TcpSocket: &v1.TCPSocketAction{Port: "80"}, PeriodSeconds: 1}
	createPod(t, c.Client, keep)
	createPod(t, c.Client, busyboxPod(ns, "gone", n.Name, "exec sleep 3600"))
	ready := func(p *v1.Pod) bool { return running(p) && condition(p, "Ready").GetStatus() == "True" }
	before := waitPod(t, c.Client, ns, "keep", 60*time.Second, "Ready", ready)
	gone := waitPod(t, c.Client, ns, "gone", 60*time.Second, "Running", running)
	goneIP := gone.Status.PodIp
	if !reserved(n, goneIP) {
		t.Fatalf("no host-local reservation for %s", goneIP)
	}

	if err := n.Kill(); err != nil {
		t.Fatal(err)
	}
	zero := int64(0)
	if _, err := client.For[*v1.Pod](c.Client).Delete(context.Background(), ns, "gone", client.DeleteOptions{GracePeriodSeconds: &zero}); err != nil {
		t.Fatal(err)
	}
	createPod(t, c.Client, busyboxPod(ns, "fresh", n.Name, "exec sleep 3600"))
	if err := n.Start(); err != nil {
		t.Fatal(err)
	}

	waitPod(t, c.Client, ns, "fresh", 60*time.Second, "Running", running)
	after := waitPod(t, c.Client, ns, "keep", 30*time.Second, "Ready", ready)
	b, a := containerStatus(before, "main"), containerStatus(after, "main")
	if a.ContainerId != b.ContainerId || a.RestartCount != 0 || !a.Started {
		t.Fatalf("container after the restart: %v, before: %v", a, b)
	}
	if !proto.Equal(a.GetState().GetRunning().GetStartedAt(), b.GetState().GetRunning().GetStartedAt()) {
		t.Errorf("startedAt changed: %v -> %v", b.GetState(), a.GetState())
	}
	if after.Status.PodIp != before.Status.PodIp || after.Status.Phase != "Running" {
		t.Errorf("status after the restart: %v", after.Status)
	}
	if !proto.Equal(condition(after, "Ready").GetLastTransitionTime(), condition(before, "Ready").GetLastTransitionTime()) {
		t.Errorf("Ready flapped across the restart: %v -> %v", condition(before, "Ready"), condition(after, "Ready"))
	}
	rt, err := n.Runtime()
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Close()
	st, err := rt.ContainerStatus(context.Background(), strings.TrimPrefix(a.ContainerId, "containerd://"))
	if err != nil || st.State != runtime.ContainerRunning {
		t.Fatalf("the adopted container: %+v, %v", st, err)
	}
	if err := n.RouteFromRoot(); err != nil {
		t.Fatal(err)
	}
	if body := fetch(t, "http://"+after.Status.PodIp+"/"); body != "kept\n" {
		t.Errorf("GET = %q", body)
	}

	// The pod deleted while the kubelet was down is torn down: sandbox,
	// containers, IP reservation.
	wait.Eventually(t, 60*time.Second, "the pod deleted meanwhile torn down", func() error {
		sbs, err := rt.ListPodSandbox(context.Background(), runtime.SandboxFilter{PodUID: gone.Metadata.Uid})
		if err != nil {
			return err
		}
		if len(sbs) > 0 || reserved(n, goneIP) {
			return fmt.Errorf("its sandboxes %v / IP reservation %v are still there", sbs, reserved(n, goneIP))
		}
		return nil
	})
}

// reserved reports whether host-local holds a reservation for ip.
func reserved(n *cluster.Node, ip string) bool {
	_, err := os.Stat(filepath.Join(n.RootDir, "network", "ipam", "tugboat", ip))
	return err == nil
}
