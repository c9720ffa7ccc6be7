package validation_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/tugboat/tugboat/api/kinds"
	v1 "github.com/tugboat/tugboat/api/v1"
	"github.com/tugboat/tugboat/api/validation"
)

func withSpec(f func(s *v1.PodSpec)) func() v1.Object {
	return func() v1.Object { p := pod(); f(p.Spec); return p }
}

func podRes(req, lim map[string]string) *v1.ResourceRequirements {
	return &v1.ResourceRequirements{Requests: req, Limits: lim}
}

// TestPodLevelResourcesValidation: Kubernetes' validatePodResources and
// validatePodResourceConsistency, with its messages. The pod's one
// container requests cpu 250m and memory 64Mi, with limits 1 and 128Mi.
func TestPodLevelResourcesValidation(t *testing.T) {
	const r = "spec.resources"
	runValidation(t, []validationCase{
		{"limits and requests", withSpec(func(s *v1.PodSpec) {
			s.Resources = podRes(map[string]string{"cpu": "500m", "memory": "128Mi"}, map[string]string{"cpu": "2", "memory": "256Mi"})
		}), nil},
		{"limits only (requests defaulted)", withSpec(func(s *v1.PodSpec) {
			s.Resources = podRes(nil, map[string]string{"cpu": "1", "memory": "128Mi"})
		}), nil},
		{"hugepages with memory", withSpec(func(s *v1.PodSpec) {
			s.Resources = podRes(map[string]string{"hugepages-2Mi": "4Mi"}, map[string]string{"memory": "1Gi", "hugepages-2Mi": "4Mi"})
		}), nil},
		{"not a pod-level resource", withSpec(func(s *v1.PodSpec) {
			s.Resources = podRes(nil, map[string]string{"ephemeral-storage": "1Gi", "cpu": "1"})
		}), []string{r + `.limits[ephemeral-storage]: Unsupported value: "ephemeral-storage": supported values: "cpu", "hugepages-", "memory"`}},
		{"an extended resource", withSpec(func(s *v1.PodSpec) {
			s.Resources = podRes(map[string]string{"example.com/dongle": "1"}, nil)
		}), []string{r + `.requests[example.com/dongle]: Unsupported value: "example.com/dongle": supported values: "cpu", "hugepages-", "memory"`}},
		{"not a resource name", withSpec(func(s *v1.PodSpec) {
			s.Resources = podRes(map[string]string{"cpus": "1"}, nil)
		}), []string{r + `.requests[cpus]: Invalid value: "cpus": must be a standard resource type or fully qualified`}},
		{"negative", withSpec(func(s *v1.PodSpec) {
			s.Resources = podRes(nil, map[string]string{"memory": "-1Gi"})
		}), []string{r + `.limits[memory]: Invalid value: "-1Gi": must be greater than or equal to 0`}},
		{"not a quantity", withSpec(func(s *v1.PodSpec) {
			s.Resources = podRes(nil, map[string]string{"cpu": "lots"})
		}), []string{r + `.limits[cpu]: Invalid value: "lots": quantities must match the regular expression`}},
		{"request above limit", withSpec(func(s *v1.PodSpec) {
			s.Resources = podRes(map[string]string{"cpu": "3"}, map[string]string{"cpu": "2"})
		}), []string{r + `.requests: Invalid value: "3": must be less than or equal to cpu limit of 2`}},
		{"requests below the containers' sum", withSpec(func(s *v1.PodSpec) {
			s.Containers = append(s.Containers, &v1.Container{Name: "d", Image: "nginx:1.25",
				Resources: podRes(map[string]string{"cpu": "1250m", "memory": "1Gi"}, nil)})
			s.Resources = podRes(map[string]string{"cpu": "1", "memory": "512Mi"}, nil)
		}), []string{r + `.requests[cpu]: Invalid value: "1": must be greater than or equal to aggregate container requests of 1500m`,
			r + `.requests[memory]: Invalid value: "512Mi": must be greater than or equal to aggregate container requests of 1088Mi`}},
		{"requests below an init container's", withSpec(func(s *v1.PodSpec) {
			s.InitContainers = []*v1.Container{{Name: "setup", Image: "busybox:1.36", Resources: podRes(map[string]string{"cpu": "2"}, nil)}}
			s.Resources = podRes(map[string]string{"cpu": "1"}, nil)
		}), []string{r + `.requests[cpu]: Invalid value: "1": must be greater than or equal to aggregate container requests of 2`}},
		{"a container's limit above the pod's", withSpec(func(s *v1.PodSpec) {
			s.Resources = podRes(nil, map[string]string{"cpu": "500m", "memory": "1Gi"})
		}), []string{r + `.containers[0][cpu].limits: Invalid value: "1": must be less than or equal to pod limits of 500m`}},
		{"hugepages request without limit", withSpec(func(s *v1.PodSpec) {
			s.Resources = podRes(map[string]string{"memory": "1Gi", "hugepages-2Mi": "4Mi"}, nil)
		}), []string{r + ".limits: Required value: Limit must be set for non overcommitable resources"}},
		{"hugepages without cpu or memory", withSpec(func(s *v1.PodSpec) {
			s.Containers[0].Resources = nil // else cpu and memory requests are defaulted from it
			s.Resources = podRes(nil, map[string]string{"hugepages-2Mi": "4Mi"})
		}), []string{r + ": Forbidden: HugePages require cpu or memory"}},
		{"claims", withSpec(func(s *v1.PodSpec) {
			s.Resources = &v1.ResourceRequirements{Limits: map[string]string{"cpu": "1"}, Claims: []*v1.ContainerResourceClaim{{Name: "gpu"}}}
		}), []string{r + ".claims: Forbidden: claims may not be set for Resources at pod-level"}},
	})
}

// TestPodLevelResourcesDefaults: Kubernetes' defaultPodRequests.
func TestPodLevelResourcesDefaults(t *testing.T) {
	for _, c := range []struct {
		name     string
		res      *v1.ResourceRequirements
		ctr      *v1.ResourceRequirements
		want     map[string]string
		wantNone bool
	}{
		{"limits only, containers request nothing: requests are the limits",
			podRes(nil, map[string]string{"cpu": "200m", "memory": "64Mi"}), nil, map[string]string{"cpu": "200m", "memory": "64Mi"}, false},
		{"containers request cpu: the pod's cpu request is their sum",
			podRes(nil, map[string]string{"cpu": "1", "memory": "64Mi"}), podRes(map[string]string{"cpu": "100m"}, nil),
			map[string]string{"cpu": "100m", "memory": "64Mi"}, false},
		{"a request that is set stays",
			podRes(map[string]string{"cpu": "300m"}, map[string]string{"cpu": "1"}), podRes(map[string]string{"cpu": "100m"}, nil),
			map[string]string{"cpu": "300m"}, false},
		{"no pod-level limits: nothing defaulted",
			podRes(nil, nil), podRes(map[string]string{"cpu": "100m"}, nil), nil, true},
	} {
		p := &v1.Pod{Metadata: &v1.ObjectMeta{Name: "p", Namespace: "default"}, Spec: &v1.PodSpec{Resources: c.res,
			Containers: []*v1.Container{{Name: "c", Image: "busybox:1.36", Resources: c.ctr}}}}
		kinds.DefaultPod(p)
		got := p.Spec.Resources.GetRequests()
		if c.wantNone {
			if len(got) != 0 {
				t.Errorf("%s: requests %v, want none", c.name, got)
			}
			continue
		}
		if fmt.Sprint(got) != fmt.Sprint(c.want) {
			t.Errorf("%s: requests %v, want %v", c.name, got, c.want)
		}
	}
}

// TestHostUsersValidation: Kubernetes' validateHostUsers.
func TestHostUsersValidation(t *testing.T) {
	f, tr := false, true
	runValidation(t, []validationCase{
		{"hostUsers false", withSpec(func(s *v1.PodSpec) { s.HostUsers = &f }), nil},
		{"hostUsers true with hostNetwork", withSpec(func(s *v1.PodSpec) { s.HostUsers = &tr; s.HostNetwork = true }), nil},
		{"hostUsers false with hostNetwork", withSpec(func(s *v1.PodSpec) { s.HostUsers = &f; s.HostNetwork = true }),
			[]string{"spec.hostNetwork: Forbidden: when `pod.Spec.HostUsers` is false"}},
	})
}

// TestContainerRestartRulesValidation: Kubernetes' validateContainerRestartPolicy
// (ContainerRestartRules, 1.34).
func TestContainerRestartRulesValidation(t *testing.T) {
	const c0, i0 = "spec.containers[0]", "spec.initContainers[0]"
	in := func(op string, codes ...int32) *v1.ContainerRestartRule {
		return &v1.ContainerRestartRule{Action: "Restart", ExitCodes: &v1.ContainerRestartRuleOnExitCodes{Operator: op, Values: codes}}
	}
	withApp := func(pol string, rules ...*v1.ContainerRestartRule) func() v1.Object {
		return withSpec(func(s *v1.PodSpec) {
			s.RestartPolicy = "Never"
			s.Containers[0].RestartPolicy, s.Containers[0].RestartPolicyRules = pol, rules
		})
	}
	many := func(n int) []int32 {
		out := make([]int32, n)
		for i := range out {
			out[i] = int32(i)
		}
		return out
	}
	rules := func(n int) []*v1.ContainerRestartRule {
		out := make([]*v1.ContainerRestartRule, n)
		for i := range out {
			out[i] = in("In", int32(i))
		}
		return out
	}
	runValidation(t, []validationCase{
		{"rule In [42] under the container's Never", withApp("Never", in("In", 42)), nil},
		{"rule NotIn under OnFailure", withApp("OnFailure", in("NotIn", 0, 1)), nil},
		{"20 rules", withApp("Never", rules(20)...), nil},
		{"255 exit codes", withApp("Never", in("In", many(255)...)), nil},
		{"init container with rules", withSpec(func(s *v1.PodSpec) {
			s.InitContainers = []*v1.Container{{Name: "setup", Image: "busybox:1.36", RestartPolicy: "Never",
				RestartPolicyRules: []*v1.ContainerRestartRule{in("In", 3)}}}
		}), nil},
		{"rules without the container's restartPolicy", withApp("", in("In", 42)),
			[]string{c0 + ".restartPolicy: Required value: must specify restartPolicy when restart rules are used"}},
		{"init rules without restartPolicy", withSpec(func(s *v1.PodSpec) {
			s.InitContainers = []*v1.Container{{Name: "setup", Image: "busybox:1.36", RestartPolicyRules: []*v1.ContainerRestartRule{in("In", 3)}}}
		}), []string{i0 + ".restartPolicy: Required value: must specify restartPolicy when restart rules are used"}},
		{"21 rules", withApp("Never", rules(21)...),
			[]string{c0 + ".restartPolicyRules: Too many: 21: must have at most 20 items"}},
		{"an action that is not Restart", withApp("Never", &v1.ContainerRestartRule{Action: "DoNotRestart", ExitCodes: in("In", 1).ExitCodes}),
			[]string{c0 + `.restartPolicyRules[0].action: Unsupported value: "DoNotRestart": supported values: "Restart"`}},
		{"no exitCodes", withApp("Never", &v1.ContainerRestartRule{Action: "Restart"}),
			[]string{c0 + ".restartPolicyRules[0].exitCodes: Required value: must be specified"}},
		{"an operator that is not In or NotIn", withApp("Never", in("Equals", 3)),
			[]string{c0 + `.restartPolicyRules[0].exitCodes.operator: Unsupported value: "Equals": supported values: "In", "NotIn"`}},
		{"no operator", withApp("Never", in("", 3)),
			[]string{c0 + `.restartPolicyRules[0].exitCodes.operator: Unsupported value: "": supported values: "In", "NotIn"`}},
		{"256 exit codes", withApp("Never", in("In", many(256)...)),
			[]string{c0 + ".restartPolicyRules[0].exitCodes.values: Too many: 256: must have at most 255 items"}},
		{"an ephemeral container's rules", func() v1.Object {
			p := pod()
			p.Spec.EphemeralContainers = []*v1.EphemeralContainer{{Name: "debug", Image: "busybox:1.36", RestartPolicyRules: []*v1.ContainerRestartRule{in("In", 1)}}}
			return p
		}, []string{"spec.ephemeralContainers[0].restartPolicyRules: Forbidden: cannot be set for an Ephemeral Container"}},
	})
}

// TestPodLevelResourcesResize: pod-level resources are not resized in
// place, and are refused by name rather than dropped.
func TestPodLevelResourcesResize(t *testing.T) {
	old := pod()
	old.Spec.Resources = podRes(map[string]string{"cpu": "1"}, map[string]string{"cpu": "1"})
	kinds.DefaultPod(old)
	next := pod()
	next.Spec.Resources = podRes(map[string]string{"cpu": "1"}, map[string]string{"cpu": "2"})
	kinds.DefaultPod(next)
	errs := validation.PodResize(old, next)
	if got := errs.Err("Pod", "web"); got == nil || !contains(got.Error(), "spec.resources: Forbidden: pod-level resources may not be resized in place") {
		t.Fatalf("resize of pod-level resources: %v", got)
	}
}

func contains(s, sub string) bool { return strings.Contains(s, sub) }
