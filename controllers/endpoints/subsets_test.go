package endpoints

import (
	"fmt"
	"strings"
	"testing"

	"google.golang.org/protobuf/types/known/timestamppb"

	v1 "github.com/tugboat/tugboat/api/v1"
)

type podOpt func(*v1.Pod)

func pod(name, ip string, opts ...podOpt) *v1.Pod {
	p := &v1.Pod{
		Metadata: &v1.ObjectMeta{Namespace: "default", Name: name, Uid: "uid-" + name, Labels: map[string]string{"app": "web"}},
		Spec: &v1.PodSpec{NodeName: "n1", Containers: []*v1.Container{{Name: "c",
			Ports: []*v1.ContainerPort{{Name: "http", ContainerPort: 8080}, {Name: "dns", ContainerPort: 5353, Protocol: "UDP"}}}}},
		Status: &v1.PodStatus{Phase: "Running", PodIp: ip, Conditions: []*v1.Condition{{Type: "Ready", Status: "True"}}},
	}
	for _, o := range opts {
		o(p)
	}
	return p
}

func notReady(p *v1.Pod) { p.Status.Conditions = []*v1.Condition{{Type: "Ready", Status: "False"}} }
func terminating(p *v1.Pod) {
	p.Metadata.DeletionTimestamp = timestamppb.Now()
}
func phase(ph string) podOpt { return func(p *v1.Pod) { p.Status.Phase = ph } }
func httpOn(port int32) podOpt {
	return func(p *v1.Pod) { p.Spec.Containers[0].Ports[0].ContainerPort = port }
}
func noPorts(p *v1.Pod) { p.Spec.Containers[0].Ports = nil }

func svcWith(ports ...*v1.ServicePort) *v1.Service {
	return &v1.Service{Metadata: &v1.ObjectMeta{Namespace: "default", Name: "web"},
		Spec: &v1.ServiceSpec{Selector: map[string]string{"app": "web"}, Ports: ports}}
}

// render prints subsets compactly: "[ready] [notready] ports" per subset.
func render(subsets []*v1.EndpointSubset) string {
	var out []string
	for _, s := range subsets {
		var r, n, p []string
		for _, a := range s.Addresses {
			r = append(r, a.Ip+"("+a.TargetRef.Name+"@"+a.NodeName+")")
		}
		for _, a := range s.NotReadyAddresses {
			n = append(n, a.Ip+"("+a.TargetRef.Name+")")
		}
		for _, x := range s.Ports {
			p = append(p, fmt.Sprintf("%s:%d/%s", x.Name, x.Port, x.Protocol))
		}
		out = append(out, fmt.Sprintf("ready=%v notready=%v ports=%v", r, n, p))
	}
	return strings.Join(out, "\n")
}

func TestSubsets(t *testing.T) {
	http := &v1.ServicePort{Name: "http", Protocol: "TCP", Port: 80, TargetPort: "http"}
	numeric := &v1.ServicePort{Name: "web", Protocol: "TCP", Port: 80, TargetPort: "9000"}
	dns := &v1.ServicePort{Name: "dns", Protocol: "UDP", Port: 53, TargetPort: "dns"}
	dnsTCP := &v1.ServicePort{Name: "dns-tcp", Protocol: "TCP", Port: 53, TargetPort: "dns"}
	tests := []struct {
		name string
		svc  *v1.Service
		pods []*v1.Pod
		want string
	}{
		{"ready and not ready apart, sorted", svcWith(http),
			[]*v1.Pod{pod("b", "10.244.1.3"), pod("a", "10.244.1.2"), pod("c", "10.244.2.2", notReady)},
			"ready=[10.244.1.2(a@n1) 10.244.1.3(b@n1)] notready=[10.244.2.2(c)] ports=[http:8080/TCP]"},
		{"named port resolved per pod: one subset per port set", svcWith(http),
			[]*v1.Pod{pod("a", "10.244.1.2"), pod("b", "10.244.1.3", httpOn(9090))},
			"ready=[10.244.1.2(a@n1)] notready=[] ports=[http:8080/TCP]\nready=[10.244.1.3(b@n1)] notready=[] ports=[http:9090/TCP]"},
		{"numeric targetPort", svcWith(numeric), []*v1.Pod{pod("a", "10.244.1.2", noPorts)},
			"ready=[10.244.1.2(a@n1)] notready=[] ports=[web:9000/TCP]"},
		{"named port must match the protocol", svcWith(dns, dnsTCP), []*v1.Pod{pod("a", "10.244.1.2")},
			"ready=[10.244.1.2(a@n1)] notready=[] ports=[dns:5353/UDP]"},
		{"pod without the named port left out", svcWith(http), []*v1.Pod{pod("a", "10.244.1.2", noPorts)}, ""},
		{"no IP yet, terminating, finished: left out", svcWith(http),
			[]*v1.Pod{pod("a", ""), pod("b", "10.244.1.3", terminating), pod("c", "10.244.1.4", phase("Succeeded")), pod("d", "10.244.1.5", phase("Failed"))}, ""},
		{"headless without ports: addresses only", svcWith(), []*v1.Pod{pod("a", "10.244.1.2")},
			"ready=[10.244.1.2(a@n1)] notready=[] ports=[]"},
		{"no pods", svcWith(http), nil, ""},
		{"publishNotReadyAddresses: not-ready and terminating pods are addresses", publishing(svcWith(http)),
			[]*v1.Pod{pod("a", "10.244.1.2"), pod("b", "10.244.1.3", notReady), pod("c", "10.244.1.4", terminating), pod("d", "10.244.1.5", phase("Failed"))},
			"ready=[10.244.1.2(a@n1) 10.244.1.3(b@n1) 10.244.1.4(c@n1)] notready=[] ports=[http:8080/TCP]"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := render(Subsets(tt.svc, tt.pods)); got != tt.want {
				t.Errorf("got\n%s\nwant\n%s", got, tt.want)
			}
		})
	}
}

func publishing(s *v1.Service) *v1.Service {
	s.Spec.PublishNotReadyAddresses = true
	return s
}

func TestSubsetsHostnameUnderSubdomain(t *testing.T) {
	p := pod("a", "10.244.1.2", func(p *v1.Pod) { p.Spec.Hostname, p.Spec.Subdomain = "db-0", "web" })
	q := pod("b", "10.244.1.3", func(p *v1.Pod) { p.Spec.Hostname, p.Spec.Subdomain = "db-1", "other" })
	s := Subsets(svcWith(&v1.ServicePort{Name: "http", Port: 80, TargetPort: "http"}), []*v1.Pod{p, q})
	if got := s[0].Addresses[0].Hostname + "," + s[0].Addresses[1].Hostname; got != "db-0," {
		t.Fatalf("hostnames %q", got)
	}
	if r := s[0].Addresses[0].TargetRef; r.Kind != "Pod" || r.Namespace != "default" || r.Uid != "uid-a" {
		t.Fatalf("targetRef %v", r)
	}
}
