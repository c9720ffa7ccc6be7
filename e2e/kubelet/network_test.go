package kubelet_test

import (
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
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

// TestPodEgressIsMasqueraded: a pod reaching past its node's pod CIDR (here
// the other node's address) leaves with its node's address, by the node's
// one masquerade rule (the bridge plugin's per-pod ipMasq is off), and gets
// its answer back.
func TestPodEgressIsMasqueraded(t *testing.T) {
	c := sharedCluster(t)
	t.Parallel()
	from, to := c.Nodes[0], c.Nodes[1]
	var l net.Listener
	if err := to.Host.Do(func() (err error) {
		l, err = net.Listen("tcp", net.JoinHostPort(to.IP.String(), "0"))
		return err
	}); err != nil {
		t.Fatal(err)
	}
	seen := make(chan string, 1)
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		host, _, _ := net.SplitHostPort(r.RemoteAddr)
		select {
		case seen <- host:
		default:
		}
		fmt.Fprintf(w, "you are %s\n", host)
	})}
	go srv.Serve(l)
	defer srv.Close()

	ns := "egress"
	createPod(t, c.Client, busyboxPod(ns, "client", from.Name, "exec sleep 3600"))
	p := waitPod(t, c.Client, ns, "client", 60*time.Second, "Running", running)
	out, code := execIn(t, c.Client, ns, "client", "wget", "-q", "-O-", "http://"+l.Addr().String()+"/")
	if code != 0 {
		t.Fatalf("pod %s -> %s: exit %d: %s", p.Status.PodIp, l.Addr(), code, out)
	}
	if got := <-seen; got != from.IP.String() {
		t.Errorf("the other node saw the pod's traffic come from %s, want its node's address %s (pod IP %s)", got, from.IP, p.Status.PodIp)
	}
	if !strings.Contains(out, "you are "+from.IP.String()) {
		t.Errorf("answer %q", out)
	}
}
