package diagnose

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/tugboat/tugboat/api/apierrors"
	"github.com/tugboat/tugboat/api/client"
	"github.com/tugboat/tugboat/api/table"
	v1 "github.com/tugboat/tugboat/api/v1"
)

// serviceTrace is everything a Service's trace looks at.
type serviceTrace struct {
	ns, name, dnsName string
	svc               *v1.Service // nil: no such Service
	backends          *Backends   // nil without svc
	// ports are the Service's ports with their ready endpoints, in spec
	// order (the order of the nodes' port checks).
	ports []portEndpoints
	// checks are the nodes' answers (nil answer: err says why), by node,
	// for the Ready nodes; notReady names the others.
	checks   []nodeCheck
	notReady []string
	// others are the namespace's Service names (for "did you mean").
	others []string
	// domain is the cluster's DNS domain; from, with --from, the client
	// pod's side of the trace (service_from.go).
	domain string
	from   *fromTrace
}

type nodeCheck struct {
	node string
	resp *v1.CheckServiceResponse
	err  error
}

// nodeCheckTimeout bounds one node's CheckService: a node that does not
// answer in time is reported unknown.
const nodeCheckTimeout = 10 * time.Second

// parseServiceName accepts NAME or a Service DNS name
// (NAME.NS.svc[.DOMAIN]) and returns the namespace and name.
func parseServiceName(arg, ns string) (string, string) {
	parts := strings.Split(strings.TrimSuffix(arg, "."), ".")
	if len(parts) >= 3 && parts[2] == "svc" {
		return parts[1], parts[0]
	}
	if len(parts) == 2 {
		return parts[1], parts[0]
	}
	return ns, arg
}

// readService reads what both traces of a Service start from: the
// Service arg (NAME or NAMESPACE/NAME) and its backends, or, if it does
// not exist, the names of the namespace's other Services.
func readService(ctx context.Context, c *client.Client, ns, arg, domain string) (serviceTrace, error) {
	in := serviceTrace{domain: domain}
	in.ns, in.name = parseServiceName(arg, ns)
	in.dnsName = fmt.Sprintf("%s.%s.svc.%s", in.name, in.ns, domain)
	svc, err := client.For[*v1.Service](c).Get(ctx, in.ns, in.name)
	switch {
	case err == nil:
		in.svc = svc
		if in.backends, err = ServiceBackends(ctx, c, svc); err != nil {
			return in, err
		}
	case apierrors.IsNotFound(err):
		svcs, _, err := client.For[*v1.Service](c).List(ctx, client.ListOptions{Namespace: in.ns})
		if err != nil {
			return in, err
		}
		for _, s := range svcs {
			in.others = append(in.others, s.GetMetadata().GetName())
		}
	default:
		return in, err
	}
	return in, nil
}

// checkRequest is what a kubelet is asked to try: the DNS name and, for a
// Service with a ClusterIP, its ports and a few ready endpoints of each
// (in.ports is filled on the way).
func (in *serviceTrace) checkRequest() *v1.CheckServiceRequest {
	req := &v1.CheckServiceRequest{DnsName: in.dnsName}
	svc := in.svc
	if svc == nil || svc.GetSpec().GetClusterIp() == "" || svc.GetSpec().GetClusterIp() == "None" {
		return req
	}
	req.ClusterIp = svc.GetSpec().GetClusterIp()
	in.ports = endpointsByPort(svc, in.backends)
	for _, p := range in.ports {
		ref := &v1.ServicePortRef{Protocol: p.protocol, Port: p.port.Port}
		for _, e := range p.ready[:min(len(p.ready), probedEndpoints)] {
			ref.Endpoints = append(ref.Endpoints, e.addr)
		}
		req.Ports = append(req.Ports, ref)
	}
	return req
}

// TraceService asks every Ready node's kubelet to try the Service's DNS
// name, its ClusterIP ports and a few of its endpoints, and reads its
// endpoints.
func TraceService(ctx context.Context, c *client.Client, ns, arg, domain string) (*Report, error) {
	in, err := readService(ctx, c, ns, arg, domain)
	if err != nil {
		return nil, err
	}
	nodes, _, err := client.For[*v1.Node](c).List(ctx, client.ListOptions{})
	if err != nil {
		return nil, err
	}
	req := in.checkRequest()
	api := v1.NewNodeAPIClient(c.Conn())
	var mu sync.Mutex
	var wg sync.WaitGroup
	for _, n := range nodes {
		name := n.GetMetadata().GetName()
		if table.ConditionStatus(n.GetStatus().GetConditions(), "Ready") != "True" {
			in.notReady = append(in.notReady, name)
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			cctx, cancel := context.WithTimeout(ctx, nodeCheckTimeout)
			defer cancel()
			resp, err := api.CheckService(cctx, forNode(req, name))
			mu.Lock()
			in.checks = append(in.checks, nodeCheck{node: name, resp: resp, err: err})
			mu.Unlock()
		}()
	}
	wg.Wait()
	sort.Slice(in.checks, func(i, j int) bool { return in.checks[i].node < in.checks[j].node })
	return buildServiceTrace(in), nil
}

// forNode copies the request for one node.
func forNode(r *v1.CheckServiceRequest, node string) *v1.CheckServiceRequest {
	return &v1.CheckServiceRequest{NodeName: node, DnsName: r.DnsName, ClusterIp: r.ClusterIp, Ports: r.Ports}
}

// buildServiceTrace is the Service's path, from what was read.
func buildServiceTrace(in serviceTrace) *Report {
	r := &Report{Kind: "Service", Namespace: in.ns, Name: in.name}
	svc := in.svc
	if svc == nil {
		r.Summary = "no such Service"
	} else {
		r.Summary = fmt.Sprintf("%s %s, ports %s", cmp.Or(svc.GetSpec().GetType(), "ClusterIP"), table.OrNone(svc.GetSpec().GetClusterIp()), table.ServicePorts(svc.GetSpec()))
	}
	for _, nc := range in.checks {
		r.Hops = append(r.Hops, dnsHop(in, nc))
	}
	for _, n := range in.notReady {
		r.Hops = append(r.Hops, Hop{Hop: "dns", Title: "resolves " + in.dnsName, Layer: LayerDNS, Component: "proxy (DNS)",
			Node: n, Status: HopSkipped, Message: "node " + n + " is not Ready"})
	}
	if len(in.checks) == 0 && len(in.notReady) == 0 {
		r.Hops = append(r.Hops, Hop{Hop: "dns", Title: "resolves " + in.dnsName, Layer: LayerDNS, Component: "proxy (DNS)",
			Status: HopUnknown, Message: "the cluster has no node to ask"})
	}
	if svc == nil {
		if len(in.checks) == 0 {
			r.Hops[0].Status, r.Hops[0].Reason = HopFailed, "NotFound"
			r.Hops[0].Message = fmt.Sprintf("no Service %s in namespace %s, so %s does not resolve%s", in.name, in.ns, in.dnsName, didYouMean(in.name, in.others))
		}
		r.finish(nil)
		r.Next = "tugctl get services -n " + in.ns
		return r
	}
	if svc.GetSpec().GetClusterIp() != "" && svc.GetSpec().GetClusterIp() != "None" {
		for _, nc := range in.checks {
			r.Hops = append(r.Hops, datapathHop(in, nc))
		}
	}
	b := in.backends
	eh := Hop{Hop: "endpoints", Title: fmt.Sprintf("%d ready endpoint(s)", len(b.Ready)), Layer: LayerEndpoints,
		Component: "controller-manager", Status: HopDone}
	if len(b.Ready) > 0 {
		eh.Message = strings.Join(b.Ready, ", ")
	} else {
		eh.Title = "ready endpoints"
		eh.Status, eh.Reason, eh.Message = HopFailed, b.Reason, b.Message
	}
	r.Hops = append(r.Hops, eh)
	r.finish(func(h *Hop) Finding { return serviceFinding(in, h) })
	return r
}

// serviceFinding is the finding of a Service trace's failed hop, with
// the next command to run, for the hops both traces share.
func serviceFinding(in serviceTrace, h *Hop) Finding {
	d := Finding{Layer: h.Layer, Component: h.Component, Reason: h.Reason, Message: h.Message}
	switch h.Hop {
	case "dns":
		d.Next = "is the proxy running on " + h.Node + "? its log and tugboat_proxy_dns_queries_total"
	case "datapath":
		d.Next = datapathHint(in, h)
	case "endpoints":
		switch h.Reason {
		case ReasonNoMatchingPods, ReasonNoSelector:
			d.Component = "Service's selector"
			d.Next = "tugctl get pods --show-labels -n " + in.ns + "; tugctl describe service " + in.name
		case ReasonNoReadyPods:
			d.Component = "kubelet (probes)"
			d.Next = "tugctl trace pod POD for one of them"
		default:
			d.Next = "is the controller-manager running?"
		}
	}
	return d
}

// dnsHop: the node's cluster DNS answers the name with the ClusterIP.
func dnsHop(in serviceTrace, nc nodeCheck) Hop {
	h := Hop{Hop: "dns", Title: "resolves " + in.dnsName, Layer: LayerDNS, Component: "proxy (DNS)", Node: nc.node}
	if nc.err != nil {
		h.Status, h.Message = HopUnknown, "could not ask the node: "+apierrors.FromGRPC(nc.err).Error()
		return h
	}
	dns := nc.resp.GetDns()
	want := ""
	if in.svc != nil && in.svc.GetSpec().GetClusterIp() != "None" {
		want = in.svc.GetSpec().GetClusterIp()
	}
	switch {
	case dns.GetError() != "":
		h.Status, h.Reason = HopFailed, "DNSUnreachable"
		h.Message = fmt.Sprintf("no answer from the cluster DNS %s on %s: %s", dns.GetServer(), nc.node, dns.GetError())
	case in.svc == nil && dns.GetRcode() == "NXDOMAIN":
		h.Status, h.Reason = HopFailed, "NXDOMAIN"
		h.Message = fmt.Sprintf("%s does not exist (NXDOMAIN from %s on %s): there is no Service %s in namespace %s%s",
			in.dnsName, dns.GetServer(), nc.node, in.name, in.ns, didYouMean(in.name, in.others))
	case in.svc == nil:
		h.Status, h.Reason = HopFailed, "DNSStale"
		h.Message = fmt.Sprintf("%s answers %s %v for a Service that does not exist", dns.GetServer(), dns.GetRcode(), dns.GetAddresses())
	case dns.GetRcode() != "NOERROR":
		h.Status, h.Reason = HopFailed, dns.GetRcode()
		h.Message = fmt.Sprintf("%s on %s answers %s for an existing Service: its DNS has not caught up", dns.GetServer(), nc.node, dns.GetRcode())
	case want != "" && !slices.Contains(dns.GetAddresses(), want):
		h.Status, h.Reason = HopFailed, "DNSStale"
		h.Message = fmt.Sprintf("%s on %s answers %v, not the ClusterIP %s", dns.GetServer(), nc.node, dns.GetAddresses(), want)
	default:
		h.Status = HopDone
		h.Title = fmt.Sprintf("%s → %s", in.dnsName, strings.Join(dns.GetAddresses(), ","))
	}
	return h
}

// didYouMean suggests the closest of names to name ("; did you mean web?").
func didYouMean(name string, names []string) string {
	best, bestD := "", 3
	for _, n := range names {
		if d := editDistance(name, n); d < bestD {
			best, bestD = n, d
		}
	}
	if best == "" {
		return ""
	}
	return "; did you mean " + best + "?"
}

// editDistance is the optimal string alignment distance between a and b:
// insertions, deletions, substitutions and swaps of neighbours ("wbe" is
// one from "web").
func editDistance(a, b string) int {
	d := make([][]int, len(a)+1)
	for i := range d {
		d[i] = make([]int, len(b)+1)
		d[i][0] = i
	}
	for j := range d[0] {
		d[0][j] = j
	}
	for i := 1; i <= len(a); i++ {
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			d[i][j] = min(d[i-1][j]+1, d[i][j-1]+1, d[i-1][j-1]+cost)
			if i > 1 && j > 1 && a[i-1] == b[j-2] && a[i-2] == b[j-1] {
				d[i][j] = min(d[i][j], d[i-2][j-2]+1)
			}
		}
	}
	return d[len(a)][len(b)]
}
