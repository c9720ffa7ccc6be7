package kubelet_test

import (
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
)

// TestCrashLoopBackOff: a container that exits 1 is restarted with
// growing back-off (the cluster's kubelets use 1s doubling to 8s) and
// shows CrashLoopBackOff with its last exit in lastState.
func TestCrashLoopBackOff(t *testing.T) {
	c := sharedCluster(t)
	t.Parallel()
	ns, name := "crash", "crasher"
	createPod(t, c.Client, busyboxPod(ns, name, "node1", "echo going down; exit 1"))
	p := waitPod(t, c.Client, ns, name, 60*time.Second, "in CrashLoopBackOff after 2 restarts", func(p *v1.Pod) bool {
		cs := containerStatus(p, "main")
		return cs.GetRestartCount() >= 2 && cs.GetState().GetWaiting().GetReason() == "CrashLoopBackOff"
	})
	cs := containerStatus(p, "main")
	if lt := cs.GetLastState().GetTerminated(); lt.GetExitCode() != 1 || lt.GetReason() != "Error" || lt.GetFinishedAt() == nil {
		t.Errorf("lastState %v, want exit 1 with reason Error", cs.GetLastState())
	}
	if msg := cs.GetState().GetWaiting().GetMessage(); !strings.Contains(msg, "back-off") || !strings.Contains(msg, "restarting failed container=main") {
		t.Errorf("waiting message %q", msg)
	}
	if p.Status.Phase != "Running" || condition(p, "Ready").GetStatus() != "False" {
		t.Errorf("phase %s Ready %v", p.Status.Phase, condition(p, "Ready"))
	}
	waitEvent(t, c.Client, ns, name, "BackOff: Back-off restarting failed container main", 10*time.Second)
	// The back-off grows: restarts keep coming, but slower than the
	// container exits.
	first := cs.RestartCount
	start := time.Now()
	waitPod(t, c.Client, ns, name, 30*time.Second, "restarted twice more", func(p *v1.Pod) bool {
		return containerStatus(p, "main").GetRestartCount() >= first+2
	})
	if took := time.Since(start); took < 2*time.Second {
		t.Errorf("two more restarts took %s: no back-off", took)
	}
}

// TestProbes: a failing liveness probe restarts the container with an
// Unhealthy event; the readiness probe flips the Ready condition both
// ways.
func TestProbes(t *testing.T) {
	c := sharedCluster(t)
	t.Parallel()
	ns, name := "probes", "probed"
	p := busyboxPod(ns, name, "node2", "mkdir -p /www && echo ok > /www/healthz && exec httpd -f -p 8080 -h /www")
	ctr := p.Spec.Containers[0]
	ctr.Ports = []*v1.ContainerPort{{Name: "http", ContainerPort: 8080}}
	ctr.LivenessProbe = &v1.Probe{HttpGet: &v1.HTTPGetAction{Path: "/healthz", Port: "http"}, PeriodSeconds: 1, FailureThreshold: 2}
	ctr.ReadinessProbe = &v1.Probe{Exec: &v1.ExecAction{Command: []string{"test", "-f", "/tmp/ready"}}, PeriodSeconds: 1, FailureThreshold: 1}
	createPod(t, c.Client, p)

	p = waitPod(t, c.Client, ns, name, 60*time.Second, "Running", running)
	if cond := condition(p, "Ready"); cond.GetStatus() != "False" {
		t.Fatalf("Ready before the readiness probe succeeded: %v", cond)
	}
	if _, code := execIn(t, c.Client, ns, name, "touch", "/tmp/ready"); code != 0 {
		t.Fatal("touch failed")
	}
	waitPod(t, c.Client, ns, name, 15*time.Second, "Ready", func(p *v1.Pod) bool { return condition(p, "Ready").GetStatus() == "True" })
	if _, code := execIn(t, c.Client, ns, name, "rm", "/tmp/ready"); code != 0 {
		t.Fatal("rm failed")
	}
	waitPod(t, c.Client, ns, name, 15*time.Second, "not Ready", func(p *v1.Pod) bool {
		return condition(p, "Ready").GetStatus() == "False" && !containerStatus(p, "main").GetReady()
	})
	waitEvent(t, c.Client, ns, name, "Unhealthy: Readiness probe failed", 10*time.Second)

	// Liveness: break the health page; the container is restarted.
	before := containerStatus(p, "main").GetContainerId()
	if _, code := execIn(t, c.Client, ns, name, "rm", "/www/healthz"); code != 0 {
		t.Fatal("rm failed")
	}
	p = waitPod(t, c.Client, ns, name, 30*time.Second, "restarted by its liveness probe", func(p *v1.Pod) bool {
		cs := containerStatus(p, "main")
		return cs.GetRestartCount() == 1 && cs.GetState().GetRunning() != nil && cs.GetContainerId() != before
	})
	waitEvent(t, c.Client, ns, name, "Unhealthy: Liveness probe failed: HTTP probe failed with statuscode: 404", 10*time.Second)
	waitEvent(t, c.Client, ns, name, "Killing: Container main failed liveness probe, will be restarted", 10*time.Second)
	if lt := containerStatus(p, "main").GetLastState().GetTerminated(); lt == nil {
		t.Errorf("no lastState after the liveness restart")
	}
}

// TestOOMKilled: a container over its memory limit is killed by the
// kernel and reported OOMKilled.
func TestOOMKilled(t *testing.T) {
	c := sharedCluster(t)
	t.Parallel()
	ns, name := "oom", "hog"
	p := busyboxPod(ns, name, "node1", `x=0123456789abcdef; while true; do x="$x$x"; done`)
	p.Spec.RestartPolicy = "Never"
	p.Spec.Containers[0].Resources = &v1.ResourceRequirements{Limits: map[string]string{"memory": "20Mi"}}
	createPod(t, c.Client, p)
	p = waitPod(t, c.Client, ns, name, 60*time.Second, "Failed", func(p *v1.Pod) bool { return p.Status.GetPhase() == "Failed" })
	term := containerStatus(p, "main").GetState().GetTerminated()
	if term.GetReason() != "OOMKilled" || term.GetExitCode() != 137 {
		t.Fatalf("terminated %v, want OOMKilled with exit code 137", term)
	}
	if p.Status.QosClass != "Burstable" && p.Status.QosClass != "Guaranteed" {
		t.Errorf("qos %q", p.Status.QosClass)
	}
}

// TestGracefulDelete: deleting a pod sends its container SIGTERM and waits
// for it (up to the grace period) before the pod is gone; a container that
// ignores SIGTERM is killed when the grace period ends.
func TestGracefulDelete(t *testing.T) {
	c := sharedCluster(t)
	t.Parallel()
	ns := "grace"
	openNamespace(t, c.Client, ns) // the hostPath the test reads
	out := t.TempDir()
	// The handler takes 2s to shut down, within its 20s grace period.
	polite := busyboxPod(ns, "polite", "node2",
		`trap 'echo TERM $(date +%s.%N) >> /out/log; sleep 2; echo bye $(date +%s.%N) >> /out/log; exit 0' TERM; echo up >> /out/log; while true; do sleep 0.1; done`)
	polite.Spec.TerminationGracePeriodSeconds = proto.Int64(20)
	polite.Spec.Containers[0].VolumeMounts = []*v1.VolumeMount{{Name: "out", MountPath: "/out"}}
	polite.Spec.Volumes = []*v1.Volume{{Name: "out", HostPath: &v1.HostPathVolumeSource{Path: out, Type: "Directory"}}}
	createPod(t, c.Client, polite)
	// This one ignores SIGTERM (sleep as PID 1) and has 2s.
	stubborn := busyboxPod(ns, "stubborn", "node2", "exec sleep 3600")
	stubborn.Spec.TerminationGracePeriodSeconds = proto.Int64(2)
	createPod(t, c.Client, stubborn)
	waitPod(t, c.Client, ns, "polite", 60*time.Second, "Running", running)
	waitPod(t, c.Client, ns, "stubborn", 60*time.Second, "Running", running)
	waitLog(t, filepath.Join(out, "log"), "up")

	pods := client.For[*v1.Pod](c.Client)
	start := time.Now()
	for _, name := range []string{"polite", "stubborn"} {
		if _, err := pods.Delete(t.Context(), ns, name, client.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	waitGone(t, c.Client, ns, "stubborn", 30*time.Second)
	if took := time.Since(start); took < 2*time.Second {
		t.Errorf("the pod ignoring SIGTERM was gone after %s, before its 2s grace period", took)
	}
	waitGone(t, c.Client, ns, "polite", 30*time.Second)
	took := time.Since(start)
	log := waitLog(t, filepath.Join(out, "log"), "bye")
	if !strings.Contains(log, "TERM") {
		t.Fatalf("the handler never got SIGTERM:\n%s", log)
	}
	if took < 2*time.Second || took > 15*time.Second {
		t.Errorf("the polite pod was gone after %s: want its 2s shutdown, not the 20s grace period", took)
	}
	waitEvent(t, c.Client, ns, "polite", "Killing: Stopping container main", 10*time.Second)
}

func waitLog(t *testing.T, path, want string) string {
	t.Helper()
	var b []byte
	wait.Eventually(t, 30*time.Second, fmt.Sprintf("%s to say %q", path, want), func() error {
		b, _ = os.ReadFile(path)
		if !strings.Contains(string(b), want) {
			return fmt.Errorf("it says %q", b)
		}
		return nil
	})
	return string(b)
}

// TestActiveDeadlineSeconds: a pod that runs past its
// spec.activeDeadlineSeconds is stopped and fails with DeadlineExceeded.
func TestActiveDeadlineSeconds(t *testing.T) {
	c := sharedCluster(t)
	t.Parallel()
	ns := "deadline"
	p := busyboxPod(ns, "slow", c.Nodes[0].Name, "exec sleep 3600")
	p.Spec.ActiveDeadlineSeconds = proto.Int64(2)
	createPod(t, c.Client, p)
	got := waitPod(t, c.Client, ns, "slow", 60*time.Second, "Failed", func(p *v1.Pod) bool { return p.Status.GetPhase() == "Failed" })
	if got.Status.Reason != "DeadlineExceeded" || !strings.Contains(got.Status.Message, "longer than the specified deadline") {
		t.Errorf("status reason %q message %q, want DeadlineExceeded", got.Status.Reason, got.Status.Message)
	}
	if cs := containerStatus(got, "main"); cs.GetState().GetTerminated() == nil {
		t.Errorf("container state %v, want terminated", cs.GetState())
	}
	waitEvent(t, c.Client, ns, "slow", "DeadlineExceeded: Pod was active on the node longer than the specified deadline", 10*time.Second)
}
