package kubelet_test

import (
	"encoding/json"
	"fmt"
	"os/exec"
	"strings"
	"testing"
	"time"

	v1 "github.com/tugboat/tugboat/api/v1"
	"github.com/tugboat/tugboat/api/wait"
	"github.com/tugboat/tugboat/deploy/images"
	"github.com/tugboat/tugboat/e2e/cluster"
	"github.com/tugboat/tugboat/kubelet/runtime/containerd/containerdtest"
)

// crictl runs crictl against the node's CRI endpoint and returns its
// output.
func crictl(t *testing.T, n *cluster.Node, args ...string) string {
	t.Helper()
	out, err := crictlErr(n, args...)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func crictlErr(n *cluster.Node, args ...string) (string, error) {
	args = append([]string{"--runtime-endpoint", n.CRIEndpoint(), "--image-endpoint", n.CRIEndpoint(), "--timeout", "10s"}, args...)
	out, err := exec.Command("crictl", args...).CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("crictl %s: %v: %s", strings.Join(args, " "), err, out)
	}
	return string(out), nil
}

// TestCrictlShowsPods: on a CRI node, crictl (the runtime layer's own
// tool) shows the kubelet's pods with their Kubernetes names, namespaces
// and labels (pods, inspectp, ps, logs); a sandbox stopped behind the
// kubelet's back (crictl stopp) is noticed: SandboxChanged, a new sandbox,
// and the container restarted per the pod's restartPolicy.
func TestCrictlShowsPods(t *testing.T) {
	c := sharedCluster(t)
	t.Parallel()
	if c.Runtime != cluster.RuntimeCRI {
		t.Skip("the native backend has no CRI to look at")
	}
	if _, err := exec.LookPath("crictl"); err != nil {
		containerdtest.SkipOrFail(t, fmt.Errorf("crictl not found (hack/install-deps.sh installs it): %w", err))
	}
	n := c.Nodes[0]
	ns, name := "crictl", "web"
	p := busyboxPod(ns, name, n.Name, "echo hello from the pod; exec sleep 3600")
	p.Metadata.Labels["tier"] = "front"
	createPod(t, c.Client, p)
	before := waitPod(t, c.Client, ns, name, 60*time.Second, "Running", running)

	var pods cluster.CrictlPods
	if err := json.Unmarshal([]byte(crictl(t, n, "pods", "--namespace", ns, "--name", name, "--label", "tier=front", "-o", "json")), &pods); err != nil {
		t.Fatal(err)
	}
	if len(pods.Items) != 1 {
		t.Fatalf("crictl pods: %d sandboxes of %s/%s with label tier=front, want 1: %+v", len(pods.Items), ns, name, pods)
	}
	sb := pods.Items[0]
	if sb.State != "SANDBOX_READY" || sb.Metadata.UID != before.Metadata.Uid || sb.Labels["io.kubernetes.pod.namespace"] != ns || sb.Labels["io.kubernetes.pod.name"] != name {
		t.Errorf("crictl pods: %+v", sb)
	}
	inspect := crictl(t, n, "inspectp", sb.ID)
	if !strings.Contains(inspect, `"name": "`+name+`"`) || !strings.Contains(inspect, before.Status.PodIp) {
		t.Errorf("crictl inspectp %s lacks the pod's name or its IP %s:\n%s", sb.ID, before.Status.PodIp, inspect)
	}

	var cs cluster.CrictlContainers
	if err := json.Unmarshal([]byte(crictl(t, n, "ps", "--pod", sb.ID, "-o", "json")), &cs); err != nil {
		t.Fatal(err)
	}
	if len(cs.Containers) != 1 || cs.Containers[0].Metadata.Name != "main" || cs.Containers[0].Labels["io.kubernetes.container.name"] != "main" {
		t.Fatalf("crictl ps --pod %s: %+v", sb.ID, cs)
	}
	if id := "containerd://" + cs.Containers[0].ID; containerStatus(before, "main").GetContainerId() != id {
		t.Errorf("crictl ps shows %s, the pod's status %s", id, containerStatus(before, "main").GetContainerId())
	}
	if out := crictl(t, n, "logs", cs.Containers[0].ID); !strings.Contains(out, "hello from the pod") {
		t.Errorf("crictl logs: %q", out)
	}

	// The sandbox stopped behind the kubelet's back: noticed, replaced.
	crictl(t, n, "stopp", sb.ID)
	waitEvent(t, c.Client, ns, name, "SandboxChanged: Pod sandbox changed, it will be killed and re-created.", 30*time.Second)
	after := waitPod(t, c.Client, ns, name, 60*time.Second, "Running again in a new sandbox", func(p *v1.Pod) bool {
		cs := containerStatus(p, "main")
		return running(p) && cs.GetRestartCount() >= 1 && cs.GetContainerId() != containerStatus(before, "main").GetContainerId()
	})
	wait.Eventually(t, 30*time.Second, "one Ready sandbox of the pod, not the stopped one", func() error {
		var now cluster.CrictlPods
		out, err := crictlErr(n, "pods", "--namespace", ns, "--name", name, "--state", "ready", "-o", "json")
		if err != nil {
			return err
		}
		if err := json.Unmarshal([]byte(out), &now); err != nil {
			return err
		}
		if len(now.Items) != 1 || now.Items[0].ID == sb.ID || now.Items[0].Metadata.Attempt < 1 {
			return fmt.Errorf("ready sandboxes %+v (the stopped one was %s)", now.Items, sb.ID)
		}
		return nil
	})
	if after.Status.PodIp == "" {
		t.Errorf("no pod IP after the new sandbox: %v", after.Status)
	}
}

// TestMissingSandboxImage: without the runtime's sandbox (pause) image a
// pod waits with FailedCreatePodSandbox saying how to import it; imported,
// the pod starts.
func TestMissingSandboxImage(t *testing.T) {
	t.Parallel()
	c := cluster.NewForTest(t, cluster.Options{Binaries: bins, NoScheduler: true, NoControllerManager: true})
	if c.Runtime != cluster.RuntimeCRI {
		t.Skip("the native backend has no sandbox image")
	}
	n := c.Nodes[0]
	rt, err := n.Runtime()
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Close()
	if err := rt.RemoveImage(ctxFor(t, 30*time.Second), images.PauseRef); err != nil {
		t.Fatal(err)
	}
	ns, name := "nopause", "waiter"
	createPod(t, c.Client, busyboxPod(ns, name, n.Name, "exec sleep 3600"))
	waitEvent(t, c.Client, ns, name, "sandbox image not present on node", 60*time.Second)
	waitEvent(t, c.Client, ns, name, "import it with `tugctl image import pause.tar --node "+n.Name+"`", 5*time.Second)
	if err := n.ImportImage(ctxFor(t, 60*time.Second), "pause"); err != nil {
		t.Fatal(err)
	}
	waitPod(t, c.Client, ns, name, 90*time.Second, "Running once the pause image is there", running)
}
