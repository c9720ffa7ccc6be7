package diagnose

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/tugboat/tugboat/api/apierrors"
	"github.com/tugboat/tugboat/api/client"
	"github.com/tugboat/tugboat/api/table"
	v1 "github.com/tugboat/tugboat/api/v1"
	"github.com/tugboat/tugboat/api/validation"
)

// An Ingress's trace follows the second flow as the proxies' ingress
// datapath (proxy/ingress) takes it, from what the API holds:
//
//	class      the Ingress's class (field, deprecated annotation, or the
//	           default class) exists and its controller is
//	           tugboat.dev/ingress-controller, the one the proxies serve
//	address    status.loadBalancer lists addresses: a proxy holding the
//	           status Lease serves it
//	tls        each tls entry's Secret exists, is kubernetes.io/tls, parses,
//	           is in date and covers the entry's hosts (else the proxies
//	           serve their self-signed default certificate)
//	rule       per host/path: no older Ingress claims the same host and
//	           path (the oldest wins, so this one would never be reached)
//	service    the backend Service and its port exist (ClusterIP shown; the
//	           datapath goes to the endpoints directly, not through it)
//	endpoints  the Service's EndpointSlices have ready endpoints for the port
//	           (else 503 NoEndpoints; why, from the Service's pods)
//	pods       the ready endpoints' pods, on Ready nodes
//	proxy      the proxies' own Warning Events on the Ingress (the 503
//	           reasons they meet: ServiceNotFound, ServicePortNotFound,
//	           NoEndpoints, BadTLSSecret), recent ones only
//
// The reasons are the proxy's, so a failed hop and the Event the proxies
// send for it say the same.

// LayerIngress is the layer of an Ingress's own hops: its class, rules and
// TLS, as the proxies' ingress datapath reads them.
const LayerIngress = "ingress"

// Reasons of an Ingress trace (the proxy's where it has one).
const (
	reasonIngressClassNotFound = "IngressClassNotFound"
	reasonNoIngressClass       = "NoIngressClass"
	reasonOtherController      = "OtherController"
	reasonNoAddress            = "NoAddress"
	reasonBadTLSSecret         = "BadTLSSecret"
	reasonRuleShadowed         = "RuleShadowed"
	reasonServiceNotFound      = "ServiceNotFound"
	reasonServicePortNotFound  = "ServicePortNotFound"
	reasonNoEndpoints          = "NoEndpoints"
	reasonNodeNotReady         = "NodeNotReady"
)

// ingressEventWindow is how far back the proxies' Events count: they
// repeat a lasting problem every ten minutes, so an older one has ended.
const ingressEventWindow = 20 * time.Minute

// ingressEventComponent is the proxies' ingress recorder's component.
const ingressEventComponent = "ingress-controller"

// ingressTrace is everything an Ingress's trace looks at.
type ingressTrace struct {
	ing     *v1.Ingress
	classes []*v1.IngressClass
	// all are every Ingress of the cluster (for shadowed rules).
	all      []*v1.Ingress
	backends []ingressBackend
	secrets  map[string]secretRead // by name, in the Ingress's namespace
	nodes    map[string]bool       // name -> Ready
	lease    *v1.Lease             // the status Lease, nil if none
	events   []*v1.Event
	now      time.Time
}

type secretRead struct {
	s   *v1.Secret
	err error
}

// ingressBackend is one path (or the default backend) and what stands
// behind it.
type ingressBackend struct {
	host, path, pathType string // host "" is any; path "" for the default backend
	b                    *v1.IngressBackend
	svc                  *v1.Service // nil: not found (or a resource backend)
	slices               []*v1.EndpointSlice
	why                  *Backends // why no endpoint is ready (nil when some are)
}

// TraceIngress reads an Ingress, its class, TLS Secrets, backends with
// their EndpointSlices and pods, the nodes and the proxies' Events.
func TraceIngress(ctx context.Context, c *client.Client, ns, name string, now time.Time) (*Report, error) {
	ing, err := client.For[*v1.Ingress](c).Get(ctx, ns, name)
	if err != nil {
		return nil, err
	}
	in := ingressTrace{ing: ing, secrets: map[string]secretRead{}, nodes: map[string]bool{}, now: now}
	if in.classes, _, err = client.For[*v1.IngressClass](c).List(ctx, client.ListOptions{}); err != nil {
		return nil, err
	}
	if in.all, _, err = client.For[*v1.Ingress](c).List(ctx, client.ListOptions{}); err != nil {
		in.all = []*v1.Ingress{ing} // a namespaced user: no shadowing check across namespaces
	}
	nodes, _, err := client.For[*v1.Node](c).List(ctx, client.ListOptions{})
	if err != nil {
		return nil, err
	}
	for _, n := range nodes {
		in.nodes[n.GetMetadata().GetName()] = table.ConditionStatus(n.GetStatus().GetConditions(), "Ready") == "True"
	}
	if l, err := client.For[*v1.Lease](c).Get(ctx, "kube-system", "tugboat-ingress-status"); err == nil {
		in.lease = l
	}
	for _, t := range ing.GetSpec().GetTls() {
		if n := t.GetSecretName(); n != "" {
			if _, ok := in.secrets[n]; !ok {
				s, err := client.For[*v1.Secret](c).Get(ctx, ns, n)
				in.secrets[n] = secretRead{s, err}
			}
		}
	}
	for _, ib := range ingressPaths(ing) {
		if sb := ib.b.GetService(); sb != nil {
			svc, err := client.For[*v1.Service](c).Get(ctx, ns, sb.GetName())
			switch {
			case err == nil:
				ib.svc = svc
				if ib.slices, _, err = client.For[*v1.EndpointSlice](c).List(ctx, client.ListOptions{Namespace: ns,
					LabelSelector: "kubernetes.io/service-name=" + sb.GetName()}); err != nil {
					return nil, err
				}
				if _, ready, _ := backendEndpoints(ib); len(ready) == 0 {
					if ib.why, err = ServiceBackends(ctx, c, svc); err != nil {
						return nil, err
					}
				}
			case !apierrors.IsNotFound(err):
				return nil, err
			}
		}
		in.backends = append(in.backends, ib)
	}
	if in.events, err = Events(ctx, c, ing); err != nil {
		return nil, err
	}
	return buildIngressTrace(in), nil
}

// ingressPaths are the default backend and every rule's paths, in spec
// order.
func ingressPaths(ing *v1.Ingress) []ingressBackend {
	var out []ingressBackend
	if d := ing.GetSpec().GetDefaultBackend(); d != nil {
		out = append(out, ingressBackend{b: d})
	}
	for _, r := range ing.GetSpec().GetRules() {
		for _, p := range r.GetHttp().GetPaths() {
			out = append(out, ingressBackend{host: r.GetHost(), path: cmp.Or(p.GetPath(), "/"), pathType: p.GetPathType(), b: p.GetBackend()})
		}
	}
	return out
}

// ingressClass is the class an Ingress names (the field, else the
// deprecated annotation), or the default class, as the proxies resolve it;
// nil and the name looked for when there is none.
func ingressClass(ing *v1.Ingress, classes []*v1.IngressClass) (*v1.IngressClass, string) {
	name := ing.GetSpec().GetIngressClassName()
	if ing.GetSpec().IngressClassName == nil {
		name = ing.GetMetadata().GetAnnotations()[validation.IngressClassAnnotation]
	}
	var def *v1.IngressClass
	for _, c := range classes {
		if name != "" && c.GetMetadata().GetName() == name {
			return c, name
		}
		if c.GetMetadata().GetAnnotations()[validation.DefaultIngressClassAnnotation] == "true" &&
			(def == nil || c.GetMetadata().GetCreationTimestamp().AsTime().After(def.GetMetadata().GetCreationTimestamp().AsTime())) {
			def = c
		}
	}
	if name != "" {
		return nil, name
	}
	return def, ""
}

// served: the proxies serve the Ingress (its class's controller is theirs).
func served(ing *v1.Ingress, classes []*v1.IngressClass) bool {
	c, _ := ingressClass(ing, classes)
	return c != nil && c.GetSpec().GetController() == validation.IngressController
}

// buildIngressTrace is the Ingress's path, from what was read.
func buildIngressTrace(in ingressTrace) *Report {
	ing := in.ing
	m := ing.GetMetadata()
	r := &Report{Kind: "Ingress", Namespace: m.GetNamespace(), Name: m.GetName()}
	class, _ := ingressClass(ing, in.classes)
	r.Summary = fmt.Sprintf("class %s, %d backend(s), address %s", cmp.Or(class.GetMetadata().GetName(), "<none>"),
		len(in.backends), table.IngressAddress(ing.GetStatus().GetLoadBalancer(), true))
	r.Hops = append(r.Hops, classHop(in), addressHop(in))
	for _, t := range ing.GetSpec().GetTls() {
		r.Hops = append(r.Hops, tlsHop(in, t))
	}
	for _, ib := range in.backends {
		r.Hops = append(r.Hops, ruleHop(in, ib))
		r.Hops = append(r.Hops, backendHops(in, ib)...)
	}
	r.Hops = append(r.Hops, proxyEventsHop(in, r.Hops))
	ns, name := m.GetNamespace(), m.GetName()
	r.finish(func(h *Hop) Finding {
		d := Finding{Layer: h.Layer, Component: h.Component, Reason: h.Reason, Message: h.Message}
		switch h.Hop {
		case "class":
			d.Next = "tugctl get ingressclasses; tugctl describe ingress " + name + " -n " + ns
		case "address":
			d.Next = "is a proxy running with --ingress-listen? tugctl get lease tugboat-ingress-status -n kube-system"
		case "tls":
			d.Next = "tugctl get secrets -n " + ns + "; a kubernetes.io/tls Secret holds tls.crt and tls.key"
		case "rule":
			d.Next = "tugctl get ingresses -A"
		case "service":
			d.Next = "tugctl get services -n " + ns + "; tugctl describe ingress " + name + " -n " + ns
		case "endpoints":
			switch h.Reason {
			case ReasonNoMatchingPods, ReasonNoSelector:
				d.Component = "Service's selector"
				d.Next = "tugctl get pods --show-labels -n " + ns
			case ReasonNoReadyPods:
				d.Component = "kubelet (probes)"
				d.Next = "tugctl trace pod POD for one of them"
			default:
				d.Next = "is the controller-manager running? tugctl get endpointslices -n " + ns
			}
		case "pods":
			d.Next = "tugctl get nodes; tugctl describe node " + h.Node
		case "proxy":
			d.Next = "tugctl describe ingress " + name + " -n " + ns + "; the proxy's log on " + cmp.Or(h.Node, "its node")
		}
		return d
	})
	return r
}

func classHop(in ingressTrace) Hop {
	h := Hop{Hop: "class", Layer: LayerIngress, Component: "IngressClass", Status: HopDone}
	c, name := ingressClass(in.ing, in.classes)
	switch {
	case c == nil && name != "":
		h.Title, h.Status, h.Reason = "class "+name, HopFailed, reasonIngressClassNotFound
		h.Message = fmt.Sprintf("IngressClass %q does not exist: no controller serves the Ingress", name)
	case c == nil:
		h.Title, h.Status, h.Reason = "class", HopFailed, reasonNoIngressClass
		h.Message = "the Ingress names no class and no IngressClass is the default (" + validation.DefaultIngressClassAnnotation + "=true): no controller serves it"
	case c.GetSpec().GetController() != validation.IngressController:
		h.Title = "class " + c.GetMetadata().GetName() + " → " + c.GetSpec().GetController()
		h.Status, h.Reason = HopFailed, reasonOtherController
		h.Message = fmt.Sprintf("class %s's controller is %s, not %s: Tugboat's proxies do not serve this Ingress; look at that controller",
			c.GetMetadata().GetName(), c.GetSpec().GetController(), validation.IngressController)
	default:
		h.Title = "class " + c.GetMetadata().GetName() + " → " + c.GetSpec().GetController()
		h.Component = "proxy (ingress)"
		if name == "" {
			h.Message = "the default class"
		}
	}
	return h
}

func addressHop(in ingressTrace) Hop {
	addr := table.IngressAddress(in.ing.GetStatus().GetLoadBalancer(), true)
	h := Hop{Hop: "address", Title: "served at " + addr, Layer: LayerProxy, Component: "proxy (ingress status)", Status: HopDone}
	if len(in.ing.GetStatus().GetLoadBalancer().GetIngress()) > 0 {
		h.Message = "every node's proxy listens for it (--ingress-listen, --ingress-tls-listen)"
		return h
	}
	h.Title, h.Status, h.Reason = "address", HopWaiting, reasonNoAddress
	h.Message = "status.loadBalancer is empty: no proxy has written the nodes' addresses"
	if !served(in.ing, in.classes) {
		h.Status, h.Reason, h.Message = HopSkipped, "", "not served by Tugboat's proxies"
		return h
	}
	switch l := in.lease; {
	case l == nil || l.GetSpec().GetHolderIdentity() == "":
		h.Message += " (no proxy holds Lease kube-system/tugboat-ingress-status: is a proxy with --ingress-listen running?)"
	case l.GetSpec().GetRenewTime() != nil && in.now.Sub(l.GetSpec().GetRenewTime().AsTime()) > time.Duration(max(l.GetSpec().GetLeaseDurationSeconds(), 15))*time.Second:
		h.Message += fmt.Sprintf(" (Lease kube-system/tugboat-ingress-status of %s was last renewed %s ago: that proxy is gone)",
			l.GetSpec().GetHolderIdentity(), in.now.Sub(l.GetSpec().GetRenewTime().AsTime()).Round(time.Second))
	default:
		h.Message += fmt.Sprintf(" yet (%s holds Lease kube-system/tugboat-ingress-status)", l.GetSpec().GetHolderIdentity())
	}
	return h
}

// ruleHop: the host and path reach this Ingress: no older served Ingress
// claims the same host and path.
func ruleHop(in ingressTrace, ib ingressBackend) Hop {
	h := Hop{Hop: "rule", Layer: LayerIngress, Component: "Ingress rules", Status: HopDone}
	if ib.path == "" {
		h.Title = "default backend → " + backendName(ib.b)
		return h
	}
	h.Title = fmt.Sprintf("%s%s (%s) → %s", cmp.Or(ib.host, "*"), ib.path, cmp.Or(ib.pathType, "ImplementationSpecific"), backendName(ib.b))
	if !served(in.ing, in.classes) {
		return h
	}
	for _, o := range in.all {
		if v1.Key(o) == v1.Key(in.ing) || !served(o, in.classes) || !olderIngress(o, in.ing) {
			continue
		}
		for _, r := range o.GetSpec().GetRules() {
			if !strings.EqualFold(r.GetHost(), ib.host) {
				continue
			}
			for _, p := range r.GetHttp().GetPaths() {
				if cmp.Or(p.GetPath(), "/") == ib.path && samePathKind(p.GetPathType(), ib.pathType) {
					h.Status, h.Reason = HopFailed, reasonRuleShadowed
					h.Message = fmt.Sprintf("Ingress %s, older, claims the same host and path (%s): the proxies send these requests to its backend %s (the oldest Ingress wins)",
						v1.Key(o), cmp.Or(ib.host, "*")+ib.path, backendName(p.GetBackend()))
					return h
				}
			}
		}
	}
	return h
}

// samePathKind: an Exact path and a Prefix one of the same text are
// different rules; ImplementationSpecific is a Prefix for the proxies.
func samePathKind(a, b string) bool {
	return (a == "Exact") == (b == "Exact")
}

// olderIngress: a was created before b (ties: by key), the proxies' order.
func olderIngress(a, b *v1.Ingress) bool {
	if c := a.GetMetadata().GetCreationTimestamp().AsTime().Compare(b.GetMetadata().GetCreationTimestamp().AsTime()); c != 0 {
		return c < 0
	}
	return v1.Key(a) < v1.Key(b)
}

// backendName is "web:80" (or "web:http"), as kubectl writes a backend.
func backendName(b *v1.IngressBackend) string {
	if r := b.GetResource(); r != nil {
		return r.GetKind() + "/" + r.GetName()
	}
	sb := b.GetService()
	port := sb.GetPort().GetName()
	if n := sb.GetPort().GetNumber(); n != 0 {
		port = strconv.Itoa(int(n))
	}
	return sb.GetName() + ":" + port
}

// backendPort is the Service port a backend names, nil if none.
func backendPort(ib ingressBackend) *v1.ServicePort {
	sb := ib.b.GetService()
	for _, p := range ib.svc.GetSpec().GetPorts() {
		if (sb.GetPort().GetNumber() != 0 && p.GetPort() == sb.GetPort().GetNumber()) || (sb.GetPort().GetName() != "" && p.GetName() == sb.GetPort().GetName()) {
			return p
		}
	}
	return nil
}

// backendEndpoints are the backend port's endpoints in the EndpointSlices
// as the proxies choose them: the ready ones, else the serving
// terminating ones; the slices that hold the port.
func backendEndpoints(ib ingressBackend) (slicesWithPort int, ready, serving []endpointTarget) {
	sp := backendPort(ib)
	if sp == nil {
		return 0, nil, nil
	}
	for _, sl := range ib.slices {
		if sl.GetAddressType() != "IPv4" {
			continue
		}
		for _, p := range sl.GetPorts() {
			if p.GetName() != sp.GetName() || cmp.Or(p.GetProtocol(), "TCP") != "TCP" || p.GetPort() <= 0 {
				continue
			}
			slicesWithPort++
			for _, e := range sl.GetEndpoints() {
				c := e.GetConditions()
				for _, a := range e.GetAddresses() {
					t := endpointTarget{addr: fmt.Sprintf("%s:%d", a, p.GetPort()), pod: e.GetTargetRef().GetName(), node: e.GetNodeName()}
					switch {
					case c == nil || c.Ready == nil || c.GetReady():
						ready = append(ready, t)
					case c.GetServing():
						serving = append(serving, t)
					}
				}
			}
		}
	}
	byAddr := func(a, b endpointTarget) int { return cmp.Compare(a.addr, b.addr) }
	slices.SortFunc(ready, byAddr)
	slices.SortFunc(serving, byAddr)
	return slicesWithPort, ready, serving
}

// backendHops: the Service and its port, its ready endpoints, their pods'
// nodes.
func backendHops(in ingressTrace, ib ingressBackend) []Hop {
	name := backendName(ib.b)
	sh := Hop{Hop: "service", Title: "service " + name, Layer: LayerIngress, Component: "Ingress backend", Status: HopDone}
	eh := Hop{Hop: "endpoints", Title: "endpoints of " + name, Layer: LayerEndpoints, Component: "controller-manager", Status: HopWaiting}
	ph := Hop{Hop: "pods", Title: "pods of " + name, Layer: LayerKubelet, Component: "kubelet", Status: HopWaiting}
	if ib.b.GetResource() != nil {
		sh.Status, sh.Message = HopSkipped, "a resource backend: Tugboat's proxies serve Service backends only"
		return []Hop{sh}
	}
	key := in.ing.GetMetadata().GetNamespace() + "/" + ib.b.GetService().GetName()
	if ib.svc == nil {
		sh.Status, sh.Reason = HopFailed, reasonServiceNotFound
		sh.Message = fmt.Sprintf("service %q not found: requests for it get 503", key)
		return []Hop{sh, eh, ph}
	}
	sp := backendPort(ib)
	if sp == nil {
		sh.Status, sh.Reason = HopFailed, reasonServicePortNotFound
		sh.Message = fmt.Sprintf("service %q has no port %s (it has %s): requests for it get 503", key, strings.TrimPrefix(name, ib.b.GetService().GetName()+":"),
			table.ServicePorts(ib.svc.GetSpec()))
		return []Hop{sh, eh, ph}
	}
	sh.Title = fmt.Sprintf("service %s → ClusterIP %s port %d→%s", name, table.OrNone(ib.svc.GetSpec().GetClusterIp()), sp.GetPort(), cmp.Or(sp.GetTargetPort(), strconv.Itoa(int(sp.GetPort()))))
	sh.Message = "the proxies forward to the endpoints directly, not through the ClusterIP"

	nslices, ready, serving := backendEndpoints(ib)
	targets := ready
	switch {
	case len(ready) > 0:
		eh.Status = HopDone
		eh.Title = fmt.Sprintf("%s: %d ready endpoint(s) in %d EndpointSlice(s)", name, len(ready), nslices)
	case len(serving) > 0:
		eh.Status, targets = HopDone, serving
		eh.Title = fmt.Sprintf("%s: %d serving terminating endpoint(s), none ready", name, len(serving))
	default:
		eh.Status, eh.Reason = HopFailed, reasonNoEndpoints
		eh.Message = fmt.Sprintf("Service %q does not have any active Endpoint (%d EndpointSlice(s) with port %s): requests for it get 503", key, nslices, cmp.Or(sp.GetName(), strconv.Itoa(int(sp.GetPort()))))
		if ib.why != nil && ib.why.Reason != "" {
			eh.Reason, eh.Message = ib.why.Reason, eh.Message+"; "+ib.why.Message
			if ib.why.Reason == ReasonEndpointsBehind || len(ib.why.Ready) > 0 {
				eh.Message += fmt.Sprintf("; the EndpointSlices lag the Endpoints (%s)", strings.Join(ib.why.Ready, ", "))
			}
		}
		return []Hop{sh, eh, ph}
	}
	var names []string
	for _, t := range targets {
		names = append(names, t.String())
	}
	eh.Message = strings.Join(names, ", ")

	var onReady, onNotReady []string
	for _, t := range targets {
		where := cmp.Or(t.pod, t.addr) + " on " + cmp.Or(t.node, "?")
		if ok, known := in.nodes[t.node]; known && !ok {
			onNotReady = append(onNotReady, where)
			continue
		}
		onReady = append(onReady, where)
	}
	ph.Title = fmt.Sprintf("%s: %d pod(s) on Ready nodes", name, len(onReady))
	ph.Status, ph.Message = HopDone, strings.Join(onReady, ", ")
	if len(onNotReady) > 0 {
		ph.Message = strings.TrimPrefix(ph.Message+"; on nodes not Ready: "+strings.Join(onNotReady, ", "), "; ")
	}
	if len(onReady) == 0 {
		ph.Status, ph.Reason = HopFailed, reasonNodeNotReady
		ph.Node = targets[0].node
		ph.Message = "every endpoint's node is not Ready, so its pods may be gone: " + strings.Join(onNotReady, ", ")
	}
	return []Hop{sh, eh, ph}
}

// proxyEventsHop: the proxies' recent Warning Events on the Ingress. One
// whose reason a hop above checked and found fine has ended (the proxies
// repeat a lasting problem every ten minutes); any other is a failure.
func proxyEventsHop(in ingressTrace, hops []Hop) Hop {
	h := Hop{Hop: "proxy", Title: "the proxies report no problem", Layer: LayerProxy, Component: "proxy (ingress)", Status: HopDone}
	if !served(in.ing, in.classes) {
		h.Title, h.Status = "the proxies' events", HopSkipped
		return h
	}
	failing := map[string]bool{}
	for _, x := range hops {
		if x.Status == HopFailed {
			failing[x.Reason] = true
		}
	}
	failing[reasonNoEndpoints] = failing[reasonNoEndpoints] || failing[ReasonNoMatchingPods] || failing[ReasonNoReadyPods] ||
		failing[ReasonNoSelector] || failing[ReasonEndpointsBehind]
	checked := map[string]bool{reasonServiceNotFound: true, reasonServicePortNotFound: true, reasonNoEndpoints: true, reasonBadTLSSecret: true}
	var current, ended []string
	var latest *v1.Event
	for _, e := range in.events {
		if e.GetType() != "Warning" || e.GetSource().GetComponent() != ingressEventComponent || in.now.Sub(table.EventTime(e)) > ingressEventWindow {
			continue
		}
		text := fmt.Sprintf("%s on %s: %s", e.GetReason(), cmp.Or(e.GetSource().GetHost(), "?"), e.GetMessage())
		if checked[e.GetReason()] && !failing[e.GetReason()] {
			ended = append(ended, text)
			continue
		}
		current = append(current, text)
		latest = e
	}
	sort.Strings(ended)
	if latest == nil {
		if len(ended) > 0 {
			h.Message = "ended since: " + strings.Join(ended, "; ")
		}
		return h
	}
	h.Title = fmt.Sprintf("the proxies report %d problem(s)", len(current))
	h.Status, h.Reason, h.Node = HopFailed, latest.GetReason(), latest.GetSource().GetHost()
	h.Message = strings.Join(current, "; ")
	return h
}
