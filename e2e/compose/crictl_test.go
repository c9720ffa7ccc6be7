package compose

import (
	"context"
	"encoding/json"
	"fmt"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/tugboat/tugboat/api/wait"
	"github.com/tugboat/tugboat/e2e/cluster"
)

// nodeCrictl runs crictl inside a node container, as a user would
// (`docker exec worker-1 crictl pods`): the node image's crictl with its
// /etc/crictl.yaml pointing at the node's containerd.
func nodeCrictl(ctx context.Context, container string, args ...string) (string, error) {
	out, err := exec.CommandContext(ctx, "docker", append([]string{"exec", container, "crictl"}, args...)...).CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("docker exec %s crictl %s: %v: %s", container, strings.Join(args, " "), err, out)
	}
	return string(out), nil
}

// checkCrictl: on a compose node the kubelet's runtime is containerd's
// CRI, so crictl in the node container shows the web pod with its
// Kubernetes name, namespace and labels (pods, inspectp, ps), its output
// (logs); a sandbox stopped behind the kubelet's back (crictl stopp) is
// noticed — SandboxChanged — and the pod runs again in a new sandbox
// (restartPolicy Always).
func checkCrictl(t *testing.T, ctx context.Context, e *env, pod, node string) {
	t.Helper()
	ctr := e.container(node)
	out, err := nodeCrictl(ctx, ctr, "pods", "--namespace", "default", "--name", pod, "--label", "app=web", "-o", "json")
	if err != nil {
		t.Fatal(err)
	}
	var pods cluster.CrictlPods
	if err := json.Unmarshal([]byte(out), &pods); err != nil {
		t.Fatalf("crictl pods: %v\n%s", err, out)
	}
	if len(pods.Items) != 1 {
		t.Fatalf("crictl pods on %s: %d sandboxes of default/%s with app=web, want 1:\n%s", node, len(pods.Items), pod, out)
	}
	sb := pods.Items[0]
	if sb.State != "SANDBOX_READY" || sb.Metadata.Name != pod || sb.Metadata.Namespace != "default" ||
		sb.Labels["io.kubernetes.pod.name"] != pod || sb.Labels["io.kubernetes.pod.namespace"] != "default" || sb.Labels["app"] != "web" {
		t.Errorf("crictl pods on %s: %+v", node, sb)
	}
	inspect, err := nodeCrictl(ctx, ctr, "inspectp", sb.ID)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(inspect, `"name": "`+pod+`"`) || !strings.Contains(inspect, `"namespace": "default"`) || !strings.Contains(inspect, `"io.kubernetes.pod.name": "`+pod+`"`) {
		t.Errorf("crictl inspectp %s lacks the pod's name, namespace or labels:\n%s", sb.ID, inspect)
	}
	out, err = nodeCrictl(ctx, ctr, "ps", "--pod", sb.ID, "-o", "json")
	if err != nil {
		t.Fatal(err)
	}
	var cs cluster.CrictlContainers
	if err := json.Unmarshal([]byte(out), &cs); err != nil {
		t.Fatalf("crictl ps: %v\n%s", err, out)
	}
	if len(cs.Containers) != 1 || cs.Containers[0].Metadata.Name != "echo" || cs.Containers[0].Labels["io.kubernetes.pod.name"] != pod ||
		cs.Containers[0].Labels["io.kubernetes.container.name"] != "echo" {
		t.Fatalf("crictl ps --pod %s on %s:\n%s", sb.ID, node, out)
	}
	logs, err := nodeCrictl(ctx, ctr, "logs", cs.Containers[0].ID)
	if err != nil || !strings.Contains(logs, "listening") {
		t.Errorf("crictl logs %s: %v %q", cs.Containers[0].ID, err, logs)
	}
	t.Logf("crictl on %s: sandbox %.12s of default/%s, container %.12s echo, logs %q", node, sb.ID, pod, cs.Containers[0].ID, firstLine(logs))

	if _, err := nodeCrictl(ctx, ctr, "stopp", sb.ID); err != nil {
		t.Fatal(err)
	}
	stopped := time.Now()
	wait.Eventually(t, time.Minute, "SandboxChanged and "+pod+" Running again after crictl stopp", func() error {
		desc, err := e.tugctl(ctx, "describe", "pod", pod)
		if err != nil {
			return err
		}
		if !strings.Contains(desc, "SandboxChanged") {
			return fmt.Errorf("no SandboxChanged event yet:\n%s", lastLines(desc, 10))
		}
		row, err := e.tugctl(ctx, "get", "pod", pod, "--no-headers")
		if err != nil {
			return err
		}
		f := strings.Fields(row)
		if len(f) < 4 || f[1] != "1/1" || f[2] != "Running" {
			return fmt.Errorf("pod %s", strings.TrimSpace(row))
		}
		if n, _ := strconv.Atoi(f[3]); n < 1 {
			return fmt.Errorf("pod %s: not restarted", strings.TrimSpace(row))
		}
		return nil
	})
	out, err = nodeCrictl(ctx, ctr, "pods", "--namespace", "default", "--name", pod, "--state", "ready", "-o", "json")
	if err != nil {
		t.Fatal(err)
	}
	var now cluster.CrictlPods
	if err := json.Unmarshal([]byte(out), &now); err != nil || len(now.Items) != 1 || now.Items[0].ID == sb.ID || now.Items[0].Metadata.Attempt < 1 {
		t.Errorf("after crictl stopp %.12s: ready sandboxes (%v):\n%s", sb.ID, err, out)
	}
	t.Logf("crictl stopp of %s's sandbox: SandboxChanged, running again in a new sandbox %s later", pod, time.Since(stopped).Round(100*time.Millisecond))
}

func firstLine(s string) string {
	l, _, _ := strings.Cut(strings.TrimSpace(s), "\n")
	return l
}
