package diagnose

import (
	"fmt"
	"strings"
	"testing"

	v1 "github.com/tugboat/tugboat/api/v1"
)

// TestJudgePort: what one port's connections from a node say, against the
// endpoints the API has (the table in trace_datapath.go).
func TestJudgePort(t *testing.T) {
	conn := func(addr, result string) *v1.ConnectCheck {
		c := &v1.ConnectCheck{Address: addr, Result: result, DurationMs: 5}
		if result == "refused" {
			c.Error = "connect: connection refused"
		}
		return c
	}
	const ip = "10.96.0.20"
	ep1 := endpointTarget{addr: "10.244.1.5:8080", pod: "web-1", node: "n1"}
	ep2 := endpointTarget{addr: "10.244.2.5:8080", pod: "web-2", node: "n2"}
	check := func(proto, ci string, eps ...*v1.ConnectCheck) *v1.ServicePortCheck {
		return &v1.ServicePortCheck{Protocol: proto, Port: 80, ClusterIp: conn(ip+":80", ci), Endpoints: eps}
	}
	for _, c := range []struct {
		name  string
		from  string // the pod tried from ("": the node)
		pc    *v1.ServicePortCheck
		ready []endpointTarget
		// want: the note, "unknown: " message, or
		// reason@layer/component: message prefix
		want string
	}{
		{"connects", "default/client", check("TCP", "connected", conn(ep1.addr, "connected")), []endpointTarget{ep1},
			"note: 80/TCP connected (5ms)"},
		{"refused without endpoints", "default/client", check("TCP", "refused"), nil,
			"note: 80/TCP refused (no ready endpoint)"},
		{"forwards without endpoints", "default/client", check("TCP", "connected"), nil,
			"DatapathStale@proxy/proxy (datapath): node n1 connects to 10.96.0.20:80/TCP, but the Service has no ready endpoint"},
		{"nothing refuses without endpoints", "default/client", check("TCP", "timeout"), nil,
			"DatapathMissing@proxy/proxy (datapath): 10.96.0.20:80/TCP on node n1: timeout after 5ms, though with no ready endpoint"},
		{"rejected though an endpoint answers", "default/client", check("TCP", "refused", conn(ep1.addr, "connected")), []endpointTarget{ep1},
			"DatapathRejects@proxy/proxy (datapath): 10.96.0.20:80/TCP on node n1: refused (connect: connection refused), but endpoint 10.244.1.5:8080 (web-1 on n1) answers"},
		{"no answer though an endpoint answers", "default/client", check("TCP", "unreachable", conn(ep2.addr, "connected")), []endpointTarget{ep2},
			"DatapathMissing@proxy/proxy (datapath): 10.96.0.20:80/TCP on node n1: unreachable, but endpoint 10.244.2.5:8080 (web-2 on n2) answers"},
		{"refused, endpoints not tried", "default/client", check("TCP", "refused"), []endpointTarget{ep1},
			"DatapathRejects@proxy/proxy (datapath): 10.96.0.20:80/TCP on node n1: refused (connect: connection refused), though the Service has 1 ready endpoint(s) (none was tried directly)"},
		{"endpoints refuse too", "default/client", check("TCP", "refused", conn(ep1.addr, "refused"), conn(ep2.addr, "refused")), []endpointTarget{ep1, ep2},
			"EndpointsRefuse@endpoints/Service's targetPort: 10.96.0.20:80/TCP on node n1: refused (connect: connection refused), and so do its endpoints asked directly (10.244.1.5:8080 (web-1 on n1), 10.244.2.5:8080 (web-2 on n2) refused)"},
		{"another node's pod out of reach", "default/client", check("TCP", "timeout", conn(ep2.addr, "timeout")), []endpointTarget{ep2},
			"EndpointsUnreachable@proxy/proxy (routes): 10.96.0.20:80/TCP on node n1: timeout after 5ms, and the node cannot reach the endpoint 10.244.2.5:8080 (web-2 on n2) timeout after 5ms: no way from n1 to the pods of n2"},
		{"its own pod out of reach", "default/client", check("TCP", "timeout", conn(ep1.addr, "unreachable")), []endpointTarget{ep1},
			"EndpointsUnreachable@CNI/CNI: 10.96.0.20:80/TCP on node n1: timeout after 5ms, and the node cannot reach its own pod's endpoint 10.244.1.5:8080 (web-1 on n1) unreachable"},
		{"UDP silence", "default/client", check("UDP", "no-reply", conn(ep1.addr, "no-reply")), []endpointTarget{ep1},
			"note: 80/UDP sent, no reply (UDP has no handshake: not conclusive)"},
		{"UDP silent ClusterIP, endpoint answers", "default/client", check("UDP", "no-reply", conn(ep1.addr, "connected")), []endpointTarget{ep1},
			"DatapathMissing@proxy/proxy (datapath): 10.96.0.20:80/UDP on node n1: no-reply, but endpoint 10.244.1.5:8080 (web-1 on n1) answers"},
		{"SCTP", "default/client", check("SCTP", "not-probed"), []endpointTarget{ep1}, "note: 80/SCTP not probed"},
		{"no pod to try from, no route from the node", "", &v1.ServicePortCheck{Protocol: "TCP", Port: 80, ClusterIp: &v1.ConnectCheck{Address: ip + ":80",
			Result: "unreachable", Error: "dial tcp 10.96.0.20:80: connect: network is unreachable"}}, nil,
			"unknown: node n1 runs no pod to try 10.96.0.20:80/TCP from, and the node's own namespace has no route towards it"},
		{"a pod without a route", "default/client", &v1.ServicePortCheck{Protocol: "TCP", Port: 80, ClusterIp: &v1.ConnectCheck{Address: ip + ":80",
			Result: "unreachable", Error: "dial tcp 10.96.0.20:80: connect: network is unreachable"}}, nil,
			"EndpointsUnreachable@CNI/CNI: pod default/client on node n1 has no route towards 10.96.0.20:80/TCP (dial tcp 10.96.0.20:80: connect: network is unreachable): its pod network is broken"},
	} {
		v := judgePort("n1", c.from, ip, c.pc, c.ready)
		got := "note: " + v.note
		switch {
		case v.unknown:
			got = "unknown: " + v.message
		case v.reason != "":
			got = fmt.Sprintf("%s@%s/%s: %s", v.reason, v.layer, v.component, v.message)
		}
		if !strings.HasPrefix(got, c.want) {
			t.Errorf("%s:\n got %s\nwant %s...", c.name, got, c.want)
		}
	}
}
