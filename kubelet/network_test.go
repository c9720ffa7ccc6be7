package kubelet_test

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	v1 "github.com/tugboat/tugboat/api/v1"
	"github.com/tugboat/tugboat/e2e/cluster"
)

// TestBrokenCNIConfigMakesNodeNotReady: a CNI config naming a plugin that
// does not exist makes the node NotReady with NetworkPluginNotReady and
// pods wait with FailedCreatePodSandbox; fixing it makes both recover.
func TestBrokenCNIConfigMakesNodeNotReady(t *testing.T) {
	t.Parallel()
	c := cluster.NewForTest(t, cluster.Options{Binaries: bins, NoScheduler: true, NoControllerManager: true})
	n := c.Nodes[0]
	broken := filepath.Join(n.CNIConfDir, "00-broken.conflist")
	if err := os.WriteFile(broken, []byte(`{"cniVersion": "1.0.0", "name": "broken", "plugins": [{"type": "no-such-plugin"}]}`), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := n.WaitReadyCondition(ctxFor(t, 30*time.Second), "False", "NetworkPluginNotReady"); err != nil {
		t.Fatal(err)
	}
	if err := n.WaitReadyCondition(ctxFor(t, 5*time.Second), "False", "no-such-plugin"); err != nil {
		t.Fatal(err)
	}
	ns, name := "net", "waiter"
	createPod(t, c.Client, busyboxPod(ns, name, n.Name, "exec sleep 3600"))
	waitEvent(t, c.Client, ns, name, "FailedCreatePodSandbox: Failed to create pod sandbox: network plugin not ready", 30*time.Second)
	p := waitPod(t, c.Client, ns, name, 10*time.Second, "waiting for the network", func(p *v1.Pod) bool {
		cond := condition(p, "PodReadyToStartContainers")
		return cond.GetStatus() == "False" && cond.GetReason() == "NetworkNotReady"
	})
	if p.Status.Phase != "Pending" {
		t.Errorf("phase %s", p.Status.Phase)
	}

	if err := os.Remove(broken); err != nil {
		t.Fatal(err)
	}
	if err := n.WaitReady(ctxFor(t, 30*time.Second)); err != nil {
		t.Fatal(err)
	}
	waitPod(t, c.Client, ns, name, 60*time.Second, "Running once the network is fixed", running)
}
