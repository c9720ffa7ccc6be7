package kubelet_test

import (
	"strings"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"

	v1 "github.com/tugboat/tugboat/api/v1"
	"github.com/tugboat/tugboat/deploy/images"
)

// TestGRPCProbe: a readiness probe over grpc.health.v1 keeps the pod
// unready while the server says NOT_SERVING and marks it Ready once it
// says SERVING; a liveness gRPC probe on a named service keeps it alive.
func TestGRPCProbe(t *testing.T) {
	c := sharedCluster(t)
	t.Parallel()
	ns, name := "grpcprobe", "health"
	p := busyboxPod(ns, name, "node1", "")
	ctr := p.Spec.Containers[0]
	ctr.Image, ctr.Command = images.EchoRef, nil
	ctr.Env = []*v1.EnvVar{{Name: "GRPC_PORT", Value: "9090"}, {Name: "GRPC_SERVING_AFTER", Value: "4s"}}
	ctr.ReadinessProbe = &v1.Probe{Grpc: &v1.GRPCAction{Port: 9090}, PeriodSeconds: 1, FailureThreshold: 1}
	ctr.LivenessProbe = &v1.Probe{Grpc: &v1.GRPCAction{Port: 9090, Service: proto.String("echo")}, InitialDelaySeconds: 8, PeriodSeconds: 1}
	createPod(t, c.Client, p)

	p = waitPod(t, c.Client, ns, name, 60*time.Second, "Running", running)
	// A control pod started after it, whose liveness probe names a service
	// the server does not know (NOT_FOUND): once it has been restarted,
	// the first pod's liveness probe has had at least as many periods.
	ctl := busyboxPod(ns, "unknown-service", "node1", "")
	cc := ctl.Spec.Containers[0]
	cc.Image, cc.Command, cc.Env = images.EchoRef, nil, []*v1.EnvVar{{Name: "GRPC_PORT", Value: "9090"}}
	cc.LivenessProbe = &v1.Probe{Grpc: &v1.GRPCAction{Port: 9090, Service: proto.String("nosuch")}, InitialDelaySeconds: 8, PeriodSeconds: 1}
	createPod(t, c.Client, ctl)
	waitEvent(t, c.Client, ns, name, `Unhealthy: Readiness probe failed: service unhealthy (responded with "NOT_SERVING")`, 10*time.Second)
	p = waitPod(t, c.Client, ns, name, 20*time.Second, "Ready", func(p *v1.Pod) bool {
		return condition(p, "Ready").GetStatus() == "True" && containerStatus(p, "main").GetReady()
	})
	waitPod(t, c.Client, ns, ctl.Metadata.Name, 90*time.Second, "restarted by its failing liveness probe", func(p *v1.Pod) bool {
		return containerStatus(p, "main").GetRestartCount() >= 1
	})
	p = waitPod(t, c.Client, ns, name, 5*time.Second, "still Ready", func(p *v1.Pod) bool { return condition(p, "Ready").GetStatus() == "True" })
	if n := containerStatus(p, "main").GetRestartCount(); n != 0 {
		t.Errorf("restarted %d times under a passing gRPC liveness probe", n)
	}
}

// TestTerminationMessage: what a container writes to its
// terminationMessagePath is its terminated state's message; with
// FallbackToLogsOnError a failed container that wrote nothing there gets
// the end of its log.
func TestTerminationMessage(t *testing.T) {
	c := sharedCluster(t)
	t.Parallel()
	ns, name := "termmsg", "last-words"
	p := busyboxPod(ns, name, "node2", `printf 'bye from the file' > /dev/termination-log; exit 3`)
	p.Spec.RestartPolicy = "Never"
	p.Spec.Containers = append(p.Spec.Containers,
		&v1.Container{Name: "logs", Image: images.BusyboxRef, ImagePullPolicy: "IfNotPresent", TerminationMessagePolicy: "FallbackToLogsOnError",
			Command: []string{"sh", "-c", "echo first; echo last words; exit 4"}},
		&v1.Container{Name: "custom", Image: images.BusyboxRef, ImagePullPolicy: "IfNotPresent", TerminationMessagePath: "/tmp/why",
			SecurityContext: &v1.SecurityContext{RunAsUser: proto.Int64(1000)},
			Command:         []string{"sh", "-c", "echo done as $(id -u) > /tmp/why"}},
	)
	createPod(t, c.Client, p)
	p = waitPod(t, c.Client, ns, name, 60*time.Second, "Failed", func(p *v1.Pod) bool { return p.Status.GetPhase() == "Failed" })
	for ctr, want := range map[string]string{"main": "bye from the file", "logs": "first\nlast words\n", "custom": "done as 1000\n"} {
		term := containerStatus(p, ctr).GetState().GetTerminated()
		if term.GetMessage() != want {
			t.Errorf("%s: terminated message %q, want %q (state %v)", ctr, term.GetMessage(), want, term)
		}
	}
}

// TestDNSConfigAndHostAliases: dnsPolicy None with dnsConfig makes the
// pod's resolv.conf; dnsConfig merges into ClusterFirst's; hostAliases
// are appended to /etc/hosts.
func TestDNSConfigAndHostAliases(t *testing.T) {
	c := sharedCluster(t)
	t.Parallel()
	ns := "dnsconfig"
	none := busyboxPod(ns, "none", "node1", "exec sleep 3600")
	none.Spec.DnsPolicy = "None"
	none.Spec.DnsConfig = &v1.PodDNSConfig{Nameservers: []string{"192.0.2.53"}, Searches: []string{"ns1.svc.cluster-domain.example", "my.dns.search.suffix"},
		Options: []*v1.PodDNSConfigOption{{Name: "ndots", Value: proto.String("2")}, {Name: "edns0"}}}
	none.Spec.HostAliases = []*v1.HostAlias{{Ip: "127.0.0.1", Hostnames: []string{"foo.local", "bar.local"}}, {Ip: "10.1.2.3", Hostnames: []string{"foo.remote"}}}
	merged := busyboxPod(ns, "merged", "node2", "exec sleep 3600")
	merged.Spec.DnsConfig = &v1.PodDNSConfig{Nameservers: []string{"192.0.2.53"}, Searches: []string{"extra.example"},
		Options: []*v1.PodDNSConfigOption{{Name: "ndots", Value: proto.String("1")}}}
	createPod(t, c.Client, none)
	createPod(t, c.Client, merged)
	for name, want := range map[string][]string{
		"none": {"search ns1.svc.cluster-domain.example my.dns.search.suffix\nnameserver 192.0.2.53\noptions ndots:2 edns0\n",
			"# Entries added by HostAliases.\n127.0.0.1\tfoo.local\tbar.local\n10.1.2.3\tfoo.remote\n"},
		"merged": {"search dnsconfig.svc.cluster.local svc.cluster.local cluster.local extra.example\nnameserver 10.96.0.10\nnameserver 192.0.2.53\noptions ndots:1\n"},
	} {
		waitPod(t, c.Client, ns, name, 60*time.Second, "Running", running)
		out, code := execIn(t, c.Client, ns, name, "cat", "/etc/resolv.conf", "/etc/hosts")
		for _, w := range want {
			if code != 0 || !strings.Contains(out, w) {
				t.Errorf("%s: output lacks %q (exit %d):\n%s", name, w, code, out)
			}
		}
	}
}
