package tugctl

import (
	"testing"

	"google.golang.org/protobuf/proto"

	v1 "github.com/tugboat/tugboat/api/v1"
)

// TestDescribePodContainerFields: describe pod shows gRPC probes, the
// termination message settings and message, DNS config and host aliases.
func TestDescribePodContainerFields(t *testing.T) {
	e := newEnv(t)
	p := testPod("grpc", nil)
	c := p.Spec.Containers[0]
	c.ReadinessProbe = &v1.Probe{Grpc: &v1.GRPCAction{Port: 9090, Service: proto.String("echo")}, PeriodSeconds: 2}
	c.TerminationMessagePolicy = "FallbackToLogsOnError"
	p.Spec.DnsPolicy = "None"
	p.Spec.DnsConfig = &v1.PodDNSConfig{Nameservers: []string{"192.0.2.53"}, Searches: []string{"example.com"},
		Options: []*v1.PodDNSConfigOption{{Name: "ndots", Value: proto.String("2")}, {Name: "edns0"}}}
	p.Spec.HostAliases = []*v1.HostAlias{{Ip: "10.1.2.3", Hostnames: []string{"foo.local", "bar.local"}}}
	mustCreate(t, e.c, p)
	setPodStatus(t, e.c, "grpc", &v1.PodStatus{Phase: "Failed", ContainerStatuses: []*v1.ContainerStatus{{Name: "c",
		State: &v1.ContainerState{Terminated: &v1.ContainerStateTerminated{ExitCode: 3, Reason: "Error", Message: "bye from the file"}}}}})
	r := mustOK(t, e.run("describe", "pod", "grpc"))
	assertContains(t, "describe pod", r.out,
		"Readiness: grpc <pod>:9090 echo delay=0s timeout=1s period=2s #success=1 #failure=3\n",
		"Termination Message: /dev/termination-log (FallbackToLogsOnError)\n",
		"State: Terminated\n Reason: Error\n Message: bye from the file\n Exit Code: 3\n",
		"DNS Policy: None\n", "DNS Config:\n Nameservers: 192.0.2.53\n Searches: example.com\n Options: ndots:2, edns0\n",
		"Host Aliases:\n 10.1.2.3: foo.local, bar.local\n",
	)
}

// TestDescribePodResize: describe pod shows a container's resize policy,
// its allocated resources, what it runs with while a resize is not yet
// applied, and why a resize is pending.
func TestDescribePodResize(t *testing.T) {
	e := newEnv(t)
	p := testPod("sized", nil)
	p.Spec.Containers[0].Resources = &v1.ResourceRequirements{Requests: map[string]string{"cpu": "100m"}, Limits: map[string]string{"cpu": "200m"}}
	mustCreate(t, e.c, p)
	setPodStatus(t, e.c, "sized", &v1.PodStatus{Phase: "Running",
		Conditions: []*v1.Condition{{Type: "PodResizePending", Status: "True", Reason: "Infeasible", Message: "Node didn't have enough capacity: cpu, requested: 64000, capacity: 2000"}},
		ContainerStatuses: []*v1.ContainerStatus{{Name: "c", State: &v1.ContainerState{Running: &v1.ContainerStateRunning{}},
			AllocatedResources: map[string]string{"cpu": "50m"},
			Resources:          &v1.ResourceRequirements{Requests: map[string]string{"cpu": "50m"}, Limits: map[string]string{"cpu": "100m"}}}}})
	r := mustOK(t, e.run("describe", "pod", "sized"))
	assertContains(t, "describe pod", r.out,
		"Resize Policy: cpu=NotRequired\n",
		"Allocated Resources:\n cpu: 50m\n",
		"Running With:\n Limits:\n cpu: 100m\n Requests:\n cpu: 50m\n",
		"ResizePending: Infeasible: Node didn't have enough capacity: cpu, requested: 64000, capacity: 2000\n",
	)
}
