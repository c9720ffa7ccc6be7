package pod

import (
	"testing"

	v1 "github.com/tugboat/tugboat/api/v1"
)

func rule(op string, codes ...int32) *v1.ContainerRestartRule {
	return &v1.ContainerRestartRule{Action: "Restart", ExitCodes: &v1.ContainerRestartRuleOnExitCodes{Operator: op, Values: codes}}
}

func TestContainerShouldRestart(t *testing.T) {
	for _, tc := range []struct {
		name      string
		podPolicy string
		policy    string
		rules     []*v1.ContainerRestartRule
		exit      int
		want      bool
	}{
		{"pod Never, no override", "Never", "", nil, 1, false},
		{"pod Always, no override, success", "Always", "", nil, 0, true},
		{"pod OnFailure, no override, success", "OnFailure", "", nil, 0, false},
		{"pod OnFailure, no override, failure", "OnFailure", "", nil, 3, true},
		{"container Never overrides pod Always", "Always", "Never", nil, 1, false},
		{"container Always overrides pod Never", "Never", "Always", nil, 0, true},
		{"container OnFailure overrides pod Never", "Never", "OnFailure", nil, 2, true},
		{"rule In matches", "Never", "Never", []*v1.ContainerRestartRule{rule("In", 42)}, 42, true},
		{"rule In does not match: container policy", "Never", "Never", []*v1.ContainerRestartRule{rule("In", 42)}, 1, false},
		{"rule In does not match: container OnFailure", "Never", "OnFailure", []*v1.ContainerRestartRule{rule("In", 42)}, 1, true},
		{"rule NotIn matches", "Never", "Never", []*v1.ContainerRestartRule{rule("NotIn", 0, 1)}, 7, true},
		{"rule NotIn does not match", "Never", "Never", []*v1.ContainerRestartRule{rule("NotIn", 0, 1)}, 1, false},
		{"first matching rule decides", "Never", "Never", []*v1.ContainerRestartRule{rule("In", 5), rule("In", 42)}, 42, true},
		{"rules ignored without the container's own policy", "Never", "", []*v1.ContainerRestartRule{rule("In", 42)}, 42, false},
		{"rule with exit 0", "Never", "Never", []*v1.ContainerRestartRule{rule("In", 0)}, 0, true},
		{"rule without exitCodes matches nothing", "Never", "Never", []*v1.ContainerRestartRule{{Action: "Restart"}}, 1, false},
	} {
		c := &v1.Container{Name: "c", RestartPolicy: tc.policy, RestartPolicyRules: tc.rules}
		spec := &v1.PodSpec{RestartPolicy: tc.podPolicy, Containers: []*v1.Container{c}}
		if got := containerShouldRestart(c, spec, tc.exit); got != tc.want {
			t.Errorf("%s: restart %v, want %v", tc.name, got, tc.want)
		}
	}
}

// TestPodPhaseRestartRules: a pod whose restartPolicy is Never runs on
// while a container's rule restarts it, and fails once none does.
func TestPodPhaseRestartRules(t *testing.T) {
	c := &v1.Container{Name: "main", RestartPolicy: "Never", RestartPolicyRules: []*v1.ContainerRestartRule{rule("In", 42)}}
	spec := &v1.PodSpec{RestartPolicy: "Never", Containers: []*v1.Container{c}}
	named := func(cs *v1.ContainerStatus) []*v1.ContainerStatus { cs.Name = "main"; return []*v1.ContainerStatus{cs} }
	for _, tc := range []struct {
		name string
		cs   []*v1.ContainerStatus
		want string
	}{
		{"exited 42: restarted", named(exited(42)), PhaseRunning},
		{"back-off after 42", named(&v1.ContainerStatus{State: &v1.ContainerState{Waiting: &v1.ContainerStateWaiting{Reason: "CrashLoopBackOff"}},
			LastState: &v1.ContainerState{Terminated: &v1.ContainerStateTerminated{ExitCode: 42}}}), PhaseRunning},
		{"exited 1: failed", named(exited(1)), PhaseFailed},
		{"exited 0: succeeded", named(exited(0)), PhaseSucceeded},
	} {
		if got := podPhase(spec, true, false, tc.cs); got != tc.want {
			t.Errorf("%s: phase %s, want %s", tc.name, got, tc.want)
		}
	}
}
