package tugctl

import (
	"context"
	"fmt"
	"sort"
	"strings"

	"github.com/tugboat/tugboat/api/apierrors"
	"github.com/tugboat/tugboat/api/client"
	v1 "github.com/tugboat/tugboat/api/v1"
)

func describeService(ctx context.Context, d *describer, s *v1.Service) error {
	sp := s.GetSpec()
	d.meta(s.GetMetadata(), true)
	d.kv(0, "Selector", labelString(sp.GetSelector()))
	d.kv(0, "Type", sp.GetType())
	d.kv(0, "IP", orNone(sp.GetClusterIp()))
	for _, p := range sp.GetPorts() {
		name := orDefault(p.Name, "<unset>")
		proto := orDefault(p.Protocol, "TCP")
		d.kv(0, "Port", fmt.Sprintf("%s  %d/%s", name, p.Port, proto))
		d.kv(0, "TargetPort", fmt.Sprintf("%s/%s", p.TargetPort, proto))
		if p.NodePort != 0 {
			d.kv(0, "NodePort", fmt.Sprintf("%s  %d/%s", name, p.NodePort, proto))
		}
	}
	b, err := backendsOf(ctx, d.c, s)
	if err != nil {
		return err
	}
	eps := "<none>"
	if len(b.ready) > 0 {
		cells, _ := endpointsRow(b.endpoints, d.now)
		eps = cells[1]
	}
	if b.problem != "" {
		eps += " (" + b.problem + ")"
	}
	d.kv(0, "Endpoints", eps)
	if len(b.notReady) > 0 {
		d.kv(0, "NotReadyEndpoints", strings.Join(b.notReady, ", "))
	}
	d.kv(0, "Session Affinity", orDefault(sp.GetSessionAffinity(), "None"))
	return d.events(ctx, s)
}

// backends is what stands behind a Service: its Endpoints object, the
// pods its selector matches, and, when it has no ready endpoint, why.
type backends struct {
	endpoints *v1.Endpoints // nil if none
	pods      []*v1.Pod     // matched by the selector (not terminating)
	ready     []string      // "ip:port (pod)"
	notReady  []string
	// reason and problem say plainly why there is no ready endpoint;
	// empty when there is one.
	reason, problem string
}

// Reasons a Service has no ready endpoint.
const (
	reasonNoSelector      = "NoSelector"
	reasonNoMatchingPods  = "NoMatchingPods"
	reasonNoReadyPods     = "NoReadyEndpoints"
	reasonEndpointsBehind = "EndpointsNotUpdated"
)

func backendsOf(ctx context.Context, c *client.Client, s *v1.Service) (*backends, error) {
	ns, name := s.GetMetadata().GetNamespace(), s.GetMetadata().GetName()
	b := &backends{}
	ep, err := client.For[*v1.Endpoints](c).Get(ctx, ns, name)
	switch {
	case err == nil:
		b.endpoints = ep
	case !apierrors.IsNotFound(err):
		return nil, err
	}
	for _, sub := range b.endpoints.GetSubsets() {
		for _, a := range sub.GetAddresses() {
			b.ready = append(b.ready, addressString(a, sub))
		}
		for _, a := range sub.GetNotReadyAddresses() {
			b.notReady = append(b.notReady, addressString(a, sub))
		}
	}
	sel := s.GetSpec().GetSelector()
	if len(sel) == 0 {
		if len(b.ready) == 0 {
			b.reason, b.problem = reasonNoSelector, "the Service has no selector: its Endpoints are written by hand, and have no ready address"
		}
		return b, nil
	}
	pods, _, err := client.For[*v1.Pod](c).List(ctx, client.ListOptions{Namespace: ns, LabelSelector: labelString(sel)})
	if err != nil {
		return nil, err
	}
	for _, p := range pods {
		if p.GetMetadata().GetDeletionTimestamp() == nil {
			b.pods = append(b.pods, p)
		}
	}
	if len(b.ready) > 0 {
		return b, nil
	}
	switch {
	case len(b.pods) == 0:
		b.reason = reasonNoMatchingPods
		b.problem = fmt.Sprintf("selector %s matches no pod in namespace %s", labelString(sel), ns)
		if near := nearLabels(ctx, c, ns, sel); near != "" {
			b.problem += "; " + near
		}
	default:
		var why []string
		for _, p := range b.pods {
			why = append(why, p.GetMetadata().GetName()+": "+podNotReadyWhy(p))
		}
		sort.Strings(why)
		if allReady(b.pods) {
			b.reason = reasonEndpointsBehind
			b.problem = fmt.Sprintf("%d pod(s) match and are Ready, but the Endpoints do not list them yet: is the controller-manager running?", len(b.pods))
		} else {
			b.reason = reasonNoReadyPods
			b.problem = fmt.Sprintf("%d pod(s) match the selector, none is ready: %s", len(b.pods), strings.Join(why, "; "))
		}
	}
	return b, nil
}

func addressString(a *v1.EndpointAddress, sub *v1.EndpointSubset) string {
	s := a.GetIp()
	if ps := sub.GetPorts(); len(ps) > 0 {
		s = fmt.Sprintf("%s:%d", s, ps[0].GetPort())
	}
	if r := a.GetTargetRef(); r != nil && r.GetName() != "" {
		s += " (" + r.GetName() + ")"
	}
	return s
}

func allReady(pods []*v1.Pod) bool {
	for _, p := range pods {
		if conditionStatus(p.GetStatus().GetConditions(), "Ready") != "True" {
			return false
		}
	}
	return true
}

// podNotReadyWhy is a pod's Ready condition in a few words.
func podNotReadyWhy(p *v1.Pod) string {
	if p.GetSpec().GetNodeName() == "" {
		return "not scheduled"
	}
	c := condition(p.GetStatus().GetConditions(), "Ready")
	switch {
	case c == nil:
		return "starting"
	case c.Status == "True":
		return "Ready"
	case c.Message != "":
		return c.Reason + " (" + c.Message + ")"
	}
	return orDefault(c.Reason, "not ready")
}

// nearLabels names the values the pods of the namespace have for the
// selector's keys, to catch a typo ("pods have app=web").
func nearLabels(ctx context.Context, c *client.Client, ns string, sel map[string]string) string {
	pods, _, err := client.For[*v1.Pod](c).List(ctx, client.ListOptions{Namespace: ns})
	if err != nil || len(pods) == 0 {
		return ""
	}
	seen := map[string]bool{}
	var have []string
	for _, p := range pods {
		for k := range sel {
			if v, ok := p.GetMetadata().GetLabels()[k]; ok && !seen[k+"="+v] {
				seen[k+"="+v] = true
				have = append(have, k+"="+v)
			}
		}
	}
	if len(have) == 0 {
		return "no pod there has the label key(s) of the selector"
	}
	sort.Strings(have)
	if len(have) > 5 {
		have = append(have[:5], "...")
	}
	return "pods there have " + strings.Join(have, ", ")
}
