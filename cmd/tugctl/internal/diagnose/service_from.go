package diagnose

import (
	"cmp"
	"context"
	"fmt"
	"net"
	"net/netip"
	"slices"
	"strings"

	"github.com/tugboat/tugboat/api/apierrors"
	"github.com/tugboat/tugboat/api/client"
	"github.com/tugboat/tugboat/api/netpolicy"
	"github.com/tugboat/tugboat/api/table"
	v1 "github.com/tugboat/tugboat/api/v1"
)

// A Service's path from one client pod (tugctl trace service --from POD)
// is the flow that pod's packets take, from its own network namespace on
// its own node:
//
//	client       the pod runs on a node and has an IP
//	dns-config   its dnsPolicy (and dnsConfig) send its queries to the
//	             cluster DNS, with the search path that makes the name it
//	             would use resolve (ClusterFirst; a hostNetwork pod needs
//	             ClusterFirstWithHostNet)
//	dns          the cluster DNS answers the Service's name with its
//	             ClusterIP, asked from the pod's namespace by its node's
//	             kubelet (CheckService from_pod)
//	datapath     a connection from the pod's namespace to each ClusterIP
//	             port gets through the node's Service rules to an endpoint
//	egress       NetworkPolicy lets the pod send to the cluster DNS and to
//	             each ready endpoint on its target port
//	ingress      NetworkPolicy lets each ready endpoint's pod receive from
//	             the client on that port
//	endpoints    the Service has ready endpoints
//
// The policy verdicts are package api/netpolicy's, the code the
// nodes' policy agents compile into nftables, judged on the endpoint's
// address and port (after the Service's DNAT, as the nodes judge it). A
// policy that drops the traffic explains a DNS or datapath probe that
// timed out: those hops are then unknown, and the stop is at the policy.

// Reasons of a trace from a client pod.
const (
	reasonClientNotRunning    = "ClientNotRunning"
	reasonDNSPolicyDefault    = "DNSPolicyDefault"
	reasonDNSConfigNoCluster  = "DNSConfigNoClusterDNS"
	reasonNetworkPolicyDenied = "NetworkPolicyDenied"
)

// fromTrace is what a trace from a client pod adds to a Service's.
type fromTrace struct {
	pod      *v1.Pod
	check    *nodeCheck // nil: not asked (the pod does not run)
	policies []*netpolicy.Policy
	// policyErr says why the policies could not be read or compiled.
	policyErr  error
	namespaces map[string]map[string]string
}

// TraceServiceFrom is TraceService as seen from one pod: its node's
// kubelet tries the Service from the pod's own network namespace, and the
// NetworkPolicies are judged for the pod and the Service's endpoints.
// from is POD (in ns) or NAMESPACE/POD.
func TraceServiceFrom(ctx context.Context, c *client.Client, ns, arg, domain, from string) (*Report, error) {
	fns, fname := ns, from
	if a, b, ok := strings.Cut(from, "/"); ok {
		fns, fname = a, b
	}
	pod, err := client.For[*v1.Pod](c).Get(ctx, fns, fname)
	if err != nil {
		return nil, err
	}
	in, err := readService(ctx, c, ns, arg, domain)
	if err != nil {
		return nil, err
	}
	ft := &fromTrace{pod: pod, namespaces: map[string]map[string]string{}}
	in.from = ft
	nps, _, err := client.For[*v1.NetworkPolicy](c).List(ctx, client.ListOptions{})
	if err == nil {
		for _, np := range nps {
			p, cerr := netpolicy.Compile(np)
			if cerr != nil {
				ft.policyErr = fmt.Errorf("NetworkPolicy %s: %w", v1.Key(np), cerr)
				break
			}
			ft.policies = append(ft.policies, p)
		}
		var nss []*v1.Namespace
		if nss, _, err = client.For[*v1.Namespace](c).List(ctx, client.ListOptions{}); err == nil {
			for _, n := range nss {
				ft.namespaces[n.GetMetadata().GetName()] = n.GetMetadata().GetLabels()
			}
		}
	}
	if err != nil {
		ft.policyErr = apierrors.FromGRPC(err)
	}
	node := pod.GetSpec().GetNodeName()
	if node != "" && pod.GetStatus().GetPhase() == "Running" {
		req := in.checkRequest()
		req.NodeName, req.FromPod = node, fns+"/"+fname
		cctx, cancel := context.WithTimeout(ctx, nodeCheckTimeout)
		resp, err := v1.NewNodeAPIClient(c.Conn()).CheckService(cctx, req)
		cancel()
		ft.check = &nodeCheck{node: node, resp: resp, err: err}
	}
	return buildServiceTraceFrom(in), nil
}

// buildServiceTraceFrom is the Service's path from in.from's pod.
func buildServiceTraceFrom(in serviceTrace) *Report {
	ft := in.from
	p := ft.pod
	pkey := v1.Key(p)
	r := &Report{Kind: "Service", Namespace: in.ns, Name: in.name}
	if in.svc == nil {
		r.Summary = "no such Service, from pod " + pkey
	} else {
		r.Summary = fmt.Sprintf("%s %s, ports %s, from pod %s", cmp.Or(in.svc.GetSpec().GetType(), "ClusterIP"),
			table.OrNone(in.svc.GetSpec().GetClusterIp()), table.ServicePorts(in.svc.GetSpec()), pkey)
	}
	r.Hops = append(r.Hops, clientHop(ft))
	if ft.check == nil {
		r.finish(nil)
		r.Next = "tugctl trace pod " + p.GetMetadata().GetName() + " -n " + p.GetMetadata().GetNamespace()
		return r
	}
	nc := *ft.check
	r.Hops = append(r.Hops, dnsConfigHop(in, nc))
	dh := dnsHop(in, nc)
	if dh.Status == HopDone {
		dh.Title += " (asked from the pod)"
	}
	r.Hops = append(r.Hops, dh)
	if in.svc == nil {
		r.finish(nil)
		r.Next = "tugctl get services -n " + in.ns
		return r
	}
	hasIP := in.svc.GetSpec().GetClusterIp() != "" && in.svc.GetSpec().GetClusterIp() != "None"
	if hasIP {
		r.Hops = append(r.Hops, datapathHop(in, nc))
	}
	egress, ingress, dnsDenied := policyHops(in, nc)
	r.Hops = append(r.Hops, egress, ingress)
	// A policy that drops the traffic explains a probe that timed out.
	for i := range r.Hops {
		h := &r.Hops[i]
		if h.Status != HopFailed {
			continue
		}
		if (h.Hop == "dns" && dnsDenied) || (h.Hop == "datapath" && (egress.Status == HopFailed || ingress.Status == HopFailed)) {
			h.Status, h.Message = HopUnknown, h.Message+" (NetworkPolicy drops this traffic: see the egress and ingress hops)"
		}
	}
	b := in.backends
	eh := Hop{Hop: "endpoints", Title: fmt.Sprintf("%d ready endpoint(s)", len(b.Ready)), Layer: LayerEndpoints, Component: "controller-manager", Status: HopDone}
	if len(b.Ready) > 0 {
		eh.Message = strings.Join(b.Ready, ", ")
	} else {
		eh.Title, eh.Status, eh.Reason, eh.Message = "ready endpoints", HopFailed, b.Reason, b.Message
	}
	r.Hops = append(r.Hops, eh)
	r.finish(func(h *Hop) Finding {
		d := serviceFinding(in, h)
		switch h.Hop {
		case "client":
			d.Next = "tugctl trace pod " + p.GetMetadata().GetName() + " -n " + p.GetMetadata().GetNamespace()
		case "dns-config":
			d.Next = "tugctl get pod " + p.GetMetadata().GetName() + " -n " + p.GetMetadata().GetNamespace() + " -o yaml (spec.dnsPolicy, spec.dnsConfig)"
		case "egress", "ingress":
			d.Next = "tugctl describe networkpolicy -n NAMESPACE NAME for the policies named; tugctl get networkpolicies -A"
		}
		return d
	})
	return r
}

// clientHop: the client pod runs on a node, with an IP.
func clientHop(ft *fromTrace) Hop {
	p := ft.pod
	node, ip := p.GetSpec().GetNodeName(), p.GetStatus().GetPodIp()
	h := Hop{Hop: "client", Title: fmt.Sprintf("pod %s on %s, IP %s", v1.Key(p), cmp.Or(node, "<none>"), table.OrNone(ip)),
		Layer: LayerKubelet, Component: "kubelet", Node: node, Status: HopDone}
	if p.GetSpec().GetHostNetwork() {
		h.Message = "hostNetwork: the pod uses the node's network namespace"
	}
	if ft.check == nil || ip == "" {
		h.Status, h.Reason = HopFailed, reasonClientNotRunning
		h.Message = fmt.Sprintf("pod %s is %s (%s): it sends nothing yet", v1.Key(p), cmp.Or(p.GetStatus().GetPhase(), "Pending"), podNotReadyWhy(p))
		if node == "" {
			h.Layer, h.Component = LayerScheduler, "scheduler"
		}
	}
	return h
}

// dnsConfigHop: the pod's resolver asks the cluster DNS, with a search
// path under which the name the pod would use is the Service's.
func dnsConfigHop(in serviceTrace, nc nodeCheck) Hop {
	p := in.from.pod
	spec := p.GetSpec()
	clusterDNS, _, err := net.SplitHostPort(nc.resp.GetDns().GetServer())
	if err != nil {
		clusterDNS = strings.TrimSuffix(nc.resp.GetDns().GetServer(), ":53")
	}
	pns := p.GetMetadata().GetNamespace()
	short := in.name
	if pns != in.ns {
		short = in.name + "." + in.ns
	}
	policyName := cmp.Or(spec.GetDnsPolicy(), "ClusterFirst")
	effective := policyName
	if policyName == "ClusterFirst" && spec.GetHostNetwork() {
		effective = "Default"
	}
	h := Hop{Hop: "dns-config", Layer: LayerDNS, Component: "pod's dnsPolicy", Node: nc.node, Status: HopDone}
	var servers, search []string
	switch effective {
	case "ClusterFirst", "ClusterFirstWithHostNet":
		servers = []string{cmp.Or(clusterDNS, "<the kubelet's --cluster-dns>")}
		search = []string{pns + ".svc." + in.domain, "svc." + in.domain, in.domain}
	case "Default":
		h.Title = "dnsPolicy " + policyName
		h.Status, h.Reason = HopFailed, reasonDNSPolicyDefault
		h.Message = fmt.Sprintf("the pod uses its node's resolv.conf (dnsPolicy %s", policyName)
		if effective != policyName {
			h.Message += " on a hostNetwork pod; ClusterFirstWithHostNet is needed"
		}
		h.Message += "), not the cluster DNS: " + in.dnsName + " does not resolve there"
		return h
	}
	if dc := spec.GetDnsConfig(); dc != nil {
		servers = append(servers, dc.GetNameservers()...)
		search = append(search, dc.GetSearches()...)
	}
	h.Title = fmt.Sprintf("dnsPolicy %s: nameserver %s, search %s", policyName, strings.Join(servers, ","), strings.Join(search, " "))
	if clusterDNS != "" && !slices.Contains(servers, clusterDNS) {
		h.Status, h.Reason = HopFailed, reasonDNSConfigNoCluster
		h.Message = fmt.Sprintf("dnsConfig's nameservers %v do not include the cluster DNS %s: %s does not resolve from the pod", servers, clusterDNS, in.dnsName)
		return h
	}
	if len(servers) > 0 && clusterDNS != "" && servers[0] != clusterDNS {
		h.Message = "the cluster DNS is not the first nameserver: the resolver asks " + servers[0] + " first"
	}
	if slices.Contains(search, in.ns+".svc."+in.domain) || slices.Contains(search, "svc."+in.domain) {
		h.Message = strings.TrimPrefix(h.Message+"; the pod can use the name "+short, "; ")
	}
	return h
}

// policyHops: the client's egress to the cluster DNS and the endpoints,
// and the endpoints' ingress from the client; dnsDenied when the egress
// to the cluster DNS is dropped.
func policyHops(in serviceTrace, nc nodeCheck) (egress, ingress Hop, dnsDenied bool) {
	ft := in.from
	pkey := v1.Key(ft.pod)
	egress = Hop{Hop: "egress", Title: "NetworkPolicy egress of " + pkey, Layer: LayerProxy, Component: "proxy (network policy)", Node: nc.node, Status: HopDone}
	ingress = Hop{Hop: "ingress", Title: "NetworkPolicy ingress of the endpoints", Layer: LayerProxy, Component: "proxy (network policy)", Status: HopDone}
	if ft.policyErr != nil {
		egress.Status, egress.Message = HopUnknown, "could not judge the policies: "+ft.policyErr.Error()
		ingress.Status, ingress.Message = HopUnknown, egress.Message
		return egress, ingress, false
	}
	client, ok := netpolicy.EndpointOf(ft.pod)
	if !ok {
		egress.Status, egress.Message = HopSkipped, "policies do not apply to this pod (hostNetwork or no IP)"
		ingress.Status = HopSkipped
		return egress, ingress, false
	}
	nsLabels := func(name string) map[string]string { return ft.namespaces[name] }
	pods := map[string]*v1.Pod{}
	for _, bp := range in.backends.Pods {
		pods[bp.GetStatus().GetPodIp()] = bp
	}
	var egressDenied, ingressDenied, egressOK, ingressOK []string
	egressBy, ingressBy := map[string]bool{}, map[string]bool{}
	isoEgress, isoIngress := map[string]bool{}, map[string]bool{}
	note := func(v netpolicy.Verdict) {
		for _, k := range v.EgressIsolating {
			isoEgress[k] = true
		}
		for _, k := range v.IngressIsolating {
			isoIngress[k] = true
		}
		if v.EgressAllowedBy != "" {
			egressBy[v.EgressAllowedBy] = true
		}
		if v.IngressAllowedBy != "" {
			ingressBy[v.IngressAllowedBy] = true
		}
	}
	if dnsIP, err := netip.ParseAddr(strings.TrimSuffix(nc.resp.GetDns().GetServer(), ":53")); err == nil {
		dns := netpolicy.ClusterDNS(dnsIP)
		v := netpolicy.Evaluate(ft.policies, nsLabels, netpolicy.Connection{From: &client, To: &dns, FromIP: client.IP, ToIP: dnsIP, Protocol: netpolicy.UDP, Port: 53})
		note(v)
		if !v.Allowed {
			dnsDenied = true
			egressDenied = append(egressDenied, "the cluster DNS "+dnsIP.String()+":53/UDP")
		}
	}
	for _, pe := range in.ports {
		for _, t := range pe.ready {
			ap, err := netip.ParseAddrPort(t.addr)
			if err != nil {
				continue
			}
			to := pods[ap.Addr().String()]
			var dst *netpolicy.Endpoint
			if to != nil {
				if e, ok := netpolicy.EndpointOf(to); ok {
					dst = &e
				}
			}
			c := netpolicy.Connection{From: &client, To: dst, FromIP: client.IP, ToIP: ap.Addr(), Protocol: strings.ToUpper(pe.protocol), Port: ap.Port()}
			v := netpolicy.Evaluate(ft.policies, nsLabels, c)
			note(v)
			what := t.addr + "/" + c.Protocol
			if t.pod != "" {
				what += " (" + t.pod + ")"
			}
			switch v.DroppedBy {
			case "egress":
				egressDenied = append(egressDenied, what)
			case "ingress":
				egressOK = append(egressOK, what)
				ingressDenied = append(ingressDenied, what)
				if ingress.Node == "" {
					ingress.Node = t.node // where it is dropped
				}
			default:
				egressOK = append(egressOK, what)
				ingressOK = append(ingressOK, what)
			}
		}
	}
	isolating := func(m map[string]bool) string { return strings.Join(sortedKeys(m), ", ") }
	switch {
	case len(egressDenied) > 0:
		egress.Status, egress.Reason = HopFailed, reasonNetworkPolicyDenied
		egress.Message = fmt.Sprintf("%s is isolated for egress by %s and no egress rule of theirs allows %s: the node drops it",
			pkey, isolating(isoEgress), strings.Join(egressDenied, ", "))
	case len(isoEgress) == 0:
		egress.Message = "not isolated for egress: no NetworkPolicy with policyTypes Egress selects the pod"
	default:
		egress.Message = "allowed by " + isolating(egressBy)
	}
	switch {
	case len(ingressDenied) > 0:
		ingress.Status, ingress.Reason = HopFailed, reasonNetworkPolicyDenied
		ingress.Message = fmt.Sprintf("%s: isolated for ingress by %s, and no ingress rule of theirs allows %s (%s) on that port: the endpoint's node drops it",
			strings.Join(ingressDenied, ", "), isolating(isoIngress), pkey, client.IP)
	case len(ingressOK) == 0:
		ingress.Status, ingress.Message = HopSkipped, "no ready endpoint to judge"
	case len(isoIngress) == 0:
		ingress.Message = "no NetworkPolicy with policyTypes Ingress selects the endpoints' pods"
	default:
		ingress.Message = "allowed by " + isolating(ingressBy)
	}
	if egress.Status == HopDone && len(egressOK) == 0 && len(egressDenied) == 0 && len(isoEgress) == 0 {
		egress.Message = "not isolated for egress"
	}
	return egress, ingress, dnsDenied
}

func sortedKeys(m map[string]bool) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}
