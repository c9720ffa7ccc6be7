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
