package validation_test

import (
	"testing"

	"google.golang.org/protobuf/proto"

	"github.com/tugboat/tugboat/api/kinds"
	v1 "github.com/tugboat/tugboat/api/v1"
)

func TestContainerKindValidation(t *testing.T) {
	withApp := func(f func(c *v1.Container)) func() v1.Object {
		return func() v1.Object { p := pod(); f(p.Spec.Containers[0]); return p }
	}
	withInit := func(f func(c *v1.Container)) func() v1.Object {
		return func() v1.Object {
			p := pod()
			c := &v1.Container{Name: "setup", Image: "busybox:1.36"}
			f(c)
			p.Spec.InitContainers = []*v1.Container{c}
			return p
		}
	}
	withPod := func(f func(s *v1.PodSpec)) func() v1.Object {
		return func() v1.Object { p := pod(); f(p.Spec); return p }
	}
	grpc := &v1.Probe{Grpc: &v1.GRPCAction{Port: 9090, Service: proto.String("web")}}
	const c0, i0 = "spec.containers[0]", "spec.initContainers[0]"
	runValidation(t, []validationCase{
		{"grpc probe", withApp(func(c *v1.Container) { c.ReadinessProbe = grpc; c.LivenessProbe = grpc; c.StartupProbe = grpc }), nil},
		{"grpc port", withApp(func(c *v1.Container) { c.LivenessProbe = &v1.Probe{Grpc: &v1.GRPCAction{}} }), []string{c0 + ".livenessProbe.grpc.port: 0 is not a valid port"}},
		{"two handlers", withApp(func(c *v1.Container) {
			c.LivenessProbe = &v1.Probe{Grpc: &v1.GRPCAction{Port: 1}, TcpSocket: &v1.TCPSocketAction{Port: "1"}}
		}), []string{c0 + ".livenessProbe: exactly one of exec, httpGet, tcpSocket or grpc must be set (found 2)"}},
		{"liveness successThreshold", withApp(func(c *v1.Container) {
			c.LivenessProbe = &v1.Probe{Grpc: &v1.GRPCAction{Port: 1}, SuccessThreshold: 2}
		}), []string{c0 + ".livenessProbe.successThreshold: Invalid value: 2: must be 1"}},
		{"startup successThreshold", withApp(func(c *v1.Container) {
			c.StartupProbe = &v1.Probe{Grpc: &v1.GRPCAction{Port: 1}, SuccessThreshold: 3}
		}), []string{c0 + ".startupProbe.successThreshold"}},
		{"readiness successThreshold 3", withApp(func(c *v1.Container) {
			c.ReadinessProbe = &v1.Probe{Grpc: &v1.GRPCAction{Port: 1}, SuccessThreshold: 3}
		}), nil},
		{"readiness probe grace", withApp(func(c *v1.Container) {
			c.ReadinessProbe = &v1.Probe{Grpc: &v1.GRPCAction{Port: 1}, TerminationGracePeriodSeconds: proto.Int64(5)}
		}), []string{c0 + ".readinessProbe.terminationGracePeriodSeconds: Invalid value: 5: must not be set for readinessProbes"}},
		{"liveness probe grace 0", withApp(func(c *v1.Container) {
			c.LivenessProbe = &v1.Probe{Grpc: &v1.GRPCAction{Port: 1}, TerminationGracePeriodSeconds: proto.Int64(0)}
		}), []string{c0 + ".livenessProbe.terminationGracePeriodSeconds: Invalid value: 0: must be greater than 0"}},
		{"negative period", withApp(func(c *v1.Container) { c.ReadinessProbe = &v1.Probe{Grpc: &v1.GRPCAction{Port: 1}, PeriodSeconds: -1} }),
			[]string{c0 + ".readinessProbe.periodSeconds: must be >= 0"}},
		{"probe on an init container", withInit(func(c *v1.Container) { c.ReadinessProbe = grpc }),
			[]string{i0 + ".readinessProbe: Forbidden: may not be set for init containers without restartPolicy=Always"}},
		{"lifecycle on an init container", withInit(func(c *v1.Container) {
			c.Lifecycle = &v1.Lifecycle{PreStop: &v1.LifecycleHandler{Sleep: &v1.SleepAction{Seconds: 1}}}
		}), []string{i0 + ".lifecycle: Forbidden"}},
		// ContainerRestartRules (Kubernetes 1.34): an app container's own
		// policy overrides the pod's; an init container's Never or
		// OnFailure too (Always makes it a sidecar).
		{"restartPolicy on an app container", withApp(func(c *v1.Container) { c.RestartPolicy = "Always" }), nil},
		{"init restartPolicy Never", withInit(func(c *v1.Container) { c.RestartPolicy = "Never" }), nil},
		{"restartPolicy not a policy", withApp(func(c *v1.Container) { c.RestartPolicy = "Sometimes" }),
			[]string{c0 + `.restartPolicy: Unsupported value: "Sometimes": supported values: "Always", "OnFailure", "Never"`}},
		{"sidecar with probes and hooks", withInit(func(c *v1.Container) {
			c.RestartPolicy = "Always"
			c.StartupProbe, c.ReadinessProbe, c.LivenessProbe = grpc, grpc, grpc
			c.Lifecycle = &v1.Lifecycle{PostStart: &v1.LifecycleHandler{Exec: &v1.ExecAction{Command: []string{"true"}}},
				PreStop: &v1.LifecycleHandler{Sleep: &v1.SleepAction{Seconds: 5}}}
		}), nil},
		{"sidecar liveness successThreshold", withInit(func(c *v1.Container) {
			c.RestartPolicy = "Always"
			c.LivenessProbe = &v1.Probe{Grpc: &v1.GRPCAction{Port: 1}, SuccessThreshold: 2}
		}), []string{i0 + ".livenessProbe.successThreshold: Invalid value: 2: must be 1"}},
		{"init restartPolicy OnFailure", withInit(func(c *v1.Container) { c.RestartPolicy = "OnFailure" }), nil},
		{"init restartPolicy Never keeps the init container's rules", withInit(func(c *v1.Container) { c.RestartPolicy = "Never"; c.LivenessProbe = grpc }),
			[]string{i0 + ".livenessProbe: Forbidden: may not be set for init containers without restartPolicy=Always"}},
		{"init liveness and startup probes", withInit(func(c *v1.Container) { c.LivenessProbe, c.StartupProbe = grpc, grpc }),
			[]string{i0 + ".livenessProbe: Forbidden: may not be set for init containers without restartPolicy=Always",
				i0 + ".startupProbe: Forbidden: may not be set for init containers without restartPolicy=Always"}},
		{"hooks", withApp(func(c *v1.Container) {
			c.Ports = []*v1.ContainerPort{{Name: "http", ContainerPort: 8080}}
			c.Lifecycle = &v1.Lifecycle{
				PostStart: &v1.LifecycleHandler{HttpGet: &v1.HTTPGetAction{Path: "/started", Port: "http", Scheme: "HTTPS",
					HttpHeaders: []*v1.HTTPHeader{{Name: "X-Hook", Value: "postStart"}}}},
				PreStop: &v1.LifecycleHandler{Exec: &v1.ExecAction{Command: []string{"sh", "-c", "sleep 1"}}}}
		}), nil},
		{"hook without handler", withApp(func(c *v1.Container) { c.Lifecycle = &v1.Lifecycle{PreStop: &v1.LifecycleHandler{}} }),
			[]string{c0 + ".lifecycle.preStop: Required value: must specify a handler type"}},
		{"hook with two handlers", withApp(func(c *v1.Container) {
			c.Lifecycle = &v1.Lifecycle{PostStart: &v1.LifecycleHandler{Exec: &v1.ExecAction{Command: []string{"true"}}, Sleep: &v1.SleepAction{Seconds: 1}}}
		}), []string{c0 + ".lifecycle.postStart.sleep: Forbidden: may not specify more than 1 handler type"}},
		{"hook exec without command", withApp(func(c *v1.Container) {
			c.Lifecycle = &v1.Lifecycle{PostStart: &v1.LifecycleHandler{Exec: &v1.ExecAction{}}}
		}), []string{c0 + ".lifecycle.postStart.exec.command: Required value"}},
		{"hook httpGet port and scheme", withApp(func(c *v1.Container) {
			c.Lifecycle = &v1.Lifecycle{PreStop: &v1.LifecycleHandler{HttpGet: &v1.HTTPGetAction{Port: "0", Scheme: "FTP"}}}
		}), []string{c0 + ".lifecycle.preStop.httpGet.port", c0 + `.lifecycle.preStop.httpGet.scheme: "FTP" is not one of HTTP, HTTPS`}},
		{"sleep past the grace period", withPod(func(s *v1.PodSpec) {
			s.TerminationGracePeriodSeconds = proto.Int64(10)
			s.Containers[0].Lifecycle = &v1.Lifecycle{PreStop: &v1.LifecycleHandler{Sleep: &v1.SleepAction{Seconds: 11}}}
		}), []string{c0 + ".lifecycle.preStop.sleep: Invalid value: 11: must be non-negative and less than terminationGracePeriodSeconds (10)"}},
		{"sleep negative", withPod(func(s *v1.PodSpec) {
			s.TerminationGracePeriodSeconds = proto.Int64(10)
			s.Containers[0].Lifecycle = &v1.Lifecycle{PreStop: &v1.LifecycleHandler{Sleep: &v1.SleepAction{Seconds: -1}}}
		}), []string{c0 + ".lifecycle.preStop.sleep: Invalid value: -1: must be non-negative and less than terminationGracePeriodSeconds (10)"}},
		{"sleep 0 and the whole grace period", withPod(func(s *v1.PodSpec) {
			s.TerminationGracePeriodSeconds = proto.Int64(10)
			s.Containers[0].Lifecycle = &v1.Lifecycle{PostStart: &v1.LifecycleHandler{Sleep: &v1.SleepAction{Seconds: 0}},
				PreStop: &v1.LifecycleHandler{Sleep: &v1.SleepAction{Seconds: 10}}}
		}), nil},
		{"hook tcpSocket", withApp(func(c *v1.Container) {
			c.Lifecycle = &v1.Lifecycle{PreStop: &v1.LifecycleHandler{TcpSocket: &v1.TCPSocketAction{Port: "80"}}}
		}), []string{c0 + ".lifecycle.preStop.tcpSocket: Forbidden"}},
		{"termination message", withApp(func(c *v1.Container) {
			c.TerminationMessagePath = "/tmp/why"
			c.TerminationMessagePolicy = "FallbackToLogsOnError"
		}), nil},
		{"termination message policy", withApp(func(c *v1.Container) { c.TerminationMessagePolicy = "Logs" }),
			[]string{c0 + `.terminationMessagePolicy: "Logs" is not one of File, FallbackToLogsOnError`}},
		{"termination message path", withApp(func(c *v1.Container) { c.TerminationMessagePath = "tmp/../why" }),
			[]string{c0 + `.terminationMessagePath: "tmp/../why" must be an absolute, clean path`}},
		{"host aliases", withPod(func(s *v1.PodSpec) {
			s.HostAliases = []*v1.HostAlias{{Ip: "10.1.2.3", Hostnames: []string{"foo.local", "bar"}}}
		}), nil},
		{"host alias ip", withPod(func(s *v1.PodSpec) { s.HostAliases = []*v1.HostAlias{{Ip: "10.1.2", Hostnames: []string{"foo"}}} }),
			[]string{`spec.hostAliases[0].ip: "10.1.2" is not a valid IP address`}},
		{"host alias hostname", withPod(func(s *v1.PodSpec) { s.HostAliases = []*v1.HostAlias{{Ip: "10.1.2.3", Hostnames: []string{"Foo_Bar"}}} }),
			[]string{"spec.hostAliases[0].hostnames[0]"}},
		{"host alias without names", withPod(func(s *v1.PodSpec) { s.HostAliases = []*v1.HostAlias{{Ip: "10.1.2.3"}} }),
			[]string{"spec.hostAliases[0].hostnames: Required value"}},
		{"dns None", withPod(func(s *v1.PodSpec) {
			s.DnsPolicy = "None"
			s.DnsConfig = &v1.PodDNSConfig{Nameservers: []string{"1.2.3.4"}, Searches: []string{"ns1.svc.cluster-domain.example", "my.dns.search.suffix"},
				Options: []*v1.PodDNSConfigOption{{Name: "ndots", Value: proto.String("2")}, {Name: "edns0"}}}
		}), nil},
		{"dns None without nameservers", withPod(func(s *v1.PodSpec) { s.DnsPolicy = "None" }),
			[]string{"spec.dnsConfig.nameservers: Required value: must provide at least one DNS nameserver when DNS policy is None"}},
		{"dns policy", withPod(func(s *v1.PodSpec) { s.DnsPolicy = "Host" }), []string{`spec.dnsPolicy: "Host" is not one of`}},
		{"four nameservers", withPod(func(s *v1.PodSpec) {
			s.DnsConfig = &v1.PodDNSConfig{Nameservers: []string{"1.1.1.1", "1.1.1.2", "1.1.1.3", "1.1.1.4"}}
		}), []string{"spec.dnsConfig.nameservers: Invalid value", "must not have more than 3 nameservers"}},
		{"bad nameserver", withPod(func(s *v1.PodSpec) { s.DnsConfig = &v1.PodDNSConfig{Nameservers: []string{"dns.local"}} }),
			[]string{`spec.dnsConfig.nameservers[0]: "dns.local" is not a valid IP address`}},
		{"bad search", withPod(func(s *v1.PodSpec) { s.DnsConfig = &v1.PodDNSConfig{Searches: []string{"a..b"}} }),
			[]string{"spec.dnsConfig.searches[0]"}},
		{"option without name", withPod(func(s *v1.PodSpec) {
			s.DnsConfig = &v1.PodDNSConfig{Options: []*v1.PodDNSConfigOption{{Value: proto.String("1")}}}
		}),
			[]string{"spec.dnsConfig.options[0].name: Required value"}},
	})
}

func TestContainerDefaults(t *testing.T) {
	p := pod()
	p.Spec.Containers[0].ReadinessProbe = &v1.Probe{Grpc: &v1.GRPCAction{Port: 9090}}
	kinds.DefaultPod(p)
	c := p.Spec.Containers[0]
	if c.TerminationMessagePath != "/dev/termination-log" || c.TerminationMessagePolicy != "File" {
		t.Errorf("termination message defaults: %q %q", c.TerminationMessagePath, c.TerminationMessagePolicy)
	}
	if pr := c.ReadinessProbe; pr.PeriodSeconds != 10 || pr.TimeoutSeconds != 1 || pr.SuccessThreshold != 1 || pr.FailureThreshold != 3 {
		t.Errorf("probe defaults: %v", pr)
	}
}
