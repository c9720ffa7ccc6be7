package pod

import (
	"testing"
	"time"

	v1 "github.com/tugboat/tugboat/api/v1"
)

func TestExpand(t *testing.T) {
	vars := map[string]string{"A": "1", "B": "two"}
	lookup := func(n string) (string, bool) { v, ok := vars[n]; return v, ok }
	for _, tc := range []struct{ in, want string }{
		{"plain", "plain"},
		{"$(A)", "1"},
		{"x$(A)y$(B)z", "x1ytwoz"},
		{"$(C)", "$(C)"},
		{"$$(A)", "$(A)"},
		{"$$", "$"},
		{"$", "$"},
		{"a$b", "a$b"},
		{"$(A", "$(A"},
		{"$()", "$()"},
	} {
		if got := expand(tc.in, lookup); got != tc.want {
			t.Errorf("expand(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

func running() *v1.ContainerStatus {
	return &v1.ContainerStatus{State: &v1.ContainerState{Running: &v1.ContainerStateRunning{}}}
}
func exited(code int32) *v1.ContainerStatus {
	return &v1.ContainerStatus{State: &v1.ContainerState{Terminated: &v1.ContainerStateTerminated{ExitCode: code}}}
}
func waitingFresh() *v1.ContainerStatus {
	return &v1.ContainerStatus{State: &v1.ContainerState{Waiting: &v1.ContainerStateWaiting{Reason: "ContainerCreating"}}, LastState: &v1.ContainerState{}}
}
func restarting() *v1.ContainerStatus {
	return &v1.ContainerStatus{State: &v1.ContainerState{Waiting: &v1.ContainerStateWaiting{Reason: "CrashLoopBackOff"}},
		LastState: &v1.ContainerState{Terminated: &v1.ContainerStateTerminated{ExitCode: 1}}}
}

func TestPodPhase(t *testing.T) {
	for _, tc := range []struct {
		name       string
		policy     string
		init, fail bool
		cs         []*v1.ContainerStatus
		want       string
	}{
		{"creating", "Always", true, false, []*v1.ContainerStatus{waitingFresh()}, PhasePending},
		{"one of two started", "Always", true, false, []*v1.ContainerStatus{running(), waitingFresh()}, PhasePending},
		{"running", "Always", true, false, []*v1.ContainerStatus{running(), running()}, PhaseRunning},
		{"crash looping", "Always", true, false, []*v1.ContainerStatus{restarting()}, PhaseRunning},
		{"always, all exited", "Always", true, false, []*v1.ContainerStatus{exited(0)}, PhaseRunning},
		{"never, success", "Never", true, false, []*v1.ContainerStatus{exited(0), exited(0)}, PhaseSucceeded},
		{"never, one failed", "Never", true, false, []*v1.ContainerStatus{exited(0), exited(1)}, PhaseFailed},
		{"onfailure, failed", "OnFailure", true, false, []*v1.ContainerStatus{exited(1)}, PhaseRunning},
		{"onfailure, success", "OnFailure", true, false, []*v1.ContainerStatus{exited(0)}, PhaseSucceeded},
		{"one still running", "Never", true, false, []*v1.ContainerStatus{exited(1), running()}, PhaseRunning},
		{"initializing", "Always", false, false, []*v1.ContainerStatus{waitingFresh()}, PhasePending},
		{"init failed", "Never", false, true, []*v1.ContainerStatus{waitingFresh()}, PhaseFailed},
	} {
		if got := podPhase(&v1.PodSpec{RestartPolicy: tc.policy}, tc.init, tc.fail, tc.cs); got != tc.want {
			t.Errorf("%s: phase %s, want %s", tc.name, got, tc.want)
		}
	}
}

func TestBackoff(t *testing.T) {
	now := time.Unix(1000, 0)
	b := newBackoff(10*time.Second, 40*time.Second, func() time.Time { return now })
	finished := now
	if busy, _ := b.inBackoffSince("k", finished); busy {
		t.Fatal("in back-off before any failure")
	}
	var delays []time.Duration
	for i := 0; i < 5; i++ {
		b.next("k", finished)
		delays = append(delays, b.delay("k"))
	}
	want := []time.Duration{10 * time.Second, 20 * time.Second, 40 * time.Second, 40 * time.Second, 40 * time.Second}
	for i := range want {
		if delays[i] != want[i] {
			t.Fatalf("delays %v, want %v", delays, want)
		}
	}
	if busy, until := b.inBackoffSince("k", finished); !busy || !until.Equal(finished.Add(40*time.Second)) {
		t.Errorf("inBackoffSince = %v %v", busy, until)
	}
	// A container that ran fine for longer than 2*max starts over.
	now = now.Add(81 * time.Second)
	if busy, _ := b.inBackoffSince("k", now); busy {
		t.Error("still in back-off after 2*max without failures")
	}
	b.next("k", now)
	if b.delay("k") != 10*time.Second {
		t.Errorf("delay %s after expiry, want 10s", b.delay("k"))
	}
}

func TestPullPolicyDefaults(t *testing.T) {
	for image, want := range map[string]string{
		"busybox":                      "Always",
		"busybox:latest":               "Always",
		"tugboat.local/echo:latest":    "Always",
		"busybox:1.36":                 "IfNotPresent",
		"localhost:5000/app:v1":        "IfNotPresent",
		"busybox@sha256:" + sha64("a"): "IfNotPresent",
	} {
		if got := pullPolicy(&v1.Container{Image: image}); got != want {
			t.Errorf("pullPolicy(%s) = %s, want %s", image, got, want)
		}
	}
}

func sha64(c string) string {
	s := ""
	for len(s) < 64 {
		s += c
	}
	return s
}
