package diagnose

import (
	"cmp"
	"context"
	"fmt"
	"sort"
	"strings"

	"github.com/tugboat/tugboat/api/apierrors"
	"github.com/tugboat/tugboat/api/client"
	"github.com/tugboat/tugboat/api/table"
	v1 "github.com/tugboat/tugboat/api/v1"
)

// Backends is what stands behind a Service: its Endpoints object, the
// pods its selector matches, and, when it has no ready endpoint, why.
type Backends struct {
	Endpoints *v1.Endpoints // nil if none
	Pods      []*v1.Pod     // matched by the selector (not terminating)
	Ready     []string      // "ip:port (pod)"
	NotReady  []string
	// Reason (one of the Reason constants) and Message say plainly why
	// there is no ready endpoint; empty when there is one.
	Reason, Message string
}

// Reasons a Service has no ready endpoint.
const (
	ReasonNoSelector      = "NoSelector"
	ReasonNoMatchingPods  = "NoMatchingPods"
	ReasonNoReadyPods     = "NoReadyEndpoints"
	ReasonEndpointsBehind = "EndpointsNotUpdated"
)

// ServiceBackends reads the Endpoints and the pods of Service s and says,
// when none is ready, why.
func ServiceBackends(ctx context.Context, c *client.Client, s *v1.Service) (*Backends, error) {
	ns, name := s.GetMetadata().GetNamespace(), s.GetMetadata().GetName()
	b := &Backends{}
	ep, err := client.For[*v1.Endpoints](c).Get(ctx, ns, name)
	switch {
	case err == nil:
		b.Endpoints = ep
	case !apierrors.IsNotFound(err):
		return nil, err
	}
	for _, sub := range b.Endpoints.GetSubsets() {
		for _, a := range sub.GetAddresses() {
			b.Ready = append(b.Ready, addressString(a, sub))
		}
		for _, a := range sub.GetNotReadyAddresses() {
			b.NotReady = append(b.NotReady, addressString(a, sub))
		}
	}
	sel := s.GetSpec().GetSelector()
	if len(sel) == 0 {
		if len(b.Ready) == 0 {
			b.Reason, b.Message = ReasonNoSelector, "the Service has no selector: its Endpoints are written by hand, and have no ready address"
		}
		return b, nil
	}
	pods, _, err := client.For[*v1.Pod](c).List(ctx, client.ListOptions{Namespace: ns, LabelSelector: table.LabelString(sel)})
	if err != nil {
		return nil, err
	}
	for _, p := range pods {
		if p.GetMetadata().GetDeletionTimestamp() == nil {
			b.Pods = append(b.Pods, p)
		}
	}
	if len(b.Ready) > 0 {
		return b, nil
	}
	switch {
	case len(b.Pods) == 0:
		b.Reason = ReasonNoMatchingPods
		b.Message = fmt.Sprintf("selector %s matches no pod in namespace %s", table.LabelString(sel), ns)
		if near := nearLabels(ctx, c, ns, sel); near != "" {
			b.Message += "; " + near
		}
	default:
		var why []string
		for _, p := range b.Pods {
			why = append(why, p.GetMetadata().GetName()+": "+podNotReadyWhy(p))
		}
		sort.Strings(why)
		if allReady(b.Pods) {
			b.Reason = ReasonEndpointsBehind
			b.Message = fmt.Sprintf("%d pod(s) match and are Ready, but the Endpoints do not list them yet: is the controller-manager running?", len(b.Pods))
		} else {
			b.Reason = ReasonNoReadyPods
			b.Message = fmt.Sprintf("%d pod(s) match the selector, none is ready: %s", len(b.Pods), strings.Join(why, "; "))
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
		if table.ConditionStatus(p.GetStatus().GetConditions(), "Ready") != "True" {
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
	c := table.Condition(p.GetStatus().GetConditions(), "Ready")
	switch {
	case c == nil:
		return "starting"
	case c.Status == "True":
		return "Ready"
	case c.Message != "":
		return c.Reason + " (" + c.Message + ")"
	}
	return cmp.Or(c.Reason, "not ready")
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
