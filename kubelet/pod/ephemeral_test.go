package pod

import (
	"strings"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"

	v1 "github.com/tugboat/tugboat/api/v1"
	"github.com/tugboat/tugboat/kubelet/runtime"
)

// TestDecideEphemeral: an ephemeral container starts once, in the current
// sandbox only, in its target's process namespace (which must run), and
// is never restarted.
func TestDecideEphemeral(t *testing.T) {
	debug := func(p *v1.Pod, target string) *v1.Pod {
		p.Spec.EphemeralContainers = append(p.Spec.EphemeralContainers, &v1.EphemeralContainer{Name: "dbg", Image: testImage, Stdin: true, Tty: true, TargetContainerName: target})
		return p
	}
	sb1 := []runtime.SandboxStatus{sandbox("sb1", 0, time.Hour)}
	app := ctr("c1", "app", "sb1", 0, runtime.ContainerRunning)
	reported := func(in *syncInput) *syncInput {
		in.status = &v1.PodStatus{EphemeralContainerStatuses: []*v1.ContainerStatus{{Name: "dbg", ContainerId: "cri://d1"}}}
		return in
	}
	for _, c := range []struct {
		name string
		in   *syncInput
		want string
	}{
		{"added to a running pod: started",
			input(debug(newPod("p", "app"), ""), sb1, app),
			"sandbox sb1; app: none; dbg: start #0; wake +1m0s"},
		{"with a running target",
			input(debug(newPod("p", "app"), "app"), sb1, app),
			"sandbox sb1; app: none; dbg: start #0 target c1; wake +1m0s"},
		{"target not running: waits",
			input(debug(newPod("p", "app"), "app"), sb1, exitedAt(app, 1, time.Second)),
			"sandbox sb1; app: start #1 restart backoff-from -1s; dbg: wait CreateContainerError until +5s; wake +5s"},
		{"no sandbox yet: not started with a new one",
			input(debug(newPod("p", "app"), ""), nil),
			"sandbox create #0; app: start #0; wake +1m0s"},
		{"running: left alone",
			input(debug(newPod("p", "app"), ""), sb1, app, ctr("d1", "dbg", "sb1", 0, runtime.ContainerRunning)),
			"sandbox sb1; app: none; dbg: none; wake +1m0s"},
		{"exited: never restarted",
			input(debug(newPod("p", "app"), ""), sb1, app, exitedAt(ctr("d1", "dbg", "sb1", 0, runtime.ContainerRunning), 0, time.Second)),
			"sandbox sb1; app: none; dbg: none; wake +1m0s"},
		{"created, never started: started",
			input(debug(newPod("p", "app"), ""), sb1, app, ctr("d1", "dbg", "sb1", 0, runtime.ContainerCreated)),
			"sandbox sb1; app: none; dbg: start created d1; wake +1m0s"},
		{"in an old sandbox: not started in the new one",
			input(debug(newPod("p", "app"), ""), sb1, app, exitedAt(ctr("d0", "dbg", "sb0", 0, runtime.ContainerRunning), 137, time.Minute)),
			"sandbox sb1; app: none; dbg: none; wake +1m0s"},
		{"reported once, lost by the runtime: not started again",
			reported(input(debug(newPod("p", "app"), ""), sb1, app)),
			"sandbox sb1; app: none; dbg: none; wake +1m0s"},
	} {
		t.Run(c.name, func(t *testing.T) {
			if got := render(decide(c.in)); got != c.want {
				t.Errorf("\n got %s\nwant %s", got, c.want)
			}
		})
	}
}

// TestEphemeralContainerRuns: added to a running pod, an ephemeral
// container is started in the pod's sandbox (no new sandbox, the app
// container untouched) in its target's process namespace, reported in
// ephemeralContainerStatuses (running, then terminated), not ready and
// not in the pod's conditions, and not restarted after it exits.
func TestEphemeralContainerRuns(t *testing.T) {
	e := newTestEnv(t)
	pod := newPod("web", "app")
	w := e.worker(pod)
	e.sync(w)
	if w.status.Phase != PhaseRunning {
		t.Fatalf("phase %s", w.status.Phase)
	}
	appID := containerState(w.status, "app").ContainerId
	next := proto.Clone(pod).(*v1.Pod)
	next.Spec.EphemeralContainers = []*v1.EphemeralContainer{{Name: "debugger", Image: testImage, ImagePullPolicy: "IfNotPresent",
		Stdin: true, Tty: true, TargetContainerName: "app", TerminationMessagePath: "/dev/termination-log", TerminationMessagePolicy: "File"}}
	w.update(next)
	e.rt.calls = nil
	e.sync(w)
	if got := strings.Join(e.rt.calls, ","); got != "CreateContainer debugger/0,StartContainer debugger/0" {
		t.Fatalf("calls %s, want the ephemeral container made in the running sandbox only", got)
	}
	var cfg runtime.ContainerConfig
	var appRuntimeID string
	for id, c := range e.rt.containers {
		switch c.cfg.Name {
		case "debugger":
			cfg = c.cfg
		case "app":
			appRuntimeID = id
		}
	}
	if cfg.PIDTargetID != appRuntimeID || !cfg.Stdin || !cfg.TTY || cfg.Labels[LabelEphemeral] != "true" {
		t.Errorf("ephemeral container config: target %q (want %q) stdin %v tty %v labels %v", cfg.PIDTargetID, appRuntimeID, cfg.Stdin, cfg.TTY, cfg.Labels)
	}
	es := w.status.GetEphemeralContainerStatuses()
	if len(es) != 1 || es[0].Name != "debugger" || es[0].GetState().GetRunning() == nil || es[0].Ready || es[0].ContainerId == "" {
		t.Fatalf("ephemeral statuses %v", es)
	}
	if containerState(w.status, "app").ContainerId != appID || condition(w.status, CondReady) != "True" || len(w.status.ContainerStatuses) != 1 {
		t.Errorf("the app container or the pod's readiness changed: %v", w.status)
	}

	e.rt.exit("debugger", 0, "Completed")
	e.rt.calls = nil
	e.advance(time.Minute)
	e.sync(w)
	e.advance(time.Minute)
	e.sync(w)
	if len(e.rt.calls) != 0 {
		t.Errorf("after the ephemeral container exited: calls %v, want none (never restarted)", e.rt.calls)
	}
	es = w.status.GetEphemeralContainerStatuses()
	if len(es) != 1 || es[0].GetState().GetTerminated().GetReason() != "Completed" || es[0].RestartCount != 0 {
		t.Errorf("ephemeral status after exit: %v", es)
	}
	if w.status.Phase != PhaseRunning || condition(w.status, CondReady) != "True" {
		t.Errorf("the pod after its ephemeral container exited: phase %s ready %s", w.status.Phase, condition(w.status, CondReady))
	}
}
