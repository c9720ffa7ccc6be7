package tugctl

import (
	"encoding/json"
	"fmt"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/tugboat/tugboat/api/client"
	v1 "github.com/tugboat/tugboat/api/v1"
	"github.com/tugboat/tugboat/cmd/tugctl/internal/diagnose"
)

// traceJSON runs trace -o json and decodes it.
func traceJSON(t *testing.T, e *env, args ...string) diagnose.Report {
	t.Helper()
	r := mustOK(t, e.run(append([]string{"trace"}, append(args, "-o", "json")...)...))
	var rep diagnose.Report
	if err := json.Unmarshal([]byte(r.out), &rep); err != nil {
		t.Fatalf("trace -o json: %v\n%s", err, r.out)
	}
	return rep
}

func setNodeStatus(t *testing.T, e *env, name string, st *v1.NodeStatus) {
	t.Helper()
	if _, err := client.For[*v1.Node](e.c).Mutate(ctxT(t), "", name, true, func(n *v1.Node) error {
		n.Status = st
		return nil
	}); err != nil {
		t.Fatal(err)
	}
}

func TestTracePod(t *testing.T) {
	e := newEnv(t)
	readyNode(t, e, "node2", "True")
	p := testPod("web", map[string]string{"app": "web"})
	p.Spec.Containers[0].ReadinessProbe = &v1.Probe{HttpGet: &v1.HTTPGetAction{Path: "/healthz", Port: "8080"}}
	p = mustCreate(t, e.c, p)
	if _, err := e.c.Bind(ctxT(t), "default", "web", "node2", 0); err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	ts := func(d time.Duration) *timestamppb.Timestamp { return timestamppb.New(now.Add(-time.Minute + d)) }
	conds := []*v1.Condition{{Type: "PodScheduled", Status: "True", LastTransitionTime: ts(0)}}
	for i, c := range []string{"tugboat.io/Accepted", "PodReadyToStartContainers", "tugboat.io/ImagesReady", "Initialized", "tugboat.io/ContainersStarted"} {
		conds = append(conds, &v1.Condition{Type: c, Status: "True", LastTransitionTime: ts(time.Duration(i+1) * 100 * time.Millisecond)})
	}
	conds = append(conds, &v1.Condition{Type: "Ready", Status: "False", Reason: "ContainersNotReady", LastTransitionTime: ts(time.Second)})
	setPodStatus(t, e.c, "web", &v1.PodStatus{Phase: "Running", PodIp: "10.244.2.5", Conditions: conds,
		ContainerStatuses: []*v1.ContainerStatus{{Name: "c", State: &v1.ContainerState{Running: &v1.ContainerStateRunning{StartedAt: ts(time.Second)}}}}})
	ev := testEvent("web.1", "Pod", "web", "Unhealthy", 0)
	ev.Type, ev.Message, ev.InvolvedObject.Uid = "Warning", "Readiness probe failed: HTTP probe failed with statuscode: 503", p.Metadata.Uid
	mustCreate(t, e.c, ev)

	rep := traceJSON(t, e, "pod", "web")
	if rep.OK || rep.StuckAt != "ready" || rep.Layer != "kubelet+runtime" || rep.Reason != "ReadinessProbeFailed" ||
		rep.Component != "kubelet (probes)" || rep.Node != "node2" || !strings.Contains(rep.Message, "statuscode: 503") {
		t.Errorf("trace: %+v", rep)
	}
	if len(rep.Hops) != 9 || rep.Hops[1].Title != "scheduled to node2" || rep.Hops[8].Status != "skipped" {
		t.Errorf("hops: %+v", rep.Hops)
	}

	r := mustOK(t, e.run("trace", "po/web"))
	assertContains(t, "trace pod", r.out, "Pod default/web: Running on node2, IP 10.244.2.5",
		"HOP COMPONENT TIME SINCE PREV STATUS", "sandbox and IP 10.244.2.5 CNI (node2) ", " +100ms done",
		"failed: ReadinessProbeFailed",
		`Stopped at "ready": layer kubelet+runtime, look at the kubelet (probes) on node2.`,
		"Reason: ReadinessProbeFailed", "Next: tugctl describe pod web")

	mustFail(t, e.run("trace", "pod", "nope"), `pods "nope" not found`)
	mustFail(t, e.run("trace", "deploy/web"), "not supported for deployments")
	mustFail(t, e.run("trace", "pod", "web", "-o", "yaml"), `--output "yaml": want json`)
}

func TestTraceService(t *testing.T) {
	e := newEnv(t)
	var nodes []*fakeNode
	for _, n := range []string{"n1", "n2"} {
		readyNode(t, e, n, "True")
		nodes = append(nodes, e.startFakeNode(n))
	}
	readyNode(t, e, "n3", "Unknown")
	web := mustCreate(t, e.c, &v1.Service{Metadata: &v1.ObjectMeta{Name: "web", Namespace: "default"},
		Spec: &v1.ServiceSpec{Selector: map[string]string{"app": "web"}, Ports: []*v1.ServicePort{{Port: 80, TargetPort: "8080"}}}})
	mustCreate(t, e.c, &v1.Service{Metadata: &v1.ObjectMeta{Name: "empty", Namespace: "default"},
		Spec: &v1.ServiceSpec{Selector: map[string]string{"app": "wbe"}, Ports: []*v1.ServicePort{{Port: 80}}}})
	boundPod(t, e, "web-1", "n1", "Running", map[string]string{"app": "web"})
	mustCreate(t, e.c, &v1.Endpoints{Metadata: &v1.ObjectMeta{Name: "web", Namespace: "default"}, Subsets: []*v1.EndpointSubset{{
		Addresses: []*v1.EndpointAddress{{Ip: "10.244.1.5", TargetRef: &v1.ObjectReference{Kind: "Pod", Name: "web-1"}}},
		Ports:     []*v1.EndpointPort{{Port: 8080, Protocol: "TCP"}}}}})
	ip := web.Spec.ClusterIp

	// Each node answers from its DNS and by trying the ports: web's
	// ClusterIP gets no answer on n2 although its endpoint answers n2
	// directly (n2's datapath lacks it); empty's is refused everywhere.
	var mu sync.Mutex
	var asked []string
	for _, n := range nodes {
		name := n.name
		n.set(func(n *fakeNode) {
			n.check = func(req *v1.CheckServiceRequest) *v1.CheckServiceResponse {
				resp := &v1.CheckServiceResponse{NodeName: name, Dns: &v1.DNSCheck{Server: "10.96.0.10:53", Rcode: "NXDOMAIN"}}
				if name == "n1" {
					resp.SourcePod = "default/web-1" // n2 runs no pod: from the node
				}
				if strings.HasPrefix(req.DnsName, "web.") {
					resp.Dns = &v1.DNSCheck{Server: "10.96.0.10:53", Rcode: "NOERROR", Addresses: []string{ip}}
				}
				if strings.HasPrefix(req.DnsName, "empty.") {
					resp.Dns = &v1.DNSCheck{Server: "10.96.0.10:53", Rcode: "NOERROR", Addresses: []string{req.ClusterIp}}
				}
				for _, p := range req.Ports {
					mu.Lock()
					asked = append(asked, fmt.Sprintf("%s %s:%d/%s %v", name, req.ClusterIp, p.Port, p.Protocol, p.Endpoints))
					mu.Unlock()
					pc := &v1.ServicePortCheck{Protocol: p.Protocol, Port: p.Port,
						ClusterIp: &v1.ConnectCheck{Address: fmt.Sprintf("%s:%d", req.ClusterIp, p.Port), Result: "connected", DurationMs: 1}}
					switch {
					case strings.HasPrefix(req.DnsName, "empty."):
						pc.ClusterIp.Result, pc.ClusterIp.Error = "refused", "connect: connection refused"
					case name == "n2":
						pc.ClusterIp.Result, pc.ClusterIp.DurationMs = "timeout", 2000
					}
					for _, e := range p.Endpoints {
						pc.Endpoints = append(pc.Endpoints, &v1.ConnectCheck{Address: e, Result: "connected"})
					}
					resp.Ports = append(resp.Ports, pc)
				}
				return resp
			}
		})
	}

	rep := traceJSON(t, e, "service", "web")
	if rep.OK || rep.StuckAt != "datapath" || rep.Layer != "proxy" || rep.Reason != "DatapathMissing" || rep.Node != "n2" ||
		rep.Message != ip+":80/TCP on node n2: timeout after 2000ms, but endpoint 10.244.1.5:8080 (web-1 on n1) answers the node directly: the node's Service datapath does not forward to it" {
		t.Errorf("web: %+v", rep)
	}
	var got []string
	for _, h := range rep.Hops {
		got = append(got, h.Hop+"@"+h.Node+"="+h.Status)
	}
	if g := strings.Join(got, " "); g != "dns@n1=done dns@n2=done dns@n3=skipped datapath@n1=done datapath@n2=failed endpoints@=done" {
		t.Errorf("hops: %s", g)
	}
	mu.Lock()
	sort.Strings(asked)
	g := strings.Join(asked, "; ")
	mu.Unlock()
	if g != fmt.Sprintf("n1 %s:80/TCP [10.244.1.5:8080]; n2 %s:80/TCP [10.244.1.5:8080]", ip, ip) {
		t.Errorf("the nodes were asked to try: %s", g)
	}

	// The Service's DNS name works too; a selector matching nothing is
	// said plainly, with the labels pods do have; the nodes refuse its
	// ClusterIP, as they should without an endpoint.
	rep = traceJSON(t, e, "svc", "empty.default.svc.cluster.local")
	if rep.StuckAt != "endpoints" || rep.Layer != "endpoints" || rep.Reason != "NoMatchingPods" ||
		!strings.Contains(rep.Message, "selector app=wbe matches no pod in namespace default; pods there have app=web") {
		t.Errorf("empty: %+v", rep)
	}
	for _, h := range rep.Hops {
		if h.Hop == "datapath" && (h.Status != "done" || !strings.HasSuffix(h.Title, ": 80/TCP refused (no ready endpoint)")) {
			t.Errorf("empty's datapath hop: %+v", h)
		}
	}

	// A typo: NXDOMAIN from the nodes' DNS, and a suggestion.
	rep = traceJSON(t, e, "svc/wbe")
	if rep.StuckAt != "dns" || rep.Layer != "DNS" || rep.Reason != "NXDOMAIN" || !strings.Contains(rep.Message, "did you mean web?") {
		t.Errorf("typo: %+v", rep)
	}
	r := mustOK(t, e.run("trace", "svc", "wbe"))
	assertContains(t, "trace svc wbe", r.out, "Service default/wbe: no such Service", `Stopped at "dns": layer DNS`, "Reason: NXDOMAIN")

	// All well once n2 forwards the ClusterIP.
	nodes[1].set(func(n *fakeNode) {
		inner := n.check
		n.check = func(req *v1.CheckServiceRequest) *v1.CheckServiceResponse {
			resp := inner(req)
			for _, p := range resp.Ports {
				p.ClusterIp.Result, p.ClusterIp.DurationMs = "connected", 1
			}
			return resp
		}
	})
	if rep = traceJSON(t, e, "svc", "web"); !rep.OK || rep.StuckAt != "" {
		t.Errorf("healthy: %+v", rep)
	}
	r = mustOK(t, e.run("trace", "svc", "web"))
	assertContains(t, "trace svc web", r.out, "connects to "+ip+" from pod default/web-1: 80/TCP connected (1ms) ",
		"connects to "+ip+": 80/TCP connected (1ms) ", "Every hop is done.")
}
