package pod

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"google.golang.org/protobuf/types/known/timestamppb"

	v1 "github.com/tugboat/tugboat/api/v1"
	"github.com/tugboat/tugboat/kubelet/prober"
	"github.com/tugboat/tugboat/kubelet/runtime"
)

// The decision half of a sync, as a table: each case is a syncInput
// written out (the pod, what the runtime has, the back-offs, the probe
// results, the clock) and the plan decide makes of it, rendered one step
// per line.

var t0 = time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)

// sandbox is a Ready sandbox made d before t0.
func sandbox(id string, attempt uint32, d time.Duration) runtime.SandboxStatus {
	return runtime.SandboxStatus{ID: id, State: runtime.SandboxReady, CreatedAt: t0.Add(-d),
		Config: runtime.SandboxConfig{Attempt: attempt, NetNSPath: "/netns/" + id}}
}

// ctr is a container attempt in sandbox sb.
func ctr(id, name, sb string, attempt uint32, state runtime.ContainerState) runtime.ContainerStatus {
	return runtime.ContainerStatus{ID: id, Name: name, SandboxID: sb, Attempt: attempt, State: state,
		CreatedAt: t0.Add(-time.Minute), Labels: map[string]string{LabelSpecImage: testImage}}
}

// exitedAt is c, exited with code d before t0.
func exitedAt(c runtime.ContainerStatus, code int, d time.Duration) runtime.ContainerStatus {
	c.State, c.ExitCode, c.FinishedAt = runtime.ContainerExited, code, t0.Add(-d)
	return c
}

// input is a syncInput for pod at t0 with the runtime state given, no
// back-off, no probe result, a ready network.
func input(pod *v1.Pod, sbs []runtime.SandboxStatus, cs ...runtime.ContainerStatus) *syncInput {
	return &syncInput{pod: pod, status: &v1.PodStatus{}, now: t0, resync: time.Minute,
		state: &podState{sandboxes: sbs, containers: cs}, netnsGone: map[string]bool{},
		crash: map[string]backoffState{}, probes: map[string]probeResults{}}
}

// render is a plan, one line per decision: the action, the sandbox, the
// stale sandboxes, each container's step, init state and the wake time
// (relative to t0).
func render(p *plan) string {
	var out []string
	switch p.action {
	case actTerminate:
		return fmt.Sprintf("terminate grace=%s", p.grace)
	case actTerminal:
		return "terminal"
	case actFail:
		return fmt.Sprintf("fail %s %q grace=%s", p.reason, p.message, p.grace)
	}
	sb := p.sandbox
	switch {
	case sb.current != nil:
		out = append(out, "sandbox "+sb.current.ID)
	case sb.create:
		out = append(out, fmt.Sprintf("sandbox create #%d", sb.attempt))
	case sb.wait != nil:
		out = append(out, fmt.Sprintf("sandbox wait %s until +%s", sb.wait.Reason, sb.wait.Until.Sub(t0)))
	case sb.refuse != "":
		out = append(out, "sandbox refuse: "+sb.refuse)
	default:
		out = append(out, "sandbox none")
	}
	for _, s := range p.stale {
		out = append(out, "stale "+s.ID)
	}
	for _, s := range p.containers {
		line := s.c.Name + ": "
		switch s.do {
		case stepNone:
			line += "none"
		case stepStart:
			line += fmt.Sprintf("start #%d", s.attempt)
			if s.restart {
				line += " restart"
			}
			if !s.backoffFrom.IsZero() {
				line += fmt.Sprintf(" backoff-from -%s", t0.Sub(s.backoffFrom))
			}
			if s.targetID != "" {
				line += " target " + s.targetID
			}
		case stepStartCreated:
			line += "start created " + s.cur.ID
		case stepKill:
			line += "kill " + s.cur.ID + " (" + s.killReason + ")"
		case stepWait:
			line += "wait " + s.wait.Reason
			if !s.wait.Until.IsZero() {
				line += fmt.Sprintf(" until +%s", s.wait.Until.Sub(t0))
			}
		}
		out = append(out, line)
	}
	if !p.initDone {
		out = append(out, "init not done")
	}
	if p.initFailed {
		out = append(out, "init failed")
	}
	out = append(out, fmt.Sprintf("wake +%s", p.wakeAt.Sub(t0)))
	return strings.Join(out, "; ")
}

func TestDecide(t *testing.T) {
	withInit := func(p *v1.Pod, names ...string) *v1.Pod {
		for _, n := range names {
			p.Spec.InitContainers = append(p.Spec.InitContainers, &v1.Container{Name: n, Image: testImage})
		}
		return p
	}
	// withSidecar appends a sidecar, then regular init containers.
	withSidecar := func(p *v1.Pod, sidecar string, then ...string) *v1.Pod {
		p.Spec.InitContainers = append(p.Spec.InitContainers, &v1.Container{Name: sidecar, Image: testImage, RestartPolicy: "Always"})
		return withInit(p, then...)
	}
	policy := func(p *v1.Pod, pol string) *v1.Pod { p.Spec.RestartPolicy = pol; return p }
	// withRules gives the first init container, else the first app
	// container, its own restartPolicy and rules.
	withRules := func(p *v1.Pod, pol string, rules ...*v1.ContainerRestartRule) *v1.Pod {
		c := p.Spec.Containers[0]
		if len(p.Spec.InitContainers) > 0 {
			c = p.Spec.InitContainers[0]
		}
		c.RestartPolicy, c.RestartPolicyRules = pol, rules
		return p
	}
	sb1 := []runtime.SandboxStatus{sandbox("sb1", 0, time.Hour)}
	live := &v1.Probe{HttpGet: &v1.HTTPGetAction{Port: "80"}}

	for _, c := range []struct {
		name string
		in   *syncInput
		want string
	}{
		{"a new pod: a sandbox, then its container",
			input(newPod("p", "app"), nil),
			"sandbox create #0; app: start #0; wake +1m0s"},
		{"running and healthy: nothing to do",
			input(newPod("p", "app"), sb1, ctr("c1", "app", "sb1", 0, runtime.ContainerRunning)),
			"sandbox sb1; app: none; wake +1m0s"},
		{"exited under Always, no back-off yet: restarted at once, the back-off advanced from its exit",
			input(newPod("p", "app"), sb1, exitedAt(ctr("c1", "app", "sb1", 0, runtime.ContainerRunning), 1, 3*time.Second)),
			"sandbox sb1; app: start #1 restart backoff-from -3s; wake +1m0s"},
		{"exited within its back-off: CrashLoopBackOff until the back-off ends, and woken then",
			func() *syncInput {
				in := input(newPod("p", "app"), sb1, exitedAt(ctr("c1", "app", "sb1", 1, runtime.ContainerRunning), 1, 3*time.Second))
				in.crash["app"] = backoffState{Delay: 20 * time.Second, LastUpdate: t0.Add(-30 * time.Second), Max: 5 * time.Minute}
				return in
			}(),
			"sandbox sb1; app: wait CrashLoopBackOff until +17s; wake +17s"},
		{"a back-off not updated for twice its max is forgotten",
			func() *syncInput {
				in := input(newPod("p", "app"), sb1, exitedAt(ctr("c1", "app", "sb1", 1, runtime.ContainerRunning), 1, time.Second))
				in.crash["app"] = backoffState{Delay: 40 * time.Second, LastUpdate: t0.Add(-2 * time.Minute), Max: 40 * time.Second}
				return in
			}(),
			"sandbox sb1; app: start #2 restart backoff-from -1s; wake +1m0s"},
		{"exit 0 under OnFailure: left, and no sandbox needed for it",
			input(policy(newPod("p", "app"), "OnFailure"), nil, exitedAt(ctr("c1", "app", "gone", 0, runtime.ContainerRunning), 0, time.Second)),
			"sandbox none; wake +1m0s"},
		{"exit 1 under Never: left",
			input(policy(newPod("p", "app"), "Never"), sb1, exitedAt(ctr("c1", "app", "sb1", 0, runtime.ContainerRunning), 1, time.Second)),
			"sandbox sb1; app: none; wake +1m0s"},
		{"exit 42 under Never with a rule In [42]: restarted",
			input(withRules(policy(newPod("p", "app"), "Never"), "Never", rule("In", 42)), sb1, exitedAt(ctr("c1", "app", "sb1", 0, runtime.ContainerRunning), 42, time.Second)),
			"sandbox sb1; app: start #1 restart backoff-from -1s; wake +1m0s"},
		{"exit 1 under Never with a rule In [42]: left",
			input(withRules(policy(newPod("p", "app"), "Never"), "Never", rule("In", 42)), sb1, exitedAt(ctr("c1", "app", "sb1", 0, runtime.ContainerRunning), 1, time.Second)),
			"sandbox sb1; app: none; wake +1m0s"},
		{"exit 0 under Always with the container's Never: left",
			input(withRules(newPod("p", "app"), "Never"), sb1, exitedAt(ctr("c1", "app", "sb1", 0, runtime.ContainerRunning), 0, time.Second)),
			"sandbox sb1; app: none; wake +1m0s"},
		{"init: failed under Always, its own Never: the pod fails",
			input(withRules(withInit(newPod("p", "app"), "one"), "Never"), sb1, exitedAt(ctr("i1", "one", "sb1", 0, runtime.ContainerRunning), 2, time.Second)),
			"sandbox sb1; app: wait PodInitializing; init not done; init failed; wake +1m0s"},
		{"init: failed under Never, a rule In [2]: restarted",
			input(withRules(withInit(policy(newPod("p", "app"), "Never"), "one"), "Never", rule("In", 2)), sb1, exitedAt(ctr("i1", "one", "sb1", 0, runtime.ContainerRunning), 2, time.Second)),
			"sandbox sb1; one: start #1 backoff-from -1s; app: wait PodInitializing; init not done; wake +1m0s"},
		{"created but never started: started",
			input(newPod("p", "app"), sb1, ctr("c1", "app", "sb1", 0, runtime.ContainerCreated)),
			"sandbox sb1; app: start created c1; wake +1m0s"},
		{"state unknown: left alone",
			input(newPod("p", "app"), sb1, ctr("c1", "app", "sb1", 0, runtime.ContainerUnknown)),
			"sandbox sb1; app: none; wake +1m0s"},
		{"a failed liveness probe of this container: killed",
			func() *syncInput {
				p := newPod("p", "app")
				p.Spec.Containers[0].LivenessProbe = live
				in := input(p, sb1, ctr("c1", "app", "sb1", 0, runtime.ContainerRunning))
				in.probes["app"] = probeResults{liveness: prober.Result{State: prober.Failure, ContainerID: "c1"}}
				return in
			}(),
			"sandbox sb1; app: kill c1 (liveness probe); wake +1m0s"},
		{"a failed liveness probe of an earlier attempt: nothing",
			func() *syncInput {
				p := newPod("p", "app")
				p.Spec.Containers[0].LivenessProbe = live
				in := input(p, sb1, ctr("c2", "app", "sb1", 1, runtime.ContainerRunning))
				in.probes["app"] = probeResults{liveness: prober.Result{State: prober.Failure, ContainerID: "c1"}}
				return in
			}(),
			"sandbox sb1; app: none; wake +1m0s"},
		{"a failed startup probe: killed",
			func() *syncInput {
				p := newPod("p", "app")
				p.Spec.Containers[0].StartupProbe = live
				in := input(p, sb1, ctr("c1", "app", "sb1", 0, runtime.ContainerRunning))
				in.probes["app"] = probeResults{startup: prober.Result{State: prober.Failure, ContainerID: "c1"}}
				return in
			}(),
			"sandbox sb1; app: kill c1 (startup probe); wake +1m0s"},
		{"the spec's image changed: killed",
			func() *syncInput {
				p := newPod("p", "app")
				p.Spec.Containers[0].Image = "tugboat.local/busybox:2"
				return input(p, sb1, ctr("c1", "app", "sb1", 0, runtime.ContainerRunning))
			}(),
			"sandbox sb1; app: kill c1 (image changed); wake +1m0s"},
		{"sidecar: started first, the next init container and the app wait",
			input(withSidecar(newPod("p", "app"), "proxy", "one"), sb1),
			"sandbox sb1; proxy: start #0; app: wait PodInitializing; init not done; wake +1m0s"},
		{"sidecar running without a startup probe: the next init container starts",
			input(withSidecar(newPod("p", "app"), "proxy", "one"), sb1, ctr("s1", "proxy", "sb1", 0, runtime.ContainerRunning)),
			"sandbox sb1; proxy: none; one: start #0; app: wait PodInitializing; init not done; wake +1m0s"},
		{"sidecar running, its startup probe not passed yet: the next one waits",
			func() *syncInput {
				p := withSidecar(newPod("p", "app"), "proxy", "one")
				p.Spec.InitContainers[0].StartupProbe = live
				return input(p, sb1, ctr("s1", "proxy", "sb1", 0, runtime.ContainerRunning))
			}(),
			"sandbox sb1; proxy: none; app: wait PodInitializing; init not done; wake +1m0s"},
		{"sidecar started by its probe, init done: the app starts, the sidecar stays",
			func() *syncInput {
				p := withSidecar(newPod("p", "app"), "proxy")
				p.Spec.InitContainers[0].StartupProbe = live
				in := input(p, sb1, ctr("s1", "proxy", "sb1", 0, runtime.ContainerRunning))
				in.probes["proxy"] = probeResults{startup: prober.Result{State: prober.Success, ContainerID: "s1"}}
				return in
			}(),
			"sandbox sb1; proxy: none; app: start #0; wake +1m0s"},
		{"sidecar exited under restartPolicy Never while the app runs: restarted",
			input(policy(withSidecar(newPod("p", "app"), "proxy"), "Never"), sb1,
				exitedAt(ctr("s1", "proxy", "sb1", 0, runtime.ContainerRunning), 0, time.Second), ctr("c1", "app", "sb1", 0, runtime.ContainerRunning)),
			"sandbox sb1; proxy: start #1 restart backoff-from -1s; app: none; wake +1m0s"},
		{"sidecar exited after the app finished under Never: left",
			input(policy(withSidecar(newPod("p", "app"), "proxy"), "Never"), sb1,
				exitedAt(ctr("s1", "proxy", "sb1", 0, runtime.ContainerRunning), 1, time.Second), exitedAt(ctr("c1", "app", "sb1", 0, runtime.ContainerRunning), 0, time.Second)),
			"sandbox sb1; proxy: none; app: none; wake +1m0s"},
		{"sidecar failing liveness: killed; the app is not held up",
			func() *syncInput {
				p := withSidecar(newPod("p", "app"), "proxy")
				p.Spec.InitContainers[0].LivenessProbe = live
				in := input(p, sb1, ctr("s1", "proxy", "sb1", 0, runtime.ContainerRunning), ctr("c1", "app", "sb1", 0, runtime.ContainerRunning))
				in.probes["proxy"] = probeResults{liveness: prober.Result{State: prober.Failure, ContainerID: "s1"}}
				return in
			}(),
			"sandbox sb1; proxy: kill s1 (liveness probe); app: none; wake +1m0s"},
		{"sidecar restarting after the app started: the app is not held up",
			func() *syncInput {
				in := input(withSidecar(newPod("p", "app"), "proxy"), sb1,
					exitedAt(ctr("s1", "proxy", "sb1", 1, runtime.ContainerRunning), 1, 3*time.Second), exitedAt(ctr("c1", "app", "sb1", 0, runtime.ContainerRunning), 1, time.Second))
				in.crash["proxy"] = backoffState{Delay: 20 * time.Second, LastUpdate: t0.Add(-30 * time.Second), Max: 5 * time.Minute}
				return in
			}(),
			"sandbox sb1; proxy: wait CrashLoopBackOff until +17s; app: start #1 restart backoff-from -1s; wake +17s"},
		{"init: the first one runs, the app waits",
			input(withInit(newPod("p", "app"), "one", "two"), sb1, ctr("i1", "one", "sb1", 0, runtime.ContainerRunning)),
			"sandbox sb1; app: wait PodInitializing; init not done; wake +1m0s"},
		{"init: the first one done, the second started",
			input(withInit(newPod("p", "app"), "one", "two"), sb1, exitedAt(ctr("i1", "one", "sb1", 0, runtime.ContainerRunning), 0, time.Second)),
			"sandbox sb1; two: start #0; app: wait PodInitializing; init not done; wake +1m0s"},
		{"init: all done, the app starts",
			input(withInit(newPod("p", "app"), "one"), sb1, exitedAt(ctr("i1", "one", "sb1", 0, runtime.ContainerRunning), 0, time.Second)),
			"sandbox sb1; app: start #0; wake +1m0s"},
		{"init: failed under Never: the pod fails",
			input(withInit(policy(newPod("p", "app"), "Never"), "one"), sb1, exitedAt(ctr("i1", "one", "sb1", 0, runtime.ContainerRunning), 2, time.Second)),
			"sandbox sb1; app: wait PodInitializing; init not done; init failed; wake +1m0s"},
		{"init: failed under Always: restarted under the back-off (no restart count for init containers)",
			input(withInit(newPod("p", "app"), "one"), sb1, exitedAt(ctr("i1", "one", "sb1", 0, runtime.ContainerRunning), 2, time.Second)),
			"sandbox sb1; one: start #1 backoff-from -1s; app: wait PodInitializing; init not done; wake +1m0s"},
		{"init: a new sandbox runs them all again",
			func() *syncInput {
				in := input(withInit(newPod("p", "app"), "one"), sb1,
					exitedAt(ctr("i1", "one", "sb1", 0, runtime.ContainerRunning), 0, time.Minute), ctr("c1", "app", "sb1", 0, runtime.ContainerRunning))
				in.netnsGone["sb1"] = true // a reboot
				return in
			}(),
			"sandbox create #1; stale sb1; one: start #1; app: wait PodInitializing; init not done; wake +1m0s"},
		{"two Ready sandboxes: the newest is used, the other is stale",
			input(newPod("p", "app"), []runtime.SandboxStatus{sandbox("old", 0, time.Hour), sandbox("new", 1, time.Minute)},
				ctr("c1", "app", "new", 0, runtime.ContainerRunning)),
			"sandbox new; stale old; app: none; wake +1m0s"},
		{"a container of a replaced sandbox restarts in the new one",
			input(newPod("p", "app"), []runtime.SandboxStatus{sandbox("new", 1, time.Minute)}, ctr("c1", "app", "old", 0, runtime.ContainerRunning)),
			"sandbox new; app: start #1 restart backoff-from -0s; wake +1m0s"},
		{"a wiped node: the restart count goes on from the last status",
			func() *syncInput {
				in := input(newPod("p", "app"), nil)
				in.status = &v1.PodStatus{ContainerStatuses: []*v1.ContainerStatus{{Name: "app", ContainerId: "containerd://gone", RestartCount: 3}}}
				return in
			}(),
			"sandbox create #0; app: start #4; wake +1m0s"},
		{"the sandbox back-off after a failure: no sandbox, woken when it ends",
			func() *syncInput {
				in := input(newPod("p", "app"), nil)
				in.sandboxBackoff = backoffState{Delay: 4 * time.Second, LastUpdate: t0.Add(-time.Second), Max: 30 * time.Second}
				in.sandboxError = "CNI ADD failed"
				return in
			}(),
			"sandbox wait FailedCreatePodSandbox until +3s; wake +3s"},
		{"the network is not ready: no sandbox tried",
			func() *syncInput {
				in := input(newPod("p", "app"), nil)
				in.netReady = errors.New("no CNI config")
				return in
			}(),
			"sandbox refuse: network plugin not ready: no CNI config; wake +1m0s"},
		{"hostNetwork does not wait for the pod network",
			func() *syncInput {
				p := newPod("p", "app")
				p.Spec.HostNetwork = true
				in := input(p, nil)
				in.netReady = errors.New("no CNI config")
				return in
			}(),
			"sandbox create #0; app: start #0; wake +1m0s"},
		{"deleted from the API: terminated with at most 2s",
			func() *syncInput { in := input(newPod("p", "app"), sb1); in.deleted = true; return in }(),
			"terminate grace=2s"},
		{"being deleted: terminated with the deletion's grace",
			func() *syncInput {
				p := newPod("p", "app")
				p.Metadata.DeletionTimestamp = timestamppb.New(t0)
				p.Metadata.DeletionGracePeriodSeconds = 5
				return input(p, sb1)
			}(),
			"terminate grace=5s"},
		{"terminal: kept terminal",
			func() *syncInput { in := input(newPod("p", "app"), sb1); in.status.Phase = PhaseSucceeded; return in }(),
			"terminal"},
		{"an eviction: failed with the pod's grace",
			func() *syncInput { in := input(newPod("p", "app"), sb1); in.evict = "low on memory"; return in }(),
			`fail Evicted "low on memory" grace=30s`},
		{"past its active deadline: failed",
			func() *syncInput {
				p := newPod("p", "app")
				p.Spec.ActiveDeadlineSeconds = new(int64)
				*p.Spec.ActiveDeadlineSeconds = 30
				in := input(p, sb1, ctr("c1", "app", "sb1", 0, runtime.ContainerRunning))
				in.status.StartTime = timestamppb.New(t0.Add(-30 * time.Second))
				return in
			}(),
			`fail DeadlineExceeded "Pod was active on the node longer than the specified deadline" grace=30s`},
		{"before its active deadline: runs",
			func() *syncInput {
				p := newPod("p", "app")
				p.Spec.ActiveDeadlineSeconds = new(int64)
				*p.Spec.ActiveDeadlineSeconds = 30
				in := input(p, sb1, ctr("c1", "app", "sb1", 0, runtime.ContainerRunning))
				in.status.StartTime = timestamppb.New(t0.Add(-29 * time.Second))
				return in
			}(),
			"sandbox sb1; app: none; wake +1m0s"},
	} {
		if got := render(decide(c.in)); got != c.want {
			t.Errorf("%s:\n got %s\nwant %s", c.name, got, c.want)
		}
	}
}

// TestAfterExit: what follows a kill is decided on how the container
// exited.
func TestAfterExit(t *testing.T) {
	killed := exitedAt(ctr("c1", "app", "sb1", 0, runtime.ContainerRunning), 0, 0)
	for _, c := range []struct {
		policy string
		code   int
		want   stepKind
	}{
		{"Always", 0, stepStart},
		{"OnFailure", 0, stepNone}, // it handled SIGTERM and exited 0
		{"OnFailure", 137, stepStart},
		{"Never", 137, stepNone},
		{"Never", 0, stepNone},
	} {
		k := killed
		k.ExitCode = c.code
		p := newPod("p", "app")
		p.Spec.RestartPolicy = c.policy
		if s := afterExit(input(p, nil, k), p.Spec.Containers[0], &k); s.do != c.want {
			t.Errorf("%s, exit %d: step %d, want %d", c.policy, c.code, s.do, c.want)
		}
	}
	// An app container's own restartPolicy Always (no sidecar: not an
	// init container) under the pod's Never: restarted after a kill.
	k := killed
	k.ExitCode = 137
	p := newPod("p", "app")
	p.Spec.RestartPolicy = "Never"
	p.Spec.Containers[0].RestartPolicy = "Always"
	if s := afterExit(input(p, nil, k), p.Spec.Containers[0], &k); s.do != stepStart || s.init {
		t.Errorf("app container with its own Always: step %d (init %v), want a start of an app container", s.do, s.init)
	}
}
