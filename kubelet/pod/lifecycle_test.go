package pod

import (
	"slices"
	"strings"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/timestamppb"

	v1 "github.com/tugboat/tugboat/api/v1"
	"github.com/tugboat/tugboat/kubelet/prober"
	"github.com/tugboat/tugboat/kubelet/runtime"
)

func execHook(cmd ...string) *v1.LifecycleHandler {
	return &v1.LifecycleHandler{Exec: &v1.ExecAction{Command: cmd}}
}

// callsLike keeps the runtime calls that start with one of prefixes.
func callsLike(calls []string, prefixes ...string) []string {
	var out []string
	for _, c := range calls {
		for _, p := range prefixes {
			if strings.HasPrefix(c, p) {
				out = append(out, c)
				break
			}
		}
	}
	return out
}

// TestPostStartFails: a failing postStart hook runs right after the
// start; the container is killed (FailedPostStartHook events, its preStop
// first), waits with PostStartHookError and the hook's message, and is
// restarted by the next sync.
func TestPostStartFails(t *testing.T) {
	e := newTestEnv(t)
	pod := newPod("hooked", "app")
	pod.Spec.Containers[0].Lifecycle = &v1.Lifecycle{PostStart: execHook("setup"), PreStop: execHook("drain")}
	e.rt.onExec = func(_ string, cmd []string) (int, string) {
		if cmd[0] == "setup" {
			return 3, "no config"
		}
		return 0, ""
	}
	w := e.worker(pod)
	e.sync(w)
	want := []string{"StartContainer app/0", "Exec app setup", "Exec app drain", "StopContainer app/0"}
	if got := callsLike(e.rt.calls, "StartContainer", "Exec", "StopContainer"); !slices.Equal(got, want) {
		t.Errorf("calls %q, want %q", got, want)
	}
	for _, ev := range []string{"Warning FailedPostStartHook: PostStartHook failed", "Normal Killing: FailedPostStartHook"} {
		if !slices.Contains(e.rec.events, ev) {
			t.Errorf("events %q lack %q", e.rec.events, ev)
		}
	}
	cs := containerState(w.status, "app")
	wantMsg := `Exec lifecycle hook ([setup]) for Container "app" in Pod "hooked_default(uid-hooked)" failed - error: command 'setup' exited with 3: no config, message: "no config"`
	if wt := cs.GetState().GetWaiting(); wt.GetReason() != ReasonPostStartHookError || wt.GetMessage() != wantMsg {
		t.Errorf("state %v, want waiting %s %q", cs.GetState(), ReasonPostStartHookError, wantMsg)
	}
	if cs.GetLastState().GetTerminated() == nil || cs.Ready || condition(w.status, CondReady) == "True" {
		t.Errorf("ready %v, last state %v: want the killed attempt terminated, the pod not ready", cs.Ready, cs.GetLastState())
	}
	e.rt.onExec = nil
	e.advance(time.Second)
	e.sync(w)
	if cs := containerState(w.status, "app"); cs.GetState().GetRunning() == nil || cs.RestartCount != 1 {
		t.Errorf("after the next sync: %v, want running, restarted once", cs)
	}
}

// TestPreStopThenStop: a deletion runs each container's preStop hook
// before its stop, the stop getting the grace period; a failing preStop
// is reported (FailedPreStopHook) and the stop goes on.
func TestPreStopThenStop(t *testing.T) {
	e := newTestEnv(t)
	pod := newPod("bye", "app")
	pod.Spec.Containers[0].Lifecycle = &v1.Lifecycle{PreStop: execHook("drain")}
	e.rt.onExec = func(string, []string) (int, string) { return 1, "" }
	w := e.worker(pod)
	e.sync(w)
	deleting := proto.Clone(pod).(*v1.Pod)
	deleting.Metadata.DeletionTimestamp = timestamppb.New(e.now().Add(5 * time.Second))
	deleting.Metadata.DeletionGracePeriodSeconds = 5
	w.update(deleting)
	if res := e.sync(w); !res.done {
		t.Fatal("worker not done after terminating")
	}
	want := []string{"Exec app drain", "StopContainer app/0"}
	if got := callsLike(e.rt.calls, "Exec", "StopContainer"); !slices.Equal(got, want) {
		t.Errorf("calls %q, want %q", got, want)
	}
	if len(e.rt.stops) != 1 || e.rt.stops[0].grace != 5*time.Second {
		t.Errorf("stops %v, want one with the 5s grace", e.rt.stops)
	}
	if !slices.Contains(e.rec.events, "Warning FailedPreStopHook: PreStopHook failed") {
		t.Errorf("events %q, want FailedPreStopHook", e.rec.events)
	}
}

// TestLivenessKillRunsPreStop: a container killed for its failed liveness
// probe gets its preStop hook first.
func TestLivenessKillRunsPreStop(t *testing.T) {
	e := newTestEnv(t)
	pod := newPod("sick", "app")
	pod.Spec.Containers[0].LivenessProbe = &v1.Probe{Exec: &v1.ExecAction{Command: []string{"check"}}}
	pod.Spec.Containers[0].Lifecycle = &v1.Lifecycle{PreStop: execHook("drain")}
	w := e.worker(pod)
	e.sync(w)
	id := e.rt.running()[0].ID
	e.prober.set("app", prober.Liveness, prober.Result{State: prober.Failure, ContainerID: id})
	e.sync(w)
	want := []string{"StartContainer app/0", "Exec app drain", "StopContainer app/0", "StartContainer app/1"}
	if got := callsLike(e.rt.calls, "StartContainer", "Exec", "StopContainer"); !slices.Equal(got, want) {
		t.Errorf("calls %q, want %q", got, want)
	}
}

// sidecarPod is a pod with sidecars s1 and s2 (in that order), then app
// container app.
func sidecarPod(name string) *v1.Pod {
	p := newPod(name, "app")
	for _, n := range []string{"s1", "s2"} {
		p.Spec.InitContainers = append(p.Spec.InitContainers, &v1.Container{Name: n, Image: testImage, ImagePullPolicy: "IfNotPresent", RestartPolicy: "Always"})
	}
	return p
}

// TestSidecarStopOrder: on delete the app container stops first, then
// the sidecars in reverse order; all their preStop hooks run.
func TestSidecarStopOrder(t *testing.T) {
	e := newTestEnv(t)
	pod := sidecarPod("web")
	for _, c := range append(pod.Spec.InitContainers, pod.Spec.Containers...) {
		c.Lifecycle = &v1.Lifecycle{PreStop: execHook("drain")}
	}
	w := e.worker(pod)
	for range 3 {
		e.sync(w)
	}
	if got := callsLike(e.rt.calls, "StartContainer"); !slices.Equal(got, []string{"StartContainer s1/0", "StartContainer s2/0", "StartContainer app/0"}) {
		t.Fatalf("starts %q, want s1, s2, then app", got)
	}
	if w.status.Phase != PhaseRunning || condition(w.status, CondReady) != "True" {
		t.Fatalf("phase %s, Ready %s", w.status.Phase, condition(w.status, CondReady))
	}
	for _, cs := range w.status.InitContainerStatuses {
		if cs.GetState().GetRunning() == nil || !cs.Started || !cs.Ready {
			t.Errorf("sidecar %v, want running, started, ready", cs)
		}
	}
	deleting := proto.Clone(pod).(*v1.Pod)
	deleting.Metadata.DeletionTimestamp = timestamppb.New(e.now().Add(10 * time.Second))
	deleting.Metadata.DeletionGracePeriodSeconds = 10
	w.update(deleting)
	if res := e.sync(w); !res.done {
		t.Fatal("worker not done after terminating")
	}
	if got := callsLike(e.rt.calls, "StopContainer"); !slices.Equal(got, []string{"StopContainer app/0", "StopContainer s2/0", "StopContainer s1/0"}) {
		t.Errorf("stops %q, want app, s2, s1", got)
	}
	if got := len(callsLike(e.rt.calls, "Exec")); got != 3 {
		t.Errorf("%d preStop hooks ran, want 3", got)
	}
}

// TestSidecarJobCompletes: under restartPolicy Never the pod Succeeds
// when its app container exits 0, its sidecars stopped (not restarted).
func TestSidecarJobCompletes(t *testing.T) {
	e := newTestEnv(t)
	pod := sidecarPod("job")
	pod.Spec.RestartPolicy = "Never"
	w := e.worker(pod)
	for range 3 {
		e.sync(w)
	}
	if w.status.Phase != PhaseRunning {
		t.Fatalf("phase %s, want Running", w.status.Phase)
	}
	e.rt.exit("app", 0, "")
	e.sync(w)
	if w.status.Phase != PhaseSucceeded {
		t.Fatalf("phase %s, want Succeeded", w.status.Phase)
	}
	if got := callsLike(e.rt.calls, "StopContainer"); !slices.Equal(got, []string{"StopContainer s2/0", "StopContainer s1/0"}) {
		t.Errorf("stops %q, want s2 then s1", got)
	}
	for _, cs := range w.status.InitContainerStatuses {
		if cs.GetState().GetTerminated() == nil || cs.RestartCount != 0 {
			t.Errorf("sidecar %v, want terminated, not restarted", cs)
		}
	}
	if len(e.rt.running()) != 0 {
		t.Errorf("still running: %v", e.rt.running())
	}
}

// TestSidecarRestartsUnderNever: a sidecar that exits while the app runs
// is restarted, whatever the pod's restartPolicy; its readiness counts
// for the pod's.
func TestSidecarRestartsUnderNever(t *testing.T) {
	e := newTestEnv(t)
	pod := sidecarPod("web")
	pod.Spec.RestartPolicy = "Never"
	pod.Spec.InitContainers[0].ReadinessProbe = &v1.Probe{Exec: &v1.ExecAction{Command: []string{"ready"}}}
	w := e.worker(pod)
	for range 3 {
		e.sync(w)
	}
	if got := condition(w.status, CondReady); got != "False" {
		t.Errorf("Ready %s before the sidecar's readiness probe passed, want False", got)
	}
	if c := findCondition(w.status.Conditions, CondReady); !strings.Contains(c.GetMessage(), "[s1]") {
		t.Errorf("Ready message %q, want it to name s1", c.GetMessage())
	}
	var s1 runtime.ContainerStatus
	for _, c := range e.rt.running() {
		if c.Name == "s1" {
			s1 = c
		}
	}
	e.prober.set("s1", prober.Readiness, prober.Result{State: prober.Success, ContainerID: s1.ID})
	e.sync(w)
	if got := condition(w.status, CondReady); got != "True" {
		t.Errorf("Ready %s with every container ready, want True", got)
	}
	e.rt.exit("s1", 1, "")
	e.sync(w)
	if got := callsLike(e.rt.calls, "StartContainer s1"); !slices.Equal(got, []string{"StartContainer s1/0", "StartContainer s1/1"}) {
		t.Errorf("s1 starts %q, want it restarted", got)
	}
	if w.status.Phase != PhaseRunning {
		t.Errorf("phase %s, want Running", w.status.Phase)
	}
}

// TestDeleteAbortsPostStart: a pod deleted while its container's
// postStart hook runs (a long sleep) aborts the hook — the container is
// not reported running — and is stopped by the next sync.
func TestDeleteAbortsPostStart(t *testing.T) {
	e := newTestEnv(t)
	pod := newPod("slow", "app")
	pod.Spec.Containers[0].Lifecycle = &v1.Lifecycle{PostStart: &v1.LifecycleHandler{Sleep: &v1.SleepAction{Seconds: 3600}}}
	w := e.worker(pod)
	deleting := proto.Clone(pod).(*v1.Pod)
	deleting.Metadata.DeletionTimestamp = timestamppb.New(e.now().Add(5 * time.Second))
	deleting.Metadata.DeletionGracePeriodSeconds = 5
	e.rt.onStart = func(runtime.ContainerConfig) (bool, int, string) {
		w.update(deleting) // the deletion arrives once the container started
		return false, 0, ""
	}
	e.sync(w)
	if cs := containerState(w.status, "app"); cs.GetState().GetRunning() != nil || e.rec.has("FailedPostStartHook") {
		t.Errorf("state %v, events %q: want not running, no hook failure", cs.GetState(), e.rec.events)
	}
	if res := e.sync(w); !res.done || len(e.rt.stops) != 1 {
		t.Errorf("done %v, stops %v: want the pod stopped and gone", res.done, e.rt.stops)
	}
}
