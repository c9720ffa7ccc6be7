package endpoints

import (
	"fmt"
	"testing"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/timestamppb"

	v1 "github.com/tugboat/tugboat/api/v1"
)

func group(ports []*v1.EndpointSlicePort, addrs ...string) map[string]*endpointGroup {
	g := &endpointGroup{ports: ports, endpoints: map[string]*v1.Endpoint{}}
	for _, a := range addrs {
		g.endpoints[a] = &v1.Endpoint{Addresses: []string{a}, Conditions: &v1.EndpointConditions{Ready: proto.Bool(true)}}
	}
	return map[string]*endpointGroup{slicePortsKey(ports): g}
}

func addrs(from, to int) []string {
	var out []string
	for i := from; i < to; i++ {
		out = append(out, fmt.Sprintf("10.244.%d.%d", i/250, i%250+1))
	}
	return out
}

// apply turns a plan into the next set of slices, naming created ones.
func apply(t *testing.T, cur []*v1.EndpointSlice, p SlicePlan, next *int) []*v1.EndpointSlice {
	t.Helper()
	byName := map[string]*v1.EndpointSlice{}
	for _, s := range cur {
		byName[s.Metadata.Name] = s
	}
	for _, s := range p.Delete {
		delete(byName, s.Metadata.Name)
	}
	for _, s := range p.Update {
		if byName[s.Metadata.Name] == nil {
			t.Fatalf("update of unknown slice %s", s.Metadata.Name)
		}
		byName[s.Metadata.Name] = s
	}
	for _, s := range p.Create {
		*next++
		s.Metadata.Name = fmt.Sprintf("web-%03d", *next)
		byName[s.Metadata.Name] = s
	}
	var out []*v1.EndpointSlice
	for _, s := range byName {
		out = append(out, s)
	}
	return out
}

func sizes(list []*v1.EndpointSlice) map[string]int {
	out := map[string]int{}
	for _, s := range list {
		out[s.Metadata.Name] = len(s.Endpoints)
	}
	return out
}

func TestPlanSlices(t *testing.T) {
	ports := []*v1.EndpointSlicePort{{Name: proto.String("http"), Port: proto.Int32(8080), Protocol: proto.String("TCP")}}
	meta := func() *v1.ObjectMeta {
		return &v1.ObjectMeta{GenerateName: "web-", Labels: map[string]string{LabelServiceName: "web"}}
	}
	n := 0

	// 250 endpoints: three slices of 100, 100 and 50.
	p := PlanSlices(nil, group(ports, addrs(0, 250)...), 100, meta)
	if len(p.Create) != 3 || len(p.Update) != 0 || len(p.Delete) != 0 {
		t.Fatalf("plan %d/%d/%d", len(p.Create), len(p.Update), len(p.Delete))
	}
	cur := apply(t, nil, p, &n)
	if got := fmt.Sprint(sizes(cur)); got != "map[web-001:100 web-002:100 web-003:50]" {
		t.Fatalf("sizes %s", got)
	}
	// The same endpoints again: nothing to write.
	if p := PlanSlices(cur, group(ports, addrs(0, 250)...), 100, meta); len(p.Create)+len(p.Update)+len(p.Delete) != 0 {
		t.Fatalf("a steady state writes: %d/%d/%d", len(p.Create), len(p.Update), len(p.Delete))
	}
	// Ten endpoints of one slice go: only that slice changes.
	gone := map[string]bool{}
	for _, s := range cur {
		if s.Metadata.Name == "web-002" {
			for _, e := range s.Endpoints[:10] {
				gone[e.Addresses[0]] = true
			}
		}
	}
	var left []string
	for _, a := range addrs(0, 250) {
		if !gone[a] {
			left = append(left, a)
		}
	}
	p = PlanSlices(cur, group(ports, left...), 100, meta)
	if len(p.Update) != 1 || p.Update[0].Metadata.Name != "web-002" || len(p.Create)+len(p.Delete) != 0 {
		t.Fatalf("removal plan: %d/%d/%d", len(p.Create), len(p.Update), len(p.Delete))
	}
	cur = apply(t, cur, p, &n)
	// 60 new ones fill the two slices with room before a new one is made.
	p = PlanSlices(cur, group(ports, append(left, addrs(250, 310)...)...), 100, meta)
	cur = apply(t, cur, p, &n)
	if got := fmt.Sprint(sizes(cur)); got != "map[web-001:100 web-002:100 web-003:100]" {
		t.Fatalf("after adding: %s", got)
	}
	// Everything goes: one empty placeholder slice stays.
	p = PlanSlices(cur, nil, 100, meta)
	cur = apply(t, cur, p, &n)
	if len(cur) != 1 || len(cur[0].Endpoints) != 0 || len(cur[0].Ports) != 0 {
		t.Fatalf("placeholder: %v", cur)
	}
	// New ports: the placeholder goes, a slice with the ports comes.
	p = PlanSlices(cur, group(ports, addrs(0, 3)...), 100, meta)
	if len(p.Delete) != 1 || len(p.Create) != 1 {
		t.Fatalf("ports change plan: %d/%d/%d", len(p.Create), len(p.Update), len(p.Delete))
	}
}

func TestPodEndpointsConditions(t *testing.T) {
	svc := &v1.Service{Metadata: &v1.ObjectMeta{Namespace: "default", Name: "db"},
		Spec: &v1.ServiceSpec{Selector: map[string]string{"app": "db"}, Ports: []*v1.ServicePort{{Name: "pg", Port: 5432, TargetPort: "5432"}}}}
	pod := func(name, ip string, ready, deleting bool) *v1.Pod {
		p := &v1.Pod{Metadata: &v1.ObjectMeta{Namespace: "default", Name: name}, Spec: &v1.PodSpec{NodeName: "n1", Hostname: name, Subdomain: "db"},
			Status: &v1.PodStatus{Phase: "Running", PodIp: ip}}
		if ready {
			p.Status.Conditions = []*v1.Condition{{Type: "Ready", Status: "True"}}
		}
		if deleting {
			p.Metadata.DeletionTimestamp = timestamppb.Now()
		}
		return p
	}
	pods := []*v1.Pod{pod("db-0", "10.244.1.2", true, false), pod("db-1", "10.244.1.3", false, false), pod("db-2", "10.244.1.4", true, true),
		{Metadata: &v1.ObjectMeta{Name: "pending"}, Spec: &v1.PodSpec{}, Status: &v1.PodStatus{Phase: "Pending"}}}
	zone := func(string) string { return "z1" }
	got := func(publish bool) string {
		svc.Spec.PublishNotReadyAddresses = publish
		var out string
		for _, g := range PodEndpoints(svc, pods, zone) {
			for _, a := range []string{"10.244.1.2", "10.244.1.3", "10.244.1.4"} {
				e := g.endpoints[a]
				c := e.GetConditions()
				out += fmt.Sprintf("%s:%v/%v/%v/%s/%s ", e.GetHostname(), c.GetReady(), c.GetServing(), c.GetTerminating(), e.GetNodeName(), e.GetZone())
			}
		}
		return out
	}
	if s := got(false); s != "db-0:true/true/false/n1/z1 db-1:false/false/false/n1/z1 db-2:false/true/true/n1/z1 " {
		t.Errorf("conditions: %s", s)
	}
	if s := got(true); s != "db-0:true/true/false/n1/z1 db-1:true/true/false/n1/z1 db-2:true/true/true/n1/z1 " {
		t.Errorf("conditions with publishNotReadyAddresses: %s", s)
	}
}
