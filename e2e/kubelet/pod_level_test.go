package kubelet_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/tugboat/tugboat/api/client"
	v1 "github.com/tugboat/tugboat/api/v1"
	"github.com/tugboat/tugboat/api/wait"
)

// podCgroupFile reads a file of the pod's cgroup (the kubelet's cgroup
// parent pod<uid> of the pod's containers) from the node's host: the v2
// name in the unified tree, else the v1 one in its hierarchy (the test
// runs as root on the nodes' host).
func podCgroupFile(t *testing.T, uid, v2, v1Controller, v1File string) string {
	t.Helper()
	var patterns []string
	for depth := "*"; len(depth) < 12; depth += "/*" {
		if _, err := os.Stat("/sys/fs/cgroup/cgroup.controllers"); err == nil {
			patterns = append(patterns, filepath.Join("/sys/fs/cgroup", depth, "pod"+uid, v2))
		} else {
			patterns = append(patterns, filepath.Join("/sys/fs/cgroup", v1Controller, depth, "pod"+uid, v1File))
		}
	}
	for _, p := range patterns {
		if m, _ := filepath.Glob(p); len(m) > 0 {
			b, err := os.ReadFile(m[0])
			if err != nil {
				t.Fatal(err)
			}
			return strings.Join(strings.Fields(string(b)), " ")
		}
	}
	t.Fatalf("no pod cgroup pod%s on the host (%v)", uid, patterns)
	return ""
}

// TestPodLevelResources: a pod with spec.resources.limits memory 64Mi and
// cpu 200m (and containers that set none) has those limits on its pod
// cgroup, its requests defaulted to them and QoS class Guaranteed; its
// container cannot use more memory than the pod's limit.
func TestPodLevelResources(t *testing.T) {
	c := sharedCluster(t)
	t.Parallel()
	ns, name := "podlevel", "limits"
	ensureNamespace(t, c.Client, ns)
	p := busyboxPod(ns, name, "node1", "sleep 3600")
	p.Spec.Resources = &v1.ResourceRequirements{Limits: map[string]string{"memory": "64Mi", "cpu": "200m"}}
	created := createPod(t, c.Client, p)
	if r := created.GetSpec().GetResources().GetRequests(); r["memory"] != "64Mi" || r["cpu"] != "200m" {
		t.Errorf("requests %v, want defaulted from the limits", r)
	}
	got := waitPod(t, c.Client, ns, name, 2*time.Minute, "running", running)
	if q := got.GetStatus().GetQosClass(); q != "Guaranteed" {
		t.Errorf("qosClass %s, want Guaranteed", q)
	}
	uid := got.GetMetadata().GetUid()
	if _, err := os.Stat("/sys/fs/cgroup/cgroup.controllers"); err == nil {
		if v := podCgroupFile(t, uid, "memory.max", "", ""); v != "67108864" {
			t.Errorf("memory.max %s, want 67108864", v)
		}
		if v := podCgroupFile(t, uid, "cpu.max", "", ""); v != "20000 100000" {
			t.Errorf("cpu.max %q, want 20000 100000", v)
		}
	} else {
		if v := podCgroupFile(t, uid, "", "memory", "memory.limit_in_bytes"); v != "67108864" {
			t.Errorf("memory.limit_in_bytes %s, want 67108864", v)
		}
		if v := podCgroupFile(t, uid, "", "cpu", "cpu.cfs_quota_us"); v != "20000" {
			t.Errorf("cpu.cfs_quota_us %s, want 20000", v)
		}
		if v := podCgroupFile(t, uid, "", "cpu", "cpu.cfs_period_us"); v != "100000" {
			t.Errorf("cpu.cfs_period_us %s, want 100000", v)
		}
	}
	// The container is under it: 96Mi of memory in a tmpfs-less process
	// (head of /dev/zero into a shell variable is not possible in sh;
	// dd into memory through a pipe to a sleeping tail holds it) is
	// killed for the pod's 64Mi.
	out, code := execIn(t, c.Client, ns, name, "sh", "-c", "dd if=/dev/zero bs=1M count=96 2>/dev/null | tail -c 100663296 >/dev/null; echo exit=$?")
	if code == 0 && strings.Contains(out, "exit=0") {
		t.Errorf("96Mi held inside a pod limited to 64Mi: %q", out)
	}
}

// TestHostUsersFalse: a pod with hostUsers false runs in its own user
// namespace (uid 0 in the pod is 65536 or above on the node) where the
// runtime supports user namespaces; where it does not (containerd 1.6,
// the native backend) its sandbox is refused with Kubernetes' kubelet
// message and the pod stays Pending with it.
func TestHostUsersFalse(t *testing.T) {
	c := sharedCluster(t)
	t.Parallel()
	ns, name := "podlevel", "userns"
	ensureNamespace(t, c.Client, ns)
	p := busyboxPod(ns, name, "node1", "sleep 3600")
	p.Spec.HostUsers = proto.Bool(false)
	uid := createPod(t, c.Client, p).GetMetadata().GetUid()
	t.Cleanup(func() { // gone with the test, so -count N makes it again
		if _, err := client.For[*v1.Pod](c.Client).Delete(context.Background(), ns, name, client.DeleteOptions{GracePeriodSeconds: proto.Int64(0)}); err != nil {
			t.Error(err)
		}
		waitGone(t, c.Client, ns, name, time.Minute)
	})
	const refusal = `Failed to create pod sandbox: RuntimeClass handler "" does not support user namespaces`
	var how string
	wait.Eventually(t, 2*time.Minute, "the pod running or its sandbox refused", func() error {
		got, err := client.For[*v1.Pod](c.Client).Get(ctxFor(t, 10*time.Second), ns, name)
		if err != nil {
			return err
		}
		if running(got) {
			how = "running"
			return nil
		}
		// This pod's events (by UID: a pod of the same name before it,
		// go test -count N, left its own).
		evs, _, err := client.For[*v1.Event](c.Client).List(ctxFor(t, 10*time.Second), client.ListOptions{Namespace: ns, FieldSelector: "involvedObject.uid=" + uid})
		if err != nil {
			return err
		}
		for _, e := range evs {
			if strings.Contains(e.Reason+": "+e.Message, refusal) {
				how = "refused"
				return nil
			}
		}
		return fmt.Errorf("phase %s", got.GetStatus().GetPhase())
	})
	if how == "running" {
		out, code := execIn(t, c.Client, ns, name, "cat", "/proc/self/uid_map")
		f := strings.Fields(out)
		if host := 0; len(f) == 3 {
			host, _ = strconv.Atoi(f[1])
			f[1] = strconv.FormatBool(host >= 65536)
		}
		if code != 0 || len(f) != 3 || f[0] != "0" || f[1] != "true" || f[2] != "65536" {
			t.Errorf("uid_map %q (exit %d), want 0 <host id from 65536> 65536", out, code)
		}
		return
	}
	// As in Kubernetes: the container waits in ContainerCreating, the
	// event and the PodReadyToStartContainers condition say why. The
	// kubelet writes the event and the status apart (its recorder and
	// its status manager, each in the background), so the status may
	// reach the API after the event: wait for it.
	got := waitPod(t, c.Client, ns, name, time.Minute, "with its sandbox refused in the status", func(p *v1.Pod) bool {
		return condition(p, "PodReadyToStartContainers").GetReason() == "FailedCreatePodSandbox"
	})
	if got.GetStatus().GetPhase() != "Pending" {
		t.Errorf("phase %s, want Pending", got.GetStatus().GetPhase())
	}
	if w := containerStatus(got, "main").GetState().GetWaiting(); w.GetReason() != "ContainerCreating" {
		t.Errorf("container state %v, want waiting ContainerCreating", containerStatus(got, "main").GetState())
	}
	if cond := condition(got, "PodReadyToStartContainers"); cond.GetStatus() != "False" || !strings.Contains(cond.GetMessage(), "does not support user namespaces") {
		t.Errorf("PodReadyToStartContainers %v, want False with the refusal", cond)
	}
}

// TestRestartPolicyRules: under the pod's restartPolicy Never, a
// container whose rule is Restart on exit code In [42] is restarted when
// it exits 42 (the pod runs on), and one that exits 1 is not (the pod
// fails).
func TestRestartPolicyRules(t *testing.T) {
	c := sharedCluster(t)
	t.Parallel()
	ns := "podlevel"
	ensureNamespace(t, c.Client, ns)
	mk := func(name, script string) *v1.Pod {
		p := busyboxPod(ns, name, "node2", script)
		p.Spec.RestartPolicy = "Never"
		p.Spec.Containers[0].RestartPolicy = "Never"
		p.Spec.Containers[0].RestartPolicyRules = []*v1.ContainerRestartRule{{Action: "Restart",
			ExitCodes: &v1.ContainerRestartRuleOnExitCodes{Operator: "In", Values: []int32{42}}}}
		return p
	}
	createPod(t, c.Client, mk("exit42", "exit 42"))
	createPod(t, c.Client, mk("exit1", "exit 1"))
	got := waitPod(t, c.Client, ns, "exit42", 2*time.Minute, "restarted twice", func(p *v1.Pod) bool {
		return containerStatus(p, "main").GetRestartCount() >= 2
	})
	if ph := got.GetStatus().GetPhase(); ph != "Running" {
		t.Errorf("phase %s while the rule restarts it, want Running", ph)
	}
	if last := containerStatus(got, "main").GetLastState().GetTerminated(); last.GetExitCode() != 42 {
		t.Errorf("last state %v, want terminated with 42", last)
	}
	failed := waitPod(t, c.Client, ns, "exit1", 2*time.Minute, "failed", func(p *v1.Pod) bool { return p.GetStatus().GetPhase() == "Failed" })
	if n := containerStatus(failed, "main").GetRestartCount(); n != 0 {
		t.Errorf("exit 1 restarted %d times, want 0 (no rule matches, the container's policy is Never)", n)
	}
}
